// ripple-particles and ripple-force: Ripple's fine-grained benchmarks against Kokkos
// (ripple-tensors-graphs-scheduling §7.2, Table 3; §7.3, Table 4). The Strata side runs the
// apps' kernels (apps/common/ripple_kernels.hpp) on tensors of records in every layout
// (AoS, SoA, AoSoA<16>) on one host PU; the peer is the same algorithm in idiomatic Kokkos
// (bench/ripple/kokkos.cpp), Kokkos Serial, so both sides use one thread. Each side's
// result is checked (particles exactly; FORCE against Kokkos to round-off) before timing.
// ripple-eikonal (§7.4) is bench/ripple/eikonal.cpp.
#include <array>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"
#include "ripple/peer.hpp"
#include "ripple_euler.hpp"
#include "ripple_kernels.hpp"

namespace strata::bench {
namespace {

template <class L>
std::string layout_name() {
  if constexpr (std::is_same_v<L, aos>)
    return "aos";
  else if constexpr (std::is_same_v<L, soa>)
    return "soa";
  else
    return "aosoa" + std::to_string(L::block);
}

// ------------------------------------------------------------------------- particles

// x after `steps` updates of particle i (exact: see apps::particle_dt).
float particle_expected(index_t i, int d, long steps) {
  float x = apps::particle_x0(i, d);
  for (long s = 0; s < steps; ++s) x += apps::particle_v0(i, d) * apps::particle_dt;
  return x;
}

void check_positions(std::string const& who, index_t n, long steps,
                     std::function<float(index_t, int)> const& x) {
  for (index_t i : {index_t{0}, n / 3, n - 1})
    for (int d = 0; d < 3; ++d)
      if (x(i, d) != particle_expected(i, d, steps))
        throw std::runtime_error("ripple-particles: wrong position on " + who + " at particle " +
                                 std::to_string(i));
}

template <class L>
void particles_layout(context& ctx, index_t n, ripple::kokkos_particles* kk, long& kk_steps,
                      std::vector<float> const& x0, std::vector<float> const& v0) {
  place const pu = ctx.cpus(1);
  tensor<records<apps::particle, L>, 1> t({pu}, tensor_spec<1>{.extent = {n}});
  apps::particle_init(t, pu);
  long steps = 0;
  auto strata_side = [&] {
    for_each_cell_and_wait(apps::particle_push{}, t, apps::particle_dt);
    ++steps;
  };
  std::string const name = "strata-" + layout_name<L>() + "/1pu";
  double const bytes = 24.0 * static_cast<double>(n);
  auto report = [&](std::string const& peer, double ts, double tp) {
    result r{"ripple-particles", name, static_cast<double>(n), ts, peer, tp};
    r.extra = {{"strata_mparticles_s", static_cast<double>(n) / ts / 1e6},
               {"peer_mparticles_s", static_cast<double>(n) / tp / 1e6},
               {"strata_gbytes_s", 1.5 * bytes / ts / 1e9}};  // reads 24, writes 12 bytes
    r.note = "one thread each; Kokkos Serial";
    ctx.report(r);
  };
  if (kk) {
    auto [ts, tp] = compare(ctx.opts().repeats, strata_side, [&] {
      kk->push(apps::particle_dt);
      ++kk_steps;
    });
    report("kokkos-serial-layoutright", ts, tp);
  } else {
    ctx.skip("ripple-particles", "this build has no Kokkos (libtrilinos-kokkos-dev)");
    return;
  }
  (void)x0;
  (void)v0;
  auto const x = apps::particle_positions(t, pu);
  check_positions(name, n, steps,
                  [&](index_t i, int d) { return x[static_cast<std::size_t>(d * n + i)]; });
}

void run_particles(context& ctx) {
  std::vector<index_t> const sizes = ctx.opts().quick
                                         ? std::vector<index_t>{100'000}
                                         : std::vector<index_t>{100'000, 1'000'000, 10'000'000};
  for (index_t n : sizes) {
    std::vector<float> x0(3 * static_cast<std::size_t>(n)), v0(x0.size());
    for (index_t i = 0; i < n; ++i)
      for (int d = 0; d < 3; ++d) {
        x0[static_cast<std::size_t>(d * n + i)] = apps::particle_x0(i, d);
        v0[static_cast<std::size_t>(d * n + i)] = apps::particle_v0(i, d);
      }
    std::optional<ripple::kokkos_particles> right, left;
    long right_steps = 0, left_steps = 0;
    if (ripple::kokkos_available()) {
      right.emplace(n, false);
      right->init(x0.data(), v0.data());
    }
    particles_layout<aos>(ctx, n, right ? &*right : nullptr, right_steps, x0, v0);
    particles_layout<soa>(ctx, n, right ? &*right : nullptr, right_steps, x0, v0);
    particles_layout<aosoa<16>>(ctx, n, right ? &*right : nullptr, right_steps, x0, v0);
    if (!right) continue;
    check_positions("kokkos-serial-layoutright", n, right_steps,
                    [&](index_t i, int d) { return right->x(i, d); });
    right.reset();
    // The component-major Kokkos layout, against Strata's SoA.
    left.emplace(n, true);
    left->init(x0.data(), v0.data());
    place const pu = ctx.cpus(1);
    tensor<records<apps::particle, soa>, 1> t({pu}, tensor_spec<1>{.extent = {n}});
    apps::particle_init(t, pu);
    long steps = 0;
    auto [ts, tp] = compare(
        ctx.opts().repeats,
        [&] {
          for_each_cell_and_wait(apps::particle_push{}, t, apps::particle_dt);
          ++steps;
        },
        [&] {
          left->push(apps::particle_dt);
          ++left_steps;
        });
    result r{"ripple-particles",         "strata-soa/1pu",
             static_cast<double>(n),     ts,
             "kokkos-serial-layoutleft", tp};
    r.extra = {{"strata_mparticles_s", static_cast<double>(n) / ts / 1e6},
               {"peer_mparticles_s", static_cast<double>(n) / tp / 1e6}};
    r.note = "one thread each; Kokkos Serial";
    ctx.report(r);
    check_positions("kokkos-serial-layoutleft", n, left_steps,
                    [&](index_t i, int d) { return left->x(i, d); });
  }
}

// ------------------------------------------------------------------------- FORCE

// A smooth initial field (density and pressure waves, a diagonal flow).
std::array<double, 4> force_initial(index_t i, index_t j, index_t n) {
  double const pi2 = 2 * std::numbers::pi;
  double const y = (static_cast<double>(i) + 0.5) / static_cast<double>(n);
  double const x = (static_cast<double>(j) + 0.5) / static_cast<double>(n);
  return {1 + 0.3 * std::sin(pi2 * x) * std::cos(pi2 * y), 0.5, -0.25,
          1 + 0.2 * std::cos(pi2 * (x + y))};
}

template <class T, class L>
void force_layout(context& ctx, index_t n, ripple::kokkos_force<T>& kk, T dt_h,
                  std::vector<apps::conserved<double>> const& kk_first) {
  place const pu = ctx.cpus(1);
  apps::euler_field<T, L> f({pu}, {n, n}, {1, 1}, boundary::copy{});
  f.set(pu, [&](index_t i, index_t j) { return force_initial(i, j, n); });
  T const h = T(1) / static_cast<T>(n);
  T const dt = dt_h * h;
  // One step compared with Kokkos' first step, cell by cell.
  f.step(dt, h);
  auto const u = f.get(pu);
  double const tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  for (std::size_t k = 0; k < u.size(); ++k) {
    double const want[4] = {kk_first[k].r, kk_first[k].m[0], kk_first[k].m[1], kk_first[k].e};
    double const got[4] = {u[k].r, u[k].m[0], u[k].m[1], u[k].e};
    for (int c = 0; c < 4; ++c)
      if (std::abs(got[c] - want[c]) > tol * (1 + std::abs(want[c])))
        throw std::runtime_error("ripple-force: Strata " + layout_name<L>() +
                                 " differs from Kokkos at cell " + std::to_string(k));
  }
  std::string const prec = std::is_same_v<T, float> ? "float" : "double";
  for (bool rows : {false, true}) {
    // The tuned rows peer against the layouts whose rows vectorize (AoSoA's FORCE rows
    // read across lanes and stay scalar).
    if (rows && !std::is_same_v<L, aos> && !std::is_same_v<L, soa>) break;
    auto [ts, tp] = compare(
        ctx.opts().repeats, [&] { f.step(dt, h); },
        [&] { kk.step(dt_h, dt_h, T(apps::euler_gamma), rows); });
    std::string const peer =
        rows ? "kokkos-serial-rows-inlined-aos-struct-" : "kokkos-serial-aos-struct-";
    result r{"ripple-force",
             "strata-" + layout_name<L>() + "-" + prec + "/1pu",
             static_cast<double>(n * n),
             ts,
             peer + prec,
             tp};
    r.extra = {{"cells_per_side", static_cast<double>(n)},
               {"strata_mcells_s", static_cast<double>(n * n) / ts / 1e6},
               {"peer_mcells_s", static_cast<double>(n * n) / tp / 1e6}};
    r.note = "one step: padding (transmissive edges) + FORCE flux on 4 faces per cell; 1 thread";
    ctx.report(r);
  }
}

template <class T>
void force_precision(context& ctx, index_t n) {
  ripple::kokkos_force<T> kk(n, n);
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j) {
      auto const [rho, u, v, p] = force_initial(i, j, n);
      T const c[4] = {T(rho), T(rho * u), T(rho * v),
                      T(p / (apps::euler_gamma - 1) + 0.5 * rho * (u * u + v * v))};
      kk.set(i, j, c);
    }
  T const dt_h = T(0.1);  // dt / h: CFL 0.1 x the largest speed (about 2) of this field
  kk.step(dt_h, dt_h, T(apps::euler_gamma));
  std::vector<apps::conserved<double>> first(static_cast<std::size_t>(n * n));
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j) {
      T c[4];
      kk.get(i, j, c);
      first[static_cast<std::size_t>(i * n + j)] = {c[0], {c[1], c[2]}, c[3]};
    }
  force_layout<T, aos>(ctx, n, kk, dt_h, first);
  force_layout<T, soa>(ctx, n, kk, dt_h, first);
  force_layout<T, aosoa<16>>(ctx, n, kk, dt_h, first);
}

void run_force(context& ctx) {
  if (!ripple::kokkos_available()) {
    ctx.skip("ripple-force", "this build has no Kokkos (libtrilinos-kokkos-dev)");
    return;
  }
  std::vector<index_t> const sizes =
      ctx.opts().quick ? std::vector<index_t>{128} : std::vector<index_t>{1024, 2048};
  for (index_t n : sizes) {
    force_precision<float>(ctx, n);
    force_precision<double>(ctx, n);
  }
}

registrar ripple_particles_r("ripple-particles",
                             "Ripple §7.2: x += v dt on tensors of particle records "
                             "(AoS/SoA/AoSoA16, one PU) vs Kokkos Serial Views",
                             run_particles);
registrar ripple_force_r("ripple-force",
                         "Ripple §7.3: one FORCE flux-difference step on 2-D Euler record "
                         "tensors (AoS/SoA/AoSoA16, float/double, one PU) vs Kokkos Serial",
                         run_force);

}  // namespace
}  // namespace strata::bench
