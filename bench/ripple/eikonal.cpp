// ripple-eikonal: Ripple's Eikonal benchmark (ripple-tensors-graphs-scheduling §7.4,
// Table 5) against Kokkos. The Strata side is apps/eikonal's solver
// (apps/common/ripple_eikonal.hpp: FIM on {value, state} record tensors, one graph of two
// iterations and a reduction, re-run while a cell is active) in every layout (AoS, SoA,
// AoSoA<16>) on one host PU; the peer is the same Jacobi FIM in idiomatic Kokkos
// (bench/ripple/kokkos_eikonal.cpp: Views of structs, MDRangePolicy), Kokkos Serial, so
// both sides use one thread. Before timing, each layout's field must equal Kokkos' to
// round-off and lie within the scheme's error bound of the exact distance.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "harness.hpp"
#include "ripple/peer.hpp"
#include "ripple_eikonal.hpp"

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

template <class T, class L, std::size_t N>
void eikonal_layout(context& ctx, index_t n, double band, ripple::kokkos_eikonal<T, int(N)>& kk,
                    std::vector<double> const& kk_values) {
  place const pu = ctx.cpus(1);
  vec<N> extent{}, parts{};
  for (std::size_t d = 0; d < N; ++d) {
    extent[d] = n;
    parts[d] = 1;
  }
  apps::eikonal_solver<T, L, N> s({pu}, extent, parts, band);
  int const limit = static_cast<int>(64 * band) + 64;
  s.reset();
  int const iterations = s.solve(limit, &pu);
  auto const v = s.values(pu);
  std::string const prec = std::is_same_v<T, float> ? "float" : "double";
  std::string const what = "ripple-eikonal: Strata " + layout_name<L>() + " " + prec;
  // The same iterates on both sides (Jacobi, tolerance 0): equal to round-off (the
  // compilers may contract differently), and within the scheme's error bound.
  double const tol = (std::is_same_v<T, float> ? 1e-6 : 1e-14) * band / static_cast<double>(n);
  double const edge = band * static_cast<double>(s.h()) * (1 - 1e-5);
  for (std::size_t k = 0; k < v.size(); ++k) {
    bool const both = std::isfinite(v[k]) && std::isfinite(kk_values[k]);
    bool const same = both ? std::abs(v[k] - kk_values[k]) <= tol
                           // in one field only: a cell on the band's edge (round-off)
                           : std::min(v[k], kk_values[k]) >= edge;
    if (!same) throw std::runtime_error(what + " differs from Kokkos at cell " + std::to_string(k));
  }
  auto const c = apps::check_eikonal<N>(v, extent, static_cast<double>(s.h()), band,
                                        std::is_same_v<T, float> ? 1e-5 : 1e-12);
  if (!s.converged() || !c.ok())
    throw std::runtime_error(what + ": not converged or error " +
                             std::to_string(c.max_error_cells) + " h above the bound " +
                             std::to_string(c.bound_cells) + " h");
  auto [ts, tp] = compare(
      ctx.opts().repeats,
      [&] {
        s.reset();
        s.solve(limit, &pu);
      },
      [&] {
        kk.reset();
        kk.solve(limit);
      });
  double cells = 1;
  for (std::size_t d = 0; d < N; ++d) cells *= static_cast<double>(n);
  result r{"ripple-eikonal",
           "strata-" + layout_name<L>() + "-" + prec + "-" + std::to_string(N) + "d-band" +
               std::to_string(static_cast<int>(band)) + "/1pu",
           cells,
           ts,
           "kokkos-serial-mdrange-aos-struct-" + prec,
           tp};
  r.extra = {{"cells_per_side", static_cast<double>(n)},
             {"dims", static_cast<double>(N)},
             {"band", band},
             {"iterations", static_cast<double>(iterations)},
             {"max_error_h", c.max_error_cells},
             {"strata_mcell_updates_s", cells * iterations / ts / 1e6},
             {"peer_mcell_updates_s", cells * iterations / tp / 1e6}};
  r.note =
      "FIM solve to the fixed point (reset + iterations, a reduction every 2); 1 thread; both "
      "sides -fno-math-errno";
  ctx.report(r);
}

template <class T, std::size_t N>
void eikonal_case(context& ctx, index_t n, double band) {
  ripple::kokkos_eikonal<T, int(N)> kk(n, band);
  kk.reset();
  kk.solve(static_cast<int>(64 * band) + 64);
  if (!kk.converged()) throw std::runtime_error("ripple-eikonal: Kokkos did not converge");
  double cells = 1;
  for (std::size_t d = 0; d < N; ++d) cells *= static_cast<double>(n);
  std::vector<double> values(static_cast<std::size_t>(cells));
  kk.values(values.data());
  eikonal_layout<T, aos, N>(ctx, n, band, kk, values);
  eikonal_layout<T, soa, N>(ctx, n, band, kk, values);
  eikonal_layout<T, aosoa<16>, N>(ctx, n, band, kk, values);
}

void run_eikonal(context& ctx) {
  if (!ripple::kokkos_available()) {
    ctx.skip("ripple-eikonal", "this build has no Kokkos (libtrilinos-kokkos-dev)");
    return;
  }
  // Table 5's cases: float with 5 cells in the band, double with 10; its first two sizes
  // (1k^2, 2k^2; 4k^2 and up take minutes per repeat on one core), and a 3-D cube.
  std::vector<index_t> const sizes2 =
      ctx.opts().quick ? std::vector<index_t>{128} : std::vector<index_t>{1024, 2048};
  for (index_t n : sizes2) {
    eikonal_case<float, 2>(ctx, n, 5);
    eikonal_case<double, 2>(ctx, n, 10);
  }
  index_t const n3 = ctx.opts().quick ? 32 : 128;
  eikonal_case<float, 3>(ctx, n3, 5);
  eikonal_case<double, 3>(ctx, n3, 10);
}

registrar ripple_eikonal_r("ripple-eikonal",
                           "Ripple §7.4: the Eikonal equation by the Fast Iterative Method on "
                           "{value, state} record tensors (AoS/SoA/AoSoA16, 2-D/3-D, one PU) "
                           "vs Kokkos Serial",
                           run_eikonal);

}  // namespace
}  // namespace strata::bench
