// Ripple's fine-grained benchmarks as applications (ripple-tensors-graphs-scheduling §7):
// the particle update (§7.2, x += v dt on tensors of particle records) and the 2-D flux
// difference by Toro's FORCE scheme (§7.3, Euler states with padding, the flux on all four
// faces of every cell). One kernel source each serves every record layout (AoS, SoA,
// AoSoA) and every place (host PUs, sim devices; STRATA_FN, so CUDA too). Shared by the
// apps (apps/particles, apps/force), bench/ripple and tests/apps.
#pragma once

#include <strata/strata.hpp>

#include <cmath>
#include <cstddef>
#include <vector>

namespace apps {

// ---------------------------------------------------------------- particles (§7.2)

/// Ripple's Particle: a 3-D position and velocity (24 bytes in single precision).
struct particle {
  struct position : strata::field<float, 3> {};
  struct velocity : strata::field<float, 3> {};
  using fields = strata::fields<position, velocity>;
};

/// Ripple's `update(dt)`: x += v dt, components written out (docs/records.md: GCC does
/// not vectorize a loop around an inner component loop).
struct particle_push {
  template <class It>
  STRATA_FN void operator()(It& it, float dt) const {
    auto p = *it;
    auto x = p[particle::position{}];
    auto v = p[particle::velocity{}];
    x[0] += v[0] * dt;
    x[1] += v[1] * dt;
    x[2] += v[2] * dt;
  }
};

// Initial values exact in binary, with dt = 1/64: every sum stays exact for the step
// counts the apps use, so results are bitwise comparable whatever the compiler contracts
// (FMA or not) and whatever the layout or place.
inline float particle_x0(strata::index_t i, int d) {
  return static_cast<float>(i % 1024) + 0.25f * static_cast<float>(d);
}
inline float particle_v0(strata::index_t i, int d) {
  return static_cast<float>((i + d) % 7) - 3.0f;
}
inline constexpr float particle_dt = 1.0f / 64;

/// Sets every particle of t to the initial values (through a host AoS record array).
template <class L>
void particle_init(strata::tensor<strata::records<particle, L>, 1> const& t,
                   strata::place const& host) {
  auto const n = t.extent()[0];
  strata::record_array<particle, strata::aos> a(host, n);
  for (strata::index_t i = 0; i < n; ++i) {
    auto r = a[i];
    for (int d = 0; d < 3; ++d) {
      r[particle::position{}][static_cast<std::size_t>(d)] = particle_x0(i, d);
      r[particle::velocity{}][static_cast<std::size_t>(d)] = particle_v0(i, d);
    }
  }
  strata::copy(t, a.view()).wait();
}

/// The positions of t, component-major (3 * n floats), on the host.
template <class L>
std::vector<float> particle_positions(strata::tensor<strata::records<particle, L>, 1> const& t,
                                      strata::place const& host) {
  auto const n = t.extent()[0];
  strata::record_array<particle, strata::soa> a(host, n);
  strata::copy(a.view(), t).wait();
  std::vector<float> x(3 * static_cast<std::size_t>(n));
  for (strata::index_t i = 0; i < n; ++i)
    for (std::size_t d = 0; d < 3; ++d)
      x[d * static_cast<std::size_t>(n) + static_cast<std::size_t>(i)] =
          a[i][particle::position{}][d];
  return x;
}

/// The plain reference: `steps` updates on plain arrays, component-major positions.
inline std::vector<float> particle_reference(strata::index_t n, int steps) {
  std::vector<float> x(3 * static_cast<std::size_t>(n));
  for (strata::index_t i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) {
      float xi = particle_x0(i, d);
      float const vi = particle_v0(i, d);
      for (int s = 0; s < steps; ++s) xi += vi * particle_dt;
      x[static_cast<std::size_t>(d * n + i)] = xi;
    }
  return x;
}

// ---------------------------------------------------------------- FORCE flux (§7.3)

/// Ripple's State for the 2-D Euler equations: conserved density, momentum (x, y) and
/// total energy, in precision T. Tensor dimension 1 (contiguous) is x, dimension 0 is y.
template <class T>
struct euler {
  struct density : strata::field<T> {};
  struct momentum : strata::field<T, 2> {};
  struct energy : strata::field<T> {};
  using fields = strata::fields<density, momentum, energy>;
};

/// A state's conserved variables in registers.
template <class T>
struct conserved {
  T r, m[2], e;
};

template <class T, class Ref>
STRATA_FN conserved<T> load_state(Ref c) {
  using D = euler<T>;
  auto m = c[typename D::momentum{}];
  return {c[typename D::density{}], {m[0], m[1]}, c[typename D::energy{}]};
}

template <class T, class Ref>
STRATA_FN void store_state(Ref c, conserved<T> const& u) {
  using D = euler<T>;
  c[typename D::density{}] = u.r;
  auto m = c[typename D::momentum{}];
  m[0] = u.m[0];
  m[1] = u.m[1];
  c[typename D::energy{}] = u.e;
}

/// The Euler flux of u along axis a (0: x, 1: y) for an ideal gas of ratio `gamma`.
template <int A, class T>
STRATA_FN conserved<T> euler_flux(conserved<T> const& u, T gamma) {
  T const un = u.m[A] / u.r;
  T const p = (gamma - T(1)) * (u.e - T(0.5) * (u.m[0] * u.m[0] + u.m[1] * u.m[1]) / u.r);
  conserved<T> f;
  f.r = u.m[A];
  f.m[A] = u.m[A] * un + p;
  f.m[1 - A] = u.m[1 - A] * un;
  f.e = un * (u.e + p);
  return f;
}

/// Toro's FORCE flux between left state l and right state r along axis A (Toro, Riemann
/// Solvers and Numerical Methods, §7.4.2): the mean of the Lax-Friedrichs flux and the
/// flux of the two-step Lax-Wendroff (Richtmyer) state; `dt_dh` is dt over the spacing.
template <int A, class T>
STRATA_FN conserved<T> force_flux(conserved<T> const& l, conserved<T> const& r, T dt_dh, T gamma) {
  auto const fl = euler_flux<A>(l, gamma);
  auto const fr = euler_flux<A>(r, gamma);
  T const half = T(0.5), lf_k = T(0.5) / dt_dh, ri_k = T(0.5) * dt_dh;
  conserved<T> ri;  // the Richtmyer state
  ri.r = half * (l.r + r.r) - ri_k * (fr.r - fl.r);
  ri.m[0] = half * (l.m[0] + r.m[0]) - ri_k * (fr.m[0] - fl.m[0]);
  ri.m[1] = half * (l.m[1] + r.m[1]) - ri_k * (fr.m[1] - fl.m[1]);
  ri.e = half * (l.e + r.e) - ri_k * (fr.e - fl.e);
  auto const fri = euler_flux<A>(ri, gamma);
  conserved<T> f;  // (F_LF + F_RI) / 2, F_LF = (fl + fr) / 2 + (l - r) / (2 dt/dh)
  f.r = half * (half * (fl.r + fr.r) + lf_k * (l.r - r.r) + fri.r);
  f.m[0] = half * (half * (fl.m[0] + fr.m[0]) + lf_k * (l.m[0] - r.m[0]) + fri.m[0]);
  f.m[1] = half * (half * (fl.m[1] + fr.m[1]) + lf_k * (l.m[1] - r.m[1]) + fri.m[1]);
  f.e = half * (half * (fl.e + fr.e) + lf_k * (l.e - r.e) + fri.e);
  return f;
}

/// One unsplit time step of the flux difference (§7.3): for every cell the FORCE flux on
/// its four faces, out = in - dt/dx (F_e - F_w) - dt/dy (G_n - G_s). `in` needs padding 1
/// (loaded); each face flux is computed by both its cells, from the same operands in the
/// same order, so the differences telescope to round-off over a periodic domain.
struct force_step {
  template <class In, class Out, class T>
  STRATA_FN void operator()(In& in, Out& out, T dt_dx, T dt_dy, T gamma) const {
    auto const c = load_state<T>(*in);
    auto const w = load_state<T>(*in.offset(1, -1));
    auto const e = load_state<T>(*in.offset(1, 1));
    auto const s = load_state<T>(*in.offset(0, -1));
    auto const n = load_state<T>(*in.offset(0, 1));
    auto const fw = force_flux<0>(w, c, dt_dx, gamma);
    auto const fe = force_flux<0>(c, e, dt_dx, gamma);
    auto const gs = force_flux<1>(s, c, dt_dy, gamma);
    auto const gn = force_flux<1>(c, n, dt_dy, gamma);
    conserved<T> u;
    u.r = c.r - dt_dx * (fe.r - fw.r) - dt_dy * (gn.r - gs.r);
    u.m[0] = c.m[0] - dt_dx * (fe.m[0] - fw.m[0]) - dt_dy * (gn.m[0] - gs.m[0]);
    u.m[1] = c.m[1] - dt_dx * (fe.m[1] - fw.m[1]) - dt_dy * (gn.m[1] - gs.m[1]);
    u.e = c.e - dt_dx * (fe.e - fw.e) - dt_dy * (gn.e - gs.e);
    store_state<T>(*out, u);
  }
};

/// The largest signal speed |u| + c, |v| + c of a state (for the CFL time step).
template <class T>
STRATA_FN T signal_speed(conserved<T> const& u, T gamma) {
  T const ux = u.m[0] / u.r, uy = u.m[1] / u.r;
  T const p = (gamma - T(1)) * (u.e - T(0.5) * u.r * (ux * ux + uy * uy));
  T const c = std::sqrt(gamma * p / u.r);
  T const ax = (ux < 0 ? -ux : ux) + c, ay = (uy < 0 ? -uy : uy) + c;
  return ax > ay ? ax : ay;
}

/// A cell's signal speed as the value a reduction folds (strata::transform_reduce, then_reduce with
/// a transform): the maximum over the field without a tensor of speeds in between.
template <class T>
struct cell_wavespeed {
  T gamma;
  template <class In>
  STRATA_FN T operator()(In& in) const {
    return signal_speed<T>(load_state<T>(*in), gamma);
  }
};

// ------------------------------------------------ the exact Riemann solver (Toro ch. 4)

/// Primitive variables of a 1-D ideal-gas state.
struct primitive {
  double rho, u, p;
};

/// The exact solution of the Riemann problem (l, r) at speed s = x / t (Toro §4.2-4.5:
/// the star pressure by Newton's method on the pressure function from the PVRS guess,
/// then sampling the wave pattern).
primitive exact_riemann(primitive const& l, primitive const& r, double gamma, double s);
/// The star region's pressure and velocity (for checks against Toro's tables).
primitive riemann_star(primitive const& l, primitive const& r, double gamma);

}  // namespace apps
