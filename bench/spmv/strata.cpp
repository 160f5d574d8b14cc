// SpMV (Phalanx §V-A): apps/common's partitioned CSR product on one host place (the
// threads backend, rows cut into chunks of equal nonzeros) against Eigen's
// SparseMatrix<RowMajor> * vector (OpenMP-threaded by Eigen for row-major matrices) and
// hand-written OpenMP CSR loops, at 1 and every host thread, on a 3-D Laplacian and a
// power-law matrix larger than the last-level cache. `limit` is the fraction of the
// STREAM triad bandwidth (measured in the same run, raw OpenMP, best over thread counts)
// reached when moving the matrix arrays, x once and y once; `gather_limit` is the fraction
// of the gather bound (the matrix's x[col[k]] loads alone, measured in the same run, best
// over thread counts), the bound where x's accesses miss the cache (power-law columns).
// Strata runs twice: as partitioned_spmv reads a matrix by default (spmv_format::automatic:
// the Laplacian in row groups, eight rows of one stencil pattern multiplied as vectors,
// about 1.6 bytes per nonzero instead of 12; the power-law matrix, whose columns are
// scattered over a 16 MB x, in tiles of a quarter of the L2 of x and of y, 12 bytes per
// nonzero as CSR, each tile's x read in address order instead of a miss per nonzero, where
// a timed trial at construction finds them faster than CSR on this machine), against
// every peer; and forced to CSR (variant ".../csr/..."), the peers' own format, against
// Eigen and the static OpenMP loop (where the automatic choice was not CSR already).
// `limit` counts the bytes Strata's encoding reads, `csr_limit` the CSR matrix's (the
// bound of a CSR loop); `gather_limit` above 1 is column blocks beating the gathers of
// any row-order product.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"
#include "sparse.hpp"
#include "spmv.hpp"
#include "spmv/peer.hpp"
#include "stream/peer.hpp"

