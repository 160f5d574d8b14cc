// strata-bench: Strata's benchmarks against their peers (bench/), as `strata bench ...`
// runs them (docs/bench.md). A program of its own so that `strata` links no peer.
#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Strata's benchmarks, each against its peer, side by side (docs/bench.md)",
               "strata bench"};
  strata::cli::configure_bench(app);
  return strata::cli::run(app, argc, argv);
}
