// Subcommands of the `strata` command line; each registers itself on the app.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>

namespace strata::cli {

/// `strata info`: the place tree of this machine, as text or JSON.
void add_info_command(CLI::App& app);

/// `strata bench ...`: runs the program strata-bench with the same arguments (the
/// benchmarks and their peers live there, so that `strata` links none of them).
void add_bench_command(CLI::App& app);

/// strata-bench's options and action, on its own app (tools/strata/bench.cpp).
void configure_bench(CLI::App& app);

/// The strata-bench next to this program (build tree) or under libexec/strata (install);
/// throws strata::not_supported, naming both places, when there is none.
std::filesystem::path find_bench_program();

/// This program's own path (/proc/self/exe).
std::filesystem::path self_path();

/// `strata report`: DIR/index.html with plots from `strata bench --json` output.
void add_report_command(CLI::App& app);

/// Parses and runs `app`, turning errors into messages and exit codes: CLI11's for usage
/// errors, 1 for strata::error, 3 for anything else; 1 too when stdout cannot be written
/// (a full disk, a closed pipe), so that no output is lost silently.
int run(CLI::App& app, int argc, char** argv);

}  // namespace strata::cli
