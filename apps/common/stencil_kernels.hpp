// The two cell updates of the hybrid 2-D stencil scheme (hybrid-2d-stencil-scheme §2) and
// their references: one source each, shared by the apps (apps/jacobi, apps/shortest_path),
// their benchmarks (bench/hybrid) and the tests (tests/tensor/hybrid*_test.cpp,
// tests/apps). Header-only, on the public API.
#pragma once

#include <strata/strata.hpp>

#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

namespace apps {

/// Jacobi relaxation (§2, [3]): the mean of the four neighbours.
struct jacobi_update {
  template <class It>
  STRATA_FN double operator()(It& in) const {
    return 0.25 * (*in.offset(0, -1) + *in.offset(0, 1) + *in.offset(1, -1) + *in.offset(1, 1));
  }
};

/// The seed's shortest path step (§2): cost(P) = min(cost(P), min over the 8 neighbours Q
/// of cost(Q) + d(P, Q)), d the 3-D distance over cell side h and elevations z. The x/y
/// part of d is h^2 or 2 h^2 (§5: only those contributions are precomputed, not the
/// distances). Outside the grid the costs are +inf, so edge cells have fewer neighbours.
struct path_update {
  template <class C, class Z>
  STRATA_FN double operator()(C& c, Z& z, double h) const {
    double const h2 = h * h;
    double best = *c;
    double const here = *z;
    for (int di = -1; di <= 1; ++di)
      for (int dj = -1; dj <= 1; ++dj) {
        if (di == 0 && dj == 0) continue;
        double const dz = *z.offset(0, di).offset(1, dj) - here;
        double const d = std::sqrt((di != 0 && dj != 0 ? 2 * h2 : h2) + dz * dz);
        double const via = *c.offset(0, di).offset(1, dj) + d;
        best = via < best ? via : best;
      }
    return best;
  }
};

/// The 3-D step between grid neighbours (di, dj in -1..1) as path_update computes it:
/// the references and the path tracer use the same arithmetic, so costs compare exactly.
inline double step_cost(int di, int dj, double h, double dz) {
  double const h2 = h * h;
  return std::sqrt((di != 0 && dj != 0 ? 2 * h2 : h2) + dz * dz);
}

/// `iterations` sequential Jacobi sweeps over a rows x cols row-major field, `edge`
/// outside it: the bitwise reference of the hybrid solve.
inline std::vector<double> jacobi_reference(std::vector<double> a, strata::index_t rows,
                                            strata::index_t cols, double edge, long iterations) {
  std::vector<double> b(a.size());
  auto at = [&](std::vector<double> const& v, strata::index_t i, strata::index_t j) {
    if (i < 0 || j < 0 || i >= rows || j >= cols) return edge;
    return v[static_cast<std::size_t>(i * cols + j)];
  };
  for (long it = 0; it < iterations; ++it) {
    for (strata::index_t i = 0; i < rows; ++i)
      for (strata::index_t j = 0; j < cols; ++j)
        b[static_cast<std::size_t>(i * cols + j)] =
            0.25 * (at(a, i - 1, j) + at(a, i + 1, j) + at(a, i, j - 1) + at(a, i, j + 1));
    std::swap(a, b);
  }
  return a;
}

/// Dijkstra on the same 8-neighbour graph (the seed's [5]): the minimal path cost from
/// (ti, tj) to every cell. The reference of the shortest-path solve.
inline std::vector<double> dijkstra(std::vector<double> const& z, strata::index_t rows,
                                    strata::index_t cols, double h, strata::index_t ti,
                                    strata::index_t tj) {
  double const inf = std::numeric_limits<double>::infinity();
  std::vector<double> cost(z.size(), inf);
  using item = std::pair<double, strata::index_t>;
  std::priority_queue<item, std::vector<item>, std::greater<>> q;
  cost[static_cast<std::size_t>(ti * cols + tj)] = 0;
  q.push({0.0, ti * cols + tj});
  while (!q.empty()) {
    auto [c, k] = q.top();
    q.pop();
    if (c > cost[static_cast<std::size_t>(k)]) continue;
    strata::index_t const i = k / cols, j = k % cols;
    for (int di = -1; di <= 1; ++di)
      for (int dj = -1; dj <= 1; ++dj) {
        strata::index_t const a = i + di, b = j + dj;
        if ((di == 0 && dj == 0) || a < 0 || b < 0 || a >= rows || b >= cols) continue;
        auto const nk = static_cast<std::size_t>(a * cols + b);
        double const d = step_cost(di, dj, h, z[static_cast<std::size_t>(k)] - z[nk]);
        if (c + d < cost[nk]) {
          cost[nk] = c + d;
          q.push({cost[nk], a * cols + b});
        }
      }
  }
  return cost;
}

}  // namespace apps
