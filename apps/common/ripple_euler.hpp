// Drivers of the FORCE flux (ripple-tensors-graphs-scheduling §7.3) on partitioned tensors
// of Euler states: the Sod shock tube along x or y against the exact Riemann solution, and
// the periodic domain whose mass and energy must stay constant to round-off. Templates on
// the precision T and the record layout L; used by apps/force, tests/apps and bench/ripple.
#pragma once

#include "ripple_kernels.hpp"

#include <strata/strata.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <numbers>
#include <utility>
#include <vector>

namespace apps {

inline constexpr double euler_gamma = 1.4;

/// A 2-D Euler field on `places`: `extent` cells (rows = y, columns = x), padding 1,
/// partitioned into `parts` blocks, boundaries by `b` on both buffers.
template <class T, class L>
struct euler_field {
  using cell = strata::records<euler<T>, L>;
  strata::tensor<cell, 2> in, out;

  template <class B>
  euler_field(std::vector<strata::place> const& places, strata::vec<2> extent, strata::vec<2> parts,
              B const& b)
      : in(places, spec(extent, parts)), out(places, spec(extent, parts)) {
    strata::set_boundary(in, b);
    strata::set_boundary(out, b);
  }
  static strata::tensor_spec<2> spec(strata::vec<2> extent, strata::vec<2> parts) {
    return {.extent = extent,
            .partitions = {static_cast<std::size_t>(parts[0]), static_cast<std::size_t>(parts[1])},
            .padding = 1};
  }

