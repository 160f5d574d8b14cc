// Subcommands of the `strata` command line; each registers itself on the app.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::cli {

/// `strata info`: the place tree of this machine, as text or JSON.
void add_info_command(CLI::App& app);

}  // namespace strata::cli
