// The `strata` command line: `strata info`, `strata bench`, `strata report`.
#include "commands.hpp"

#include <strata/config.hpp>
#include <strata/error.hpp>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) {
  CLI::App app{"Strata: one programming model for a heterogeneous machine"};
  app.set_version_flag("--version", strata::version());
  app.require_subcommand(1);
  strata::cli::add_info_command(app);
#if STRATA_HAVE_BENCH
  strata::cli::add_bench_command(app);
#endif
  strata::cli::add_report_command(app);
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    return app.exit(e);
  } catch (strata::error const& e) {
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 1;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "strata: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
