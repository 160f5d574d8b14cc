// A tour of the place tree (Phalanx §III-A): where the processors are, which memories
// each one sees nearest first, and how far apart places are. Public API only.
#include <strata/strata.hpp>

#include "cli.hpp"

#include <cstdio>
#include <exception>

namespace {
apps::args const cli(
    "usage: machine_tour [--strata-sim-devices=LIST] [--strata-topology=SOURCE]\n  the place tree: "
    "processors, their nearest memories, distances");
}  // namespace

namespace {

int app_main(int argc, char** argv) {
  strata::runtime rt(argc, argv);  // takes --strata-sim-devices=... and friends
  if (cli.no_options(argc, argv)) return 0;
  strata::place machine = rt.machine();

  auto cpus = machine.slice(strata::isa::host);
  auto sims = machine.slice(strata::isa::sim);
  auto rams = machine.slice(strata::place_kind::memory);
  std::printf("%zu host processors, %zu sim processors, %zu memories\n", cpus.processors().size(),
              sims.processors().size(), rams.memories().size());

  std::printf("\nmemories seen from each processor, nearest first:\n");
  for (auto const& p : machine.processors()) {
    std::printf("  %-14s", p.name().c_str());
    for (auto const& m : p.memories_above())
      std::printf("  %s (%s, %u hops)", m.name().c_str(),
                  strata::format_bytes(m.capacity()).c_str(), p.distance(m));
    std::printf("\n");
  }

  auto procs = machine.processors();
  if (procs.size() >= 2) {
    auto const& a = procs.front();
    auto const& b = procs.back();
    std::printf("\n%s and %s meet at %s, %u hops apart\n", a.name().c_str(), b.name().c_str(),
                a.common_ancestor(b).name().c_str(), a.distance(b));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("machine_tour", argc, argv, app_main);
}
