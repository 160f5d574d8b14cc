// Subcommands of the `strata` command line; each registers itself on the app.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

/// `strata info`: the place tree of this machine, as text or JSON.
void add_info_command(CLI::App& app);

/// `strata bench`: side-by-side benchmarks (built with OpenMP only: the peers need it).
void add_bench_command(CLI::App& app);

/// `strata report`: DIR/index.html with plots from `strata bench --json` output.
void add_report_command(CLI::App& app);

}  // namespace strata::cli