namespace strata::bench {
namespace {

// Triad a = b + s c over arrays of 4x the last-level cache (at least 2^24 doubles), best
// of a few runs at each thread count: bytes per second. --quick (a smoke test) keeps 2^20
// doubles: a VM whose hwloc reports 508 MiB of L3 made it 6 GiB and 70 s of bench.smoke.
double stream_triad_bandwidth(context& ctx) {
  bool const quick = ctx.opts().quick;
  index_t n = quick ? index_t{1} << 20 : index_t{1} << 24;
  while (!quick && static_cast<std::uint64_t>(n) * sizeof(double) < 4 * ctx.last_level_cache())
    n *= 2;
  std::vector<double> a(static_cast<std::size_t>(n)), b(a.size()), c(a.size());
  omp::init(n, a.data(), b.data(), c.data(), ctx.thread_counts().back());
  double best = 0;
  for (int t : ctx.thread_counts()) {
    auto [unused, s] = compare(
        5, [] {}, [&] { omp::triad(n, 0.4, a.data(), b.data(), c.data(), t); });
    (void)unused;
    best = std::max(best, 3.0 * sizeof(double) * static_cast<double>(n) / s);
  }
  return best;
}

// The gathers alone (spmv_peer::gather_sum), best of a few runs at each thread count:
// seconds.
double gather_bound(context& ctx, apps::csr_matrix const& a, std::vector<double> const& x) {
  double best = 0, sink = 0;
  for (int t : ctx.thread_counts()) {
    auto [unused, s] = compare(
        5, [] {}, [&] { sink += spmv_peer::gather_sum(a.nnz(), a.col.data(), x.data(), t); });
    (void)unused;
    best = best == 0 ? s : std::min(best, s);
  }
  if (!std::isfinite(sink))
    throw std::runtime_error("spmv benchmark: the gather sum is not finite");
  return best;
}

void check(std::vector<double> const& y, std::vector<double> const& want, std::string const& who,
           std::string const& matrix) {
  double err = apps::max_relative_difference(y, want);
  if (!(err <= 1e-12))
    throw std::runtime_error("spmv benchmark: " + who + " on " + matrix + " differs from the " +
                             "reference product by " + std::to_string(err));
}

void run_matrix(context& ctx, std::string const& name, apps::csr_matrix const& a,
                double bandwidth) {
  std::vector<double> x(static_cast<std::size_t>(a.cols)), want(static_cast<std::size_t>(a.rows));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 13) / 16;
  apps::reference_spmv(a, x.data(), want.data());
  std::vector<double> ys(want.size()), yp(want.size());
  auto eigen = spmv_peer::make_eigen(a.rows, a.cols, a.row_ptr.data(), a.col.data(), a.val.data());
  double const flops = 2.0 * static_cast<double>(a.nnz());
  double const gather_s = gather_bound(ctx, a, x);
  struct peer {
    std::string name;
    std::function<void()> run;
  };
  for (int t : ctx.thread_counts()) {
    std::vector<peer> peers = {
        {"eigen", [&] { spmv_peer::eigen_multiply(*eigen, x.data(), yp.data(), t); }},
        {"omp-csr-static",
         [&] {
           spmv_peer::omp_csr_static(a.rows, a.row_ptr.data(), a.col.data(), a.val.data(), x.data(),
                                     yp.data(), t);
         }},
        {"omp-csr-dynamic", [&] {
           spmv_peer::omp_csr_dynamic(a.rows, a.row_ptr.data(), a.col.data(), a.val.data(),
                                      x.data(), yp.data(), t);
         }}};
    bool automatic_is_csr = false;
    for (auto format : {apps::spmv_format::automatic, apps::spmv_format::csr}) {
      // Forced CSR only where the automatic choice was another encoding.
      if (format == apps::spmv_format::csr && automatic_is_csr) continue;
      apps::partitioned_spmv product(a, {on(ctx.cpus(t), backend_id::threads)}, format);
      auto const part = product.parts().front();
      automatic_is_csr = part.encoding == apps::spmv_encoding::csr;
      double const bytes = part.matrix_bytes + 8.0 * (a.rows + a.cols);
      auto strata_side = [&] { product.multiply(x.data(), ys.data()); };
      bool const csr = format == apps::spmv_format::csr;
      for (std::size_t i = 0; i < (csr ? 2 : peers.size()); ++i) {
        auto const& p = peers[i];
        std::fill(ys.begin(), ys.end(), 0.0);
        std::fill(yp.begin(), yp.end(), 0.0);
        auto [ts, tp] = compare(ctx.opts().repeats, strata_side, p.run);
        check(ys, want, "strata", name);
        check(yp, want, p.name, name);
        result r{"spmv",
                 name + (csr ? "/csr" : "") + "/threads/" + std::to_string(t),
                 static_cast<double>(a.nnz()),
                 ts,
                 p.name + "/" + std::to_string(t),
                 tp};
        r.limit = bytes / ts / bandwidth;
        double const csr_bytes = a.bytes() + 8.0 * (a.rows + a.cols);
        r.extra = {{"threads", t},
                   {"rows", a.rows},
                   {"strata_gflops", flops / ts / 1e9},
                   {"peer_gflops", flops / tp / 1e9},
                   {"strata_gbps", bytes / ts / 1e9},
                   {"strata_bytes_per_nonzero", part.matrix_bytes / static_cast<double>(a.nnz())},
                   {"stream_gbps", bandwidth / 1e9},
                   {"csr_limit", csr_bytes / ts / bandwidth},
                   {"gather_s", gather_s},
                   {"gather_limit", gather_s / ts}};
        r.note = "size = nonzeros; Strata reads its rows " +
                 std::string(apps::to_string(part.encoding)) +
                 (csr ? " (forced)" : " (automatic)") +
                 ", the peers CSR; limit = (Strata's matrix bytes + x + y) / time / STREAM "
                 "triad bandwidth (csr_limit: with the CSR matrix's bytes, the bound of a CSR "
                 "loop); gather_limit = gather_s / time, gather_s = the sum of "
                 "x[col[k]] alone";
        ctx.report(r);
      }
    }
  }
}

void run_spmv(context& ctx) {
  double const bandwidth = stream_triad_bandwidth(ctx);
  bool const quick = ctx.opts().quick;
  apps::csr_index const side = quick ? 24 : 128;
  run_matrix(ctx, "laplacian3d-" + std::to_string(side), apps::laplacian_3d(side, side, side),
             bandwidth);
  apps::csr_index const rows = quick ? 20000 : 2000000;
  run_matrix(ctx, "power-law-" + std::to_string(rows), apps::random_power_law(rows, 8, 2024),
             bandwidth);
}

registrar spmv_r("spmv",
                 "CSR SpMV (apps/common) vs Eigen SparseMatrix<RowMajor> * x and OpenMP CSR "
                 "loops; 3-D Laplacian 128^3 and power-law rows; fraction of STREAM bandwidth",
                 run_spmv);

}  // namespace
}  // namespace strata::bench
