// The Eikonal equation by the Fast Iterative Method (ripple-tensors-graphs-scheduling §7.4):
// f = 1, one source at the centre, a band of 5 or 10 cells, 2-D or 3-D, single and
// double precision, on partitioned tensors of {value, state} records in AoS, SoA and
// AoSoA<16> over CPU places and sim devices. Each solve is one graph (two FIM iterations
// with padded access, then a reduction of the active flags) re-run while a cell is active.
// Verified against the exact distance |x - c| h within the first-order scheme's bound
// (apps::eikonal_error_bound), every layout and place giving the same field, and the error
// falling under refinement at a fixed band radius. Public API only; the kernels and the
// solver are apps/common/ripple_eikonal.hpp, shared with `strata bench ripple-eikonal`.
//
//   eikonal [--dims 2|3] [--size N] [--band B]... [--float|--double] [--places NAME]...
//           [--no-refine] [--strata-sim-devices=2]
//
// Exits 1 with a message for bad arguments, 2 when a check fails.
#include "cli.hpp"
#include "places.hpp"
#include "ripple_eikonal.hpp"

#include <strata/strata.hpp>

#include <algorithm>
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
    "usage: eikonal [options] [--strata-sim-devices=SPEC]\n"
    "  The Eikonal equation (f = 1, a point source at the centre) by the Fast Iterative\n"
    "  Method on tensors of {value, state} records in AoS, SoA and AoSoA<16>, checked\n"
    "  against the exact distance.\n"
    "  --dims D        2 or 3 (default 2)\n"
    "  --size N        cells per side (default 256 in 2-D, 64 in 3-D)\n"
    "  --band B        band around the source, in cells (repeatable; default 5 and 10)\n"
    "  --float         single precision only (default: both)\n"
    "  --double        double precision only\n"
    "  --places NAME   host, host:K, sim, host+sim (repeatable; default host and, with sim\n"
    "                  devices, sim)\n"
    "  --no-refine     skip the refinement study (band 1/4 of the domain at N/4, N/2, N\n          "
    "        of at least 32 cells)\n"
    "  --help          this text\n";

apps::args const cli(help);

template <class T>
char const* precision() {
  return std::is_same_v<T, float> ? "float" : "double";
}

template <std::size_t N>
strata::vec<N> cube(strata::index_t n) {
  strata::vec<N> v{};
  for (std::size_t d = 0; d < N; ++d) v[d] = n;
  return v;
}

// Blocks: two along each of the first two dimensions per place set (halos in two
// dimensions even on one place), more along dimension 0 when there are more places.
template <std::size_t N>
strata::vec<N> blocks_for(std::size_t places) {
  strata::vec<N> p = cube<N>(1);
  p[0] = static_cast<strata::index_t>(std::max<std::size_t>(2, places));
  p[1] = 2;
  return p;
}

struct run_result {
  std::vector<double> values;
  bool ok = false;
};

// One solve in layout L over `where`; prints one line.
template <class T, class L, std::size_t N>
run_result solve(char const* layout, std::string const& name,
                 std::vector<strata::place> const& where, strata::place const& host,
                 strata::index_t n, double band) {
  apps::eikonal_solver<T, L, N> s(where, cube<N>(n), blocks_for<N>(where.size()), band);
  s.reset();
  int const limit = static_cast<int>(64 * band) + 64;
  auto const t0 = std::chrono::steady_clock::now();
  int const iterations = s.solve(limit);
  double const secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run_result r;
  r.values = s.values(host);
  double const round_off = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  auto const c =
      apps::check_eikonal<N>(r.values, s.extent(), static_cast<double>(s.h()), band, round_off);
  r.ok = c.ok() && s.converged();
  std::printf("%-9s %-8s %-6s %5.0f %6d %9lld %10.4f %8.4f %9.3f  %s\n", name.c_str(), layout,
              precision<T>(), band, iterations, static_cast<long long>(c.reached),
              c.max_error_cells, c.bound_cells, secs * 1e3,
              !s.converged() ? "WRONG (not converged)"
              : c.missed     ? "WRONG (cells inside the band not reached)"
              : c.outside    ? "WRONG (values beyond the band)"
              : c.below      ? "WRONG (values below the exact distance)"
              : !c.ok()      ? "WRONG (error above the bound)"
                             : "ok");
  return r;
}

// Every layout and place set at one precision and band; true when every run passes and
// every field equals the first (same Jacobi iterates whatever the blocks: the
// differences can only be the compiler's contraction of a*b+c in vector vs scalar code).
template <class T, std::size_t N>
bool all_runs(std::vector<std::string> const& names, strata::place const& machine,
              strata::place const& host, strata::index_t n, double band) {
  bool ok = true;
  std::vector<double> first;
  double diff = 0;
  auto keep = [&](run_result const& r) {
    ok &= r.ok;
    if (first.empty()) {
      first = r.values;
      return;
    }
    for (std::size_t k = 0; k < first.size(); ++k)
      if (std::isfinite(first[k]) != std::isfinite(r.values[k]))
        diff = INFINITY;
      else if (std::isfinite(first[k]))
        diff = std::max(diff, std::abs(first[k] - r.values[k]));
  };
  for (auto const& name : names) {
    std::vector<strata::place> where;
    for (auto const& t : apps::places_named(machine, name)) where.push_back(t.where);
    keep(solve<T, strata::aos, N>("aos", name, where, host, n, band));
    keep(solve<T, strata::soa, N>("soa", name, where, host, n, band));
    keep(solve<T, strata::aosoa<16>, N>("aosoa16", name, where, host, n, band));
  }
  double const tol = (std::is_same_v<T, float> ? 1e-6 : 1e-14) * band / static_cast<double>(n);
  bool const same = diff <= tol;
  std::printf("  %s band %g: every layout and place %s (max difference %.1e)\n", precision<T>(),
              band, same ? "gives the same field" : "WRONG: fields differ", diff);
  return ok && same;
}

