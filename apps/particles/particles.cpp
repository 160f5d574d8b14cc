// Ripple's particle update (ripple-tensors-graphs-scheduling §7.2): x += v dt over a 1-D
// tensor of particle records in AoS, SoA and AoSoA<16>, partitioned over CPU places and
// sim devices, one graph node per block (§5.3). Every layout on every place set must give
// the plain reference's positions bitwise (the values are exact in binary). Public API
// only; the kernel is apps/common/ripple_kernels.hpp's, shared with `bench ripple-particles`.
//
//   particles [--n N] [--steps S] [--places NAME]... [--strata-sim-devices=2]
//
// Exits 1 with a message for bad arguments, 2 when a result differs from the reference.
#include "cli.hpp"
#include "places.hpp"
#include "ripple_kernels.hpp"

#include <strata/strata.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

char const* const help =
    "usage: particles [options] [--strata-sim-devices=SPEC]\n"
    "  Ripple's particle update (x += v dt) on tensors of particle records in AoS, SoA and\n"
    "  AoSoA<16>, over CPU places and sim devices, checked bitwise against a plain loop.\n"
    "  --n N           particles (default 1000000)\n"
    "  --steps S       updates (default 10)\n"
    "  --places NAME   host, host:K, sim, host+sim (repeatable; default host, host:2 and,\n"
    "                  with sim devices, sim)\n"
    "  --help          this text\n";

apps::args const cli(help);

// Runs `steps` updates of n particles in layout L over `where`; prints one line; returns
// whether the positions equal the reference.
template <class L>
bool run(char const* layout, std::string const& name, std::vector<strata::place> const& where,
         strata::place const& host, strata::index_t n, int steps, std::vector<float> const& want) {
  strata::tensor<strata::records<apps::particle, L>, 1> t(
      where,
      strata::tensor_spec<1>{.extent = {n}, .partitions = {where.size()}, .sub_partitions = {2}});
  apps::particle_init(t, host);
  strata::graph g;
  g.split(apps::particle_push{}, t, apps::particle_dt);
  strata::run(g).wait();  // warm-up: first touch of the blocks
  auto const t0 = std::chrono::steady_clock::now();
  for (int s = 1; s < steps; ++s) strata::run(g).wait();
  double const secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bool const ok = apps::particle_positions(t, host) == want;
  double const per = steps > 1 ? secs / (steps - 1) : 0;
  std::printf("%-10s %-9s %10.3f %12.1f  %s\n", name.c_str(), layout, per * 1e3,
              per > 0 ? static_cast<double>(n) / per / 1e6 : 0.0, ok ? "ok" : "WRONG");
  return ok;
}

}  // namespace

namespace {

int app_main(int argc, char** argv) {
  strata::runtime rt(argc, argv);
  long long n = 1'000'000, steps = 10;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> char const* {
      if (i + 1 >= argc) cli.fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(help, stdout);
      return 0;
    } else if (arg == "--n") {
      n = cli.whole(arg, value(), 1);
    } else if (arg == "--steps") {
      steps = cli.whole(arg, value(), 1);
    } else if (arg == "--places") {
      names.emplace_back(value());
    } else {
      cli.fail("unknown argument '" + arg + "'");
    }
  }
  auto const machine = rt.machine();
  bool const sims =
      !machine.slice(strata::isa::sim).descendants(strata::place_type::device).empty();
  if (names.empty()) {
    names = {"host", "host:2"};
    if (machine.slice(strata::isa::host).processors().size() < 2) names.pop_back();
    if (sims) names.emplace_back("sim");
  }
  auto const host = machine.slice(strata::isa::host);
  auto const want = apps::particle_reference(n, static_cast<int>(steps));
  std::printf("particles: %lld particles of 24 bytes (position, velocity), %lld steps, dt 1/64\n",
              n, steps);
  std::printf("%-10s %-9s %10s %12s  %s\n", "places", "layout", "ms/step", "Mparticles/s", "check");
  bool ok = true;
  for (auto const& name : names) {
    std::vector<strata::place> where;
    if (name.rfind("host:", 0) == 0) {
      // "host:K": K PU places, one partition each. (places_named's K-PU slices hold no
      // NUMA node, so tensor blocks find no host memory near them.)
      auto pus = host.processors();
      auto const k = static_cast<std::size_t>(cli.whole("--places", name.c_str() + 5, 1));
      if (k > pus.size())
        cli.fail("--places " + name + ": " + std::to_string(pus.size()) + " host PUs only");
      where.assign(pus.begin(), pus.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      for (auto const& t : apps::places_named(machine, name)) where.push_back(t.where);
    }
    // Two blocks per place, a particle each at least (an outside probe: --n 1 failed
    // inside the tensor layer).
    if (n < 2 * static_cast<strata::index_t>(where.size()))
      cli.fail("--n " + std::to_string(n) + " for --places " + name + ": expected at least " +
               std::to_string(2 * where.size()) + " (two blocks per place)");
    auto const s = static_cast<int>(steps);
    ok &= run<strata::aos>("aos", name, where, host, n, s, want);
    ok &= run<strata::soa>("soa", name, where, host, n, s, want);
    ok &= run<strata::aosoa<16>>("aosoa16", name, where, host, n, s, want);
  }
  std::printf(ok ? "every layout and place gives the reference positions\n"
                 : "WRONG: some positions differ from the reference\n");
  return ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("particles", argc, argv, app_main);
}