  /// Sets every cell from primitive variables f(i, j) -> {rho, u, v, p}.
  template <class F>
  void set(strata::place const& host, F const& f) {
    auto const ext = in.extent();
    strata::record_array<euler<T>, strata::aos> a(host, ext.product());
    for (strata::index_t i = 0; i < ext[0]; ++i)
      for (strata::index_t j = 0; j < ext[1]; ++j) {
        auto const [rho, u, v, p] = f(i, j);
        conserved<T> c{T(rho),
                       {T(rho * u), T(rho * v)},
                       T(p / (euler_gamma - 1) + 0.5 * rho * (u * u + v * v))};
        store_state<T>(a[i * ext[1] + j], c);
      }
    strata::copy(in, a.view()).wait();
  }
  /// Every cell's conserved variables, row-major, in double.
  std::vector<conserved<double>> get(strata::place const& host) const;
  /// The largest signal speed over the field.
  T max_speed();
  /// One FORCE step of dt on cells of size h (in -> out, then the buffers swap).
  void step(T dt, T h);
};

// Defined outside the class, so not inline: the explicit instantiation declarations at the
// end of this file then keep every other translation unit from compiling them again.
template <class T, class L>
std::vector<conserved<double>> euler_field<T, L>::get(strata::place const& host) const {
  auto const n = in.extent().product();
  strata::record_array<euler<T>, strata::aos> a(host, n);
  strata::copy(a.view(), in).wait();
  std::vector<conserved<double>> u(static_cast<std::size_t>(n));
  for (strata::index_t k = 0; k < n; ++k) {
    auto const c = load_state<T>(a[k]);
    u[static_cast<std::size_t>(k)] = {c.r, {c.m[0], c.m[1]}, c.e};
  }
  return u;
}
template <class T, class L>
T euler_field<T, L>::max_speed() {
  return strata::transform_reduce(in, T(0), strata::reduce_max{},
                                  cell_wavespeed<T>{T(euler_gamma)});
}
template <class T, class L>
void euler_field<T, L>::step(T dt, T h) {
  strata::for_each_cell_and_wait(force_step{}, strata::concurrent_padded_access(in), out, dt / h,
                                 dt / h, T(euler_gamma));
  std::swap(in, out);
}

/// What a shock-tube run gives: the L1 error of the density against the exact solution,
/// the steps taken, and the total mass before and after (transmissive ends: equal while no
/// wave has reached them).
struct sod_result {
  double l1_density = 0;
  int steps = 0;
  double mass0 = 0, mass1 = 0;
};

/// Sod's shock tube (Toro §4.3.3 test 1: (1, 0, 1) | (0.125, 0, 0.1) at x = 0.5) on n
/// cells along `axis` (0: x, the contiguous dimension; 1: y) and 4 across, to t = 0.2
/// at CFL `cfl`, blocks `blocks` along the axis over `places`.
template <class T, class L>
sod_result run_sod(std::vector<strata::place> const& places, strata::place const& host,
                   strata::index_t n, int axis, strata::index_t blocks = 1, double cfl = 0.4) {
  strata::index_t const across = 4;
  strata::vec<2> const extent = axis == 0 ? strata::vec<2>{across, n} : strata::vec<2>{n, across};
  strata::vec<2> const parts = axis == 0 ? strata::vec<2>{1, blocks} : strata::vec<2>{blocks, 1};
  euler_field<T, L> f(places, extent, parts, strata::boundary::copy{});
  primitive const left{1, 0, 1}, right{0.125, 0, 0.1};
  double const h = 1.0 / static_cast<double>(n);
  auto along = [axis](strata::index_t i, strata::index_t j) { return axis == 0 ? j : i; };
  f.set(host, [&](strata::index_t i, strata::index_t j) {
    double const x = (static_cast<double>(along(i, j)) + 0.5) * h;
    auto const w = x < 0.5 ? left : right;
    return axis == 0 ? std::array<double, 4>{w.rho, w.u, 0, w.p}
                     : std::array<double, 4>{w.rho, 0, w.u, w.p};
  });
  sod_result r;
  for (auto const& u : f.get(host)) r.mass0 += u.r;
  double const t_end = 0.2;
  double t = 0;
  while (t < t_end) {
    double dt = cfl * h / static_cast<double>(f.max_speed());
    if (t + dt > t_end) dt = t_end - t;
    f.step(T(dt), T(h));
    t += dt;
    ++r.steps;
  }
  auto const u = f.get(host);
  for (strata::index_t i = 0; i < extent[0]; ++i)
    for (strata::index_t j = 0; j < extent[1]; ++j) {
      double const x = (static_cast<double>(along(i, j)) + 0.5) * h;
      auto const exact = exact_riemann(left, right, euler_gamma, (x - 0.5) / t_end);
      auto const& c = u[static_cast<std::size_t>(i * extent[1] + j)];
      r.l1_density += std::abs(c.r - exact.rho) * h / static_cast<double>(across);
      r.mass1 += c.r;
    }
  return r;
}

/// Totals of a periodic run: mass and energy (and momenta) before and after.
struct periodic_result {
  conserved<double> before{}, after{};
};

/// `steps` FORCE steps on a periodic rows x cols domain of smooth data (a density and
/// pressure wave with a diagonal flow), partitioned `parts` over `places`.
template <class T, class L>
periodic_result run_periodic(std::vector<strata::place> const& places, strata::place const& host,
                             strata::vec<2> extent, strata::vec<2> parts, int steps) {
  euler_field<T, L> f(places, extent, parts, strata::boundary::periodic{});
  double const pi2 = 2 * std::numbers::pi;
  f.set(host, [&](strata::index_t i, strata::index_t j) {
    double const y = (static_cast<double>(i) + 0.5) / static_cast<double>(extent[0]);
    double const x = (static_cast<double>(j) + 0.5) / static_cast<double>(extent[1]);
    return std::array<double, 4>{1 + 0.3 * std::sin(pi2 * x) * std::cos(pi2 * y), 0.5, -0.25,
                                 1 + 0.2 * std::cos(pi2 * (x + y))};
  });
  auto total = [&] {
    conserved<double> s{};
    for (auto const& u : f.get(host)) {
      s.r += u.r;
      s.m[0] += u.m[0];
      s.m[1] += u.m[1];
      s.e += u.e;
    }
    return s;
  };
  periodic_result r;
  r.before = total();
  double const h = 1.0 / static_cast<double>(extent[1] > extent[0] ? extent[1] : extent[0]);
  for (int s = 0; s < steps; ++s) f.step(T(0.2 * h / static_cast<double>(f.max_speed())), T(h));
  r.after = total();
  return r;
}

// The instances the apps, their tests and benchmarks use, compiled once in
// apps/common/euler_{aos,soa,aosoa}.cpp: each of force.cpp, tests/apps/ripple_test.cpp and
// bench/ripple/strata.cpp took about a minute compiling them for itself.
#define APPS_EULER_INSTANCES(KIND, T, L)                                                          \
  KIND template struct euler_field<T, L>;                                                         \
  KIND template sod_result run_sod<T, L>(std::vector<strata::place> const&, strata::place const&, \
                                         strata::index_t, int, strata::index_t, double);          \
  KIND template periodic_result run_periodic<T, L>(std::vector<strata::place> const&,             \
                                                   strata::place const&, strata::vec<2>,          \
                                                   strata::vec<2>, int);
#define APPS_EULER_LAYOUTS(KIND, L) \
  APPS_EULER_INSTANCES(KIND, float, L) APPS_EULER_INSTANCES(KIND, double, L)
APPS_EULER_LAYOUTS(extern, strata::aos)
APPS_EULER_LAYOUTS(extern, strata::soa)
APPS_EULER_LAYOUTS(extern, strata::aosoa<16>)

}  // namespace apps