// The error at a fixed band radius (1/4 of the domain) under refinement: O(h log(1/h)) for
// a point source, so each halving of h must lower it by a factor a little under 2: an
// observed order log2(e(2h) / e(h)) of at least 0.5 (h log(1/h) gives 0.6-0.8 at these
// sizes, rising towards 1).
template <std::size_t N>
bool refine(std::vector<strata::place> const& where, strata::place const& host, strata::index_t n) {
  bool ok = true;
  double last = 0;
  std::printf("refinement in double, band radius 1/4 (%s):\n", N == 2 ? "2-D" : "3-D");
  for (strata::index_t m : {n / 4, n / 2, n}) {
    if (m < 32) continue;  // a band under 8 cells is short of the asymptotic regime
    double const band = static_cast<double>(m) / 4;
    apps::eikonal_solver<double, strata::soa, N> s(where, cube<N>(m), blocks_for<N>(where.size()),
                                                   band);
    s.reset();
    int const iterations = s.solve(static_cast<int>(64 * band) + 64);
    auto const c = apps::check_eikonal<N>(s.values(host), s.extent(), s.h(), band, 1e-12);
    double const order = last == 0 ? 0 : std::log2(last / c.max_error);
    bool const falls = last == 0 || order >= 0.5;
    bool const good = falls && c.ok() && s.converged();
    std::printf(
        "  n %5lld  band %5.0f  iterations %5d  max error %.3e  (%.3f h, bound %.3f h)"
        "  order %5.2f  %s\n",
        static_cast<long long>(m), band, iterations, c.max_error, c.max_error_cells, c.bound_cells,
        order, good ? "ok" : "WRONG");
    ok &= good;
    last = c.max_error;
  }
  return ok;
}

template <std::size_t N>
bool run_dims(std::vector<std::string> const& names, strata::place const& machine,
              strata::index_t n, std::vector<double> const& bands, bool single, bool dbl,
              bool refinement) {
  auto const host = machine.slice(strata::isa::host);
  std::printf("%-9s %-8s %-6s %5s %6s %9s %10s %8s %9s  %s\n", "places", "layout", "prec", "band",
              "iters", "reached", "max err/h", "bound/h", "ms", "check");
  bool ok = true;
  for (double band : bands) {
    if (single) ok &= all_runs<float, N>(names, machine, host, n, band);
    if (dbl) ok &= all_runs<double, N>(names, machine, host, n, band);
  }
  if (refinement) {
    std::vector<strata::place> where;
    for (auto const& t : apps::places_named(machine, names.front())) where.push_back(t.where);
    ok &= refine<N>(where, host, n);
  }
  return ok;
}

}  // namespace

namespace {

int app_main(int argc, char** argv) {
  strata::runtime rt(argc, argv);
  long long dims = 2, size = 0;
  std::vector<double> bands;
  bool single = true, dbl = true, refinement = true;
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
    } else if (arg == "--dims") {
      dims = cli.whole(arg, value(), 2, 3);
    } else if (arg == "--size") {
      size = cli.whole(arg, value(), 4, 1 << 20);
    } else if (arg == "--band") {
      bands.push_back(static_cast<double>(cli.whole(arg, value(), 1, 1 << 20)));
    } else if (arg == "--float") {
      dbl = false;
    } else if (arg == "--double") {
      single = false;
    } else if (arg == "--places") {
      names.emplace_back(value());
    } else if (arg == "--no-refine") {
      refinement = false;
    } else {
      cli.fail("unknown argument '" + arg + "'");
    }
  }
  if (!single && !dbl) cli.fail("--float and --double exclude each other");
  if (bands.empty()) bands = {5, 10};
  if (size == 0) size = dims == 2 ? 256 : 64;
  auto const machine = rt.machine();
  if (names.empty()) {
    names = {"host"};
    if (!machine.slice(strata::isa::sim).descendants(strata::place_type::device).empty())
      names.emplace_back("sim");
  }
  std::printf(
      "eikonal: Fast Iterative Method, f = 1, source at the centre, %lld-D, %lld^%lld "
      "cells, h = 1/%lld\n",
      dims, size, dims, size);
  bool const ok = dims == 2 ? run_dims<2>(names, machine, size, bands, single, dbl, refinement)
                            : run_dims<3>(names, machine, size, bands, single, dbl, refinement);
  std::printf(ok ? "every check passed\n" : "WRONG: a check failed\n");
  return ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("eikonal", argc, argv, app_main);
}
