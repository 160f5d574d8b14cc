// Toro's FORCE flux for the 2-D Euler equations (ripple-tensors-graphs-scheduling §7.3) on
// partitioned tensors of Euler-state records with padding: each step loads the padding
// and computes the flux on all four faces of every cell. Verified two ways, in single and
// double precision: Sod's shock tube along x and along y against the exact Riemann
// solution (Toro ch. 4; the L1 error of the density must fall with resolution), and a
// periodic domain on every layout whose mass and energy must stay constant to round-off.
// Public API only; kernels in apps/common/ripple_kernels.hpp, drivers in ripple_euler.hpp.
//
//   force [--sizes N,N,...] [--steps S] [--places NAME] [--strata-sim-devices=3]
//
// Exits 1 with a message for bad arguments, 2 when a check fails.
#include "cli.hpp"
#include "places.hpp"
#include "ripple_euler.hpp"

#include <strata/strata.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <type_traits>
#include <vector>

namespace {

char const* const help =
    "usage: force [options] [--strata-sim-devices=SPEC]\n"
    "  Toro's FORCE flux on 2-D Euler record tensors: the Sod shock tube along x and y\n"
    "  against the exact Riemann solution, and conservation on a periodic domain.\n"
    "  --sizes N,N,...  shock-tube resolutions (default 100,200,400,800)\n"
    "  --steps S        steps on the periodic 96 x 128 domain (default 20)\n"
    "  --places NAME    host, host:K, sim, host+sim (default sim if there are sim devices)\n"
    "  --help           this text\n";

apps::args const cli(help);

template <class T>
char const* precision() {
  return std::is_same_v<T, float> ? "float" : "double";
}

// The shock tube at every size along both axes; true when the L1 error falls each time.
template <class T>
bool sod(std::vector<strata::place> const& where, strata::place const& host,
         std::vector<long long> const& sizes) {
  bool ok = true;
  auto const blocks = static_cast<strata::index_t>(where.size());
  for (int axis : {0, 1}) {
    double last = 0;
    for (auto n : sizes) {
      auto const t0 = std::chrono::steady_clock::now();
      auto r = apps::run_sod<T, strata::soa>(where, host, n, axis, blocks);
      double const s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      bool const falls = last == 0 || r.l1_density < last;
      double const order = last == 0 ? 0 : std::log2(last / r.l1_density);
      std::printf("sod %-6s along %c  n %5lld  steps %5d  L1(rho) %.5f  order %5.2f  %6.2f s  %s\n",
                  precision<T>(), axis == 0 ? 'x' : 'y', n, r.steps, r.l1_density, order, s,
                  falls ? "ok" : "WRONG (error did not fall)");
      ok &= falls;
      last = r.l1_density;
    }
  }
  return ok;
}

// Mass and energy over `steps` periodic steps in layout L; true when both hold to `tol`.
template <class T, class L>
bool conserve(char const* layout, std::vector<strata::place> const& where,
              strata::place const& host, int steps) {
  double const tol = std::is_same_v<T, float> ? 2e-5 : 1e-12;
  auto const parts = static_cast<strata::index_t>(where.size());
  auto r = apps::run_periodic<T, L>(where, host, {96, 128}, {parts, 2}, steps);
  double const dm = std::abs(r.after.r / r.before.r - 1), de = std::abs(r.after.e / r.before.e - 1);
  bool const ok = dm <= tol && de <= tol;
  std::printf("periodic %-6s %-8s %d steps  |dmass|/mass %.2e  |denergy|/energy %.2e  %s\n",
              precision<T>(), layout, steps, dm, de, ok ? "ok" : "WRONG (not conserved)");
  return ok;
}

}  // namespace

namespace {

int app_main(int argc, char** argv) {
  strata::runtime rt(argc, argv);
  std::vector<long long> sizes{100, 200, 400, 800};
  long long steps = 20;
  std::string name;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) cli.fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(help, stdout);
      return 0;
    } else if (arg == "--sizes") {
      sizes.clear();
      std::string list = value();
      for (std::size_t at = 0; at <= list.size();) {
        auto comma = list.find(',', at);
        if (comma == std::string::npos) comma = list.size();
        sizes.push_back(cli.whole(arg, list.substr(at, comma - at), 8));
        at = comma + 1;
      }
    } else if (arg == "--steps") {
      steps = cli.whole(arg, value(), 1);
    } else if (arg == "--places") {
      name = value();
    } else {
      cli.fail("unknown argument '" + arg + "'");
    }
  }
  auto const machine = rt.machine();
  if (name.empty())
    name = machine.slice(strata::isa::sim).descendants(strata::place_type::device).empty() ? "host"
                                                                                           : "sim";
  std::vector<strata::place> where;
  for (auto const& t : apps::places_named(machine, name)) where.push_back(t.where);
  auto const host = machine.slice(strata::isa::host);
  std::printf("force: FORCE flux, gamma 1.4, padding 1, %zu block(s) on %s\n", where.size(),
              name.c_str());
  bool ok = true;
  ok &= sod<float>(where, host, sizes);
  ok &= sod<double>(where, host, sizes);
  auto const s = static_cast<int>(steps);
  ok &= conserve<float, strata::aos>("aos", where, host, s);
  ok &= conserve<float, strata::soa>("soa", where, host, s);
  ok &= conserve<float, strata::aosoa<16>>("aosoa16", where, host, s);
  ok &= conserve<double, strata::aos>("aos", where, host, s);
  ok &= conserve<double, strata::soa>("soa", where, host, s);
  ok &= conserve<double, strata::aosoa<16>>("aosoa16", where, host, s);
  std::printf(ok ? "every check passed\n" : "WRONG: a check failed\n");
  return ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("force", argc, argv, app_main);
}
