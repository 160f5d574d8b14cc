// GEMM (alpaka §4.2.2, PARRAY §7.1): apps/common's single-source tiled kernel on one
// host place (threads backend) against OpenBLAS's cblas_?gemm and Eigen's dense product,
// C = alpha A B + beta C, row-major n x n, at 1 and every host thread. `limit` is the
// fraction of a practical peak: the best rate OpenBLAS reached in the same run at that
// thread count and precision (DGEMM's for dgemm, SGEMM's for sgemm), so the results are
// reported when every size has run.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemm.hpp"
#include "gemm/peer.hpp"
#include "harness.hpp"

namespace strata::bench {
namespace {

template <class T>
std::vector<T> random_matrix(index_t n, std::uint64_t seed) {
  std::vector<T> v(static_cast<std::size_t>(n * n));
  for (std::size_t i = 0; i < v.size(); ++i) {
    philox4x32 g(seed, i);
    v[i] = static_cast<T>(2 * uniform_real<double>(g) - 1);
  }
  return v;
}

// Repeats for a size: the largest products take seconds each.
int repeats_for(context& ctx, index_t n) {
  int budget = n >= 4096 ? 2 : n >= 2048 ? 4 : n >= 1024 ? 10 : 20;
  return std::max(1, std::min(ctx.opts().repeats, budget));
}

template <class T>
void check(index_t n, T alpha, std::vector<T> const& a, std::vector<T> const& b, T beta,
           std::vector<T> const& c0, std::vector<T> const& c, std::string const& who) {
  double const err =
      apps::gemm_error(n, n, n, alpha, a, b, beta, c0, c, apps::rows_to_check(n, 16));
  double const bound = 2.0 * static_cast<double>(n + 2) * std::numeric_limits<T>::epsilon();
  if (!(err <= bound))
    throw std::runtime_error("gemm benchmark: " + who + " at n = " + std::to_string(n) +
                             " differs from the reference by " + std::to_string(err) + " (bound " +
                             std::to_string(bound) + ")");
}

template <class T>
void run_precision(context& ctx, char const* name) {
  bool const quick = ctx.opts().quick;
  std::vector<index_t> const sizes =
      quick ? std::vector<index_t>{64, 200} : std::vector<index_t>{256, 1024, 2048, 4096};
  T const alpha = 1, beta = T(0.5);
  auto flops = [](index_t n) {
    auto const x = static_cast<double>(n);
    return 2.0 * x * x * x;
  };

  // Results wait for the peak: the best OpenBLAS rate at each thread count in this run.
  std::vector<result> results;
  std::vector<double> peak(ctx.thread_counts().size(), 0.0);

  for (index_t n : sizes) {
    auto const a = random_matrix<T>(n, 1), b = random_matrix<T>(n, 2), c0 = random_matrix<T>(n, 3);
    std::vector<T> cs = c0, cp = c0;
    auto const& counts = ctx.thread_counts();
    for (std::size_t ti = 0; ti < counts.size(); ++ti) {
      int const t = counts[ti];
      target const where = on(ctx.cpus(t), backend_id::threads);
      auto strata_side = [&] {
        apps::gemm<T>(where, n, n, n, alpha, a.data(), n, b.data(), n, beta, cs.data(), n);
      };
      struct peer {
        std::string name;
        std::function<void()> run;
      };
      std::vector<peer> peers = {
          {"openblas",
           [&] { gemm_peer::openblas_gemm(n, alpha, a.data(), b.data(), beta, cp.data(), t); }},
          {"eigen",
           [&] { gemm_peer::eigen_gemm(n, alpha, a.data(), b.data(), beta, cp.data(), t); }}};
      // Both sides once from C0, checked against the reference (beta C0 included).
      std::copy(c0.begin(), c0.end(), cs.begin());
      strata_side();
      check(n, alpha, a, b, beta, c0, cs, "strata");
      for (auto const& p : peers) {
        std::copy(c0.begin(), c0.end(), cp.begin());
        p.run();
        check(n, alpha, a, b, beta, c0, cp, p.name);
      }
      for (auto const& p : peers) {
        auto [ts, tp] = compare(repeats_for(ctx, n), strata_side, p.run);
        result r{"gemm",
                 std::string(name) + "-" + std::to_string(n) + "/threads/" + std::to_string(t),
                 static_cast<double>(n),
                 ts,
                 p.name + "/" + std::to_string(t),
                 tp};
        if (p.name == "openblas") peak[ti] = std::max(peak[ti], flops(n) / tp);
        auto const plan = apps::plan_gemm<T>(where, n, n);
        r.extra = {{"threads", t},
                   {"strata_gflops", flops(n) / ts / 1e9},
                   {"peer_gflops", flops(n) / tp / 1e9},
                   {"tile_m", static_cast<double>(plan.bm)},
                   {"tile_n", static_cast<double>(plan.bn)}};
        r.note =
            "size = n (C = alpha A B + beta C, n x n, row-major); limit = strata GFLOP/s / "
            "peak, peak = the best OpenBLAS " +
            std::string(name) + " rate at this thread count in this run; OpenBLAS kernel " +
            gemm_peer::openblas_core();
        results.push_back(r);
      }
    }
  }
  auto const& counts = ctx.thread_counts();
  for (auto& r : results) {
    auto const t = static_cast<int>(r.extra.front().second);
    auto const ti =
        static_cast<std::size_t>(std::find(counts.begin(), counts.end(), t) - counts.begin());
    r.limit = flops(static_cast<index_t>(r.size)) / r.strata_s / peak[ti];
    r.extra.push_back({"peak_gflops", peak[ti] / 1e9});
    ctx.report(r);
  }
}

void run_gemm(context& ctx) {
  if (!gemm_peer::have_openblas()) {
    ctx.skip("gemm", gemm_peer::openblas_core());
    return;
  }
  run_precision<double>(ctx, "dgemm");
  run_precision<float>(ctx, "sgemm");
}

registrar gemm_r("gemm",
                 "single-source tiled GEMM (apps/common) vs OpenBLAS cblas_?gemm and Eigen; "
                 "n = 256..4096, double and single; fraction of OpenBLAS's peak rate",
                 run_gemm);

}  // namespace
}  // namespace strata::bench
