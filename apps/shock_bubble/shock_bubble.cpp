// Ripple's 2-D Euler benchmark problem (ripple-tensors-graphs-scheduling §8, Figure 11):
// a Mach 3.81 shock hitting a low-density bubble, FORCE fluxes on record tensors split in
// y over the chosen places, one graph per time step built as Listing 12 is. Checks
// the mass against what the inflow edge let in and the symmetry about the bubble's axis,
// and writes a schlieren picture of the density (PNG, libpng) at the end and optionally
// every k steps. Public API only; the solver is apps/common/shock_bubble.hpp.
//
//   shock_bubble [--rows N] [--steps S] [--places NAME] [--float] [--png FILE]
//                [--every K] [--strata-sim-devices=SPEC]
//
// Exits 1 with a message for bad arguments, 2 when a check fails.
#include "shock_bubble.hpp"
#include "cli.hpp"
#include "places.hpp"

#include <strata/strata.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <type_traits>
#include <vector>

namespace {

char const* const help =
    "usage: shock_bubble [options] [--strata-sim-devices=SPEC]\n"
    "  A Mach 3.81 shock hitting a low-density bubble (2-D Euler, FORCE fluxes), the domain\n"
    "  split in y over the places; checks mass and symmetry; writes a schlieren PNG.\n"
    "  --rows N       cells in y, at least 24 (x has 2N; default 200)\n"
    "  --steps S      time steps (default 200)\n"
    "  --places NAME  host, host:K, sim, host+sim (default sim if there are sim devices)\n"
    "  --float        single precision (default double)\n"
    "  --closed       walls on all four sides (mass then conserved to round-off)\n"
    "  --png FILE     the picture at the end (default: none)\n"
    "  --every K      also FILE-<step>.png every K steps\n"
    "  --help         this text\n";

apps::args const cli(help);

struct options {
  long long rows = 200, steps = 200, every = 0;
  std::string places, png;
  bool single = false, closed = false;
};

template <class T>
int solve(options const& o, std::vector<strata::place> const& where, strata::place const& host) {
  auto const rows = static_cast<strata::index_t>(o.rows);
  apps::shock_bubble<T, strata::aos> s(where, host, rows,
                                       static_cast<strata::index_t>(where.size()), o.closed);
  double const mass0 = apps::total_mass(s.state(host));
  auto stem =
      o.png.size() > 4 && o.png.ends_with(".png") ? o.png.substr(0, o.png.size() - 4) : o.png;
  auto const t0 = std::chrono::steady_clock::now();
  double compute = 0;
  for (long long done = 0; done < o.steps;) {
    long long const chunk = o.every > 0 ? std::min(o.every, o.steps - done) : o.steps - done;
    auto const c0 = std::chrono::steady_clock::now();
    s.run(static_cast<int>(chunk));
    compute += std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
    done += chunk;
    if (o.every > 0 && !o.png.empty() && done < o.steps)
      apps::write_png(stem + "-" + std::to_string(s.steps()) + ".png",
                      apps::schlieren(s.state(host), rows, 2 * rows));
  }
  (void)t0;
  auto const u = s.state(host);
  auto const c = apps::check_shock_bubble(u, rows, mass0, s.time(), o.closed);
  // Closed: round-off (float sums of ~1e4 cells). Outflow: the scheme's upstream diffusion
  // of the initial shock at the inflow edge (see check_shock_bubble).
  double const tol_mass = !o.closed ? 1e-3 : std::is_same_v<T, float> ? 1e-5 : 1e-12;
  double const tol_sym = std::is_same_v<T, float> ? 1e-4 : 1e-12;
  bool const mass_ok = c.mass_error <= tol_mass, sym_ok = c.asymmetry <= tol_sym;
  std::printf("%d steps to t = %.5f in %.3f s (%.2f Mcell-steps/s)\n", s.steps(), s.time(), compute,
              static_cast<double>(rows * 2 * rows) * s.steps() / compute / 1e6);
  std::printf("mass %.10g -> %.10g, inflow %.10g: error %.2e  %s\n", c.mass0, c.mass, c.inflow,
              c.mass_error,
              !c.shock_inside ? "(not checked: the shock has left the domain)"
              : mass_ok       ? "ok"
                              : "WRONG (mass not conserved)");
  std::printf("asymmetry about y = 0.5: %.2e  %s\n", c.asymmetry,
              sym_ok ? "ok" : "WRONG (not symmetric)");
  if (!o.png.empty()) {
    apps::write_png(o.png, apps::schlieren(u, rows, 2 * rows));
    std::printf("wrote %s (%lld x %lld)\n", o.png.c_str(), 2 * o.rows, o.rows);
  }
  return (mass_ok || !c.shock_inside) && sym_ok ? 0 : 2;
}

}  // namespace

namespace {

int app_main(int argc, char** argv) {
  strata::runtime rt(argc, argv);
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) cli.fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(help, stdout);
      return 0;
    } else if (arg == "--rows") {
      // At least 24: the outflow check's inflow model holds once the initial shock's
      // upstream diffusion stays clear of the inflow edge (an outside probe: rows 8 and
      // 16 reported WRONG on correct runs, mass error 1.2e-3 against 1e-3).
      o.rows = cli.whole(arg, value(), 24);
    } else if (arg == "--steps") {
      o.steps = cli.whole(arg, value(), 1);
    } else if (arg == "--every") {
      o.every = cli.whole(arg, value(), 1);
    } else if (arg == "--places") {
      o.places = value();
    } else if (arg == "--png") {
      o.png = value();
    } else if (arg == "--float") {
      o.single = true;
    } else if (arg == "--closed") {
      o.closed = true;
    } else {
      cli.fail("unknown argument '" + arg + "'");
    }
  }
  auto const machine = rt.machine();
  if (o.places.empty())
    o.places = machine.slice(strata::isa::sim).descendants(strata::place_type::device).empty()
                   ? "host"
                   : "sim";
  std::vector<strata::place> where;
  for (auto const& t : apps::places_named(machine, o.places)) where.push_back(t.where);
  if (static_cast<long long>(where.size()) > o.rows)
    cli.fail("--rows " + std::to_string(o.rows) + " is fewer than the " +
             std::to_string(where.size()) + " places; expected at least one row per place");
  auto const host = machine.slice(strata::isa::host);
  std::printf(
      "shock_bubble: Mach %.2f shock, bubble rho %.1f, %lld x %lld cells (%s, %s), %zu "
      "block(s) on %s\n",
      apps::shock_bubble_setup::mach, apps::shock_bubble_setup::bubble_rho, 2 * o.rows, o.rows,
      o.single ? "float" : "double", o.closed ? "closed box" : "outflow in x", where.size(),
      o.places.c_str());
  return o.single ? solve<float>(o, where, host) : solve<double>(o, where, host);
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("shock_bubble", argc, argv, app_main);
}
