// dist-summa (`strata bench --ranks N dist-summa`, docs/apps.md "SUMMA"): the distributed
// DGEMM of apps/common/summa (2-D block-cyclic arrays over a near-square grid of the ranks,
// panels broadcast along grid rows and columns with dist::broadcast while the previous
// panel's cblas_dgemm runs) against
//  (a) ScaLAPACK's pdgemm (Debian's libscalapack-openmpi-dev) on the same local arrays:
//      Strata's row-major local blocks are ScaLAPACK's column-major blocks of the
//      transposes, so pdgemm computes C^T = B^T A^T over the transposed BLACS grid with
//      the same nb, i.e. the same distribution and the same memory, no copy;
//  (b) the same SUMMA written by hand in MPI: the same panels and packing, blocking
//      MPI_Bcast on row and column communicators (MPI_Comm_split), no lookahead.
// Both sides run one thread per rank. The peers' local GEMM is OpenBLAS
// (openblas_set_num_threads(1), which ScaLAPACK's BLAS shares: Debian's libblas.so.3
// alternative is OpenBLAS here); Strata's is summa's default, summa_local::automatic:
// whichever of OpenBLAS and apps::gemm a timed trial at construction finds faster on this
// machine (reported per result: strata_local_is_apps_gemm, rank 0's choice). C = A B
// (alpha 1, beta 0); each side's C is gathered and checked on 64 rows against a
// single-rank product afterwards. Every rank runs the same sequence; rank 0 reports.
#include <strata/dist.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef STRATA_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "dist/large.hpp"
#include "gemm.hpp"
#include "harness.hpp"
#include "summa.hpp"

#ifdef STRATA_BENCH_HAVE_SCALAPACK
// BLACS and PBLAS have no C header in Debian's package; these are their C entry points.
extern "C" {
void Cblacs_pinfo(int* rank, int* processes);
void Cblacs_get(int context, int request, int* value);
void Cblacs_gridinit(int* context, char const* order, int rows, int cols);
void Cblacs_gridinfo(int context, int* rows, int* cols, int* row, int* col);
void Cblacs_gridexit(int context);
void descinit_(int* desc, int const* m, int const* n, int const* mb, int const* nb,
               int const* row_source, int const* col_source, int const* context, int const* lld,
               int* info);
void pdgemm_(char const* transa, char const* transb, int const* m, int const* n, int const* k,
             double const* alpha, double const* a, int const* ia, int const* ja, int const* desca,
             double const* b, int const* ib, int const* jb, int const* descb, double const* beta,
             double* c, int const* ic, int const* jc, int const* descc);
}
#endif

namespace strata::bench {
namespace {

#ifdef STRATA_BENCH_HAVE_OPENBLAS

using array2 = dist::array<double, 2>;

// (b): SUMMA in plain MPI on the same arrays and the same panels (apps::summa_panels): per
// panel the owning grid column packs A's columns row by row and MPI_Bcasts them along the
// row, the owning grid rows B's rows along the column; one cblas_dgemm per panel.
struct mpi_summa {
  MPI_Comm row = MPI_COMM_NULL, col = MPI_COMM_NULL;
  apps::process_grid grid;
  int my_r, my_c;
  index_t k, nb, mloc, nloc, kloc_a;
  dist::array_type<2> a_t, b_t;
  std::vector<std::vector<index_t>> panels;
  std::vector<double> ap, bp;

  mpi_summa(apps::summa const& s, int me, index_t nb_, index_t k_)
      : grid(s.grid()),
        my_r(me / grid[1]),
        my_c(me % grid[1]),
        k(k_),
        nb(nb_),
        a_t(s.a_type()),
        b_t(s.b_type()),
        panels(apps::summa_panels(k, nb, s.panel_width(), grid[1])) {
    MPI_Comm_split(MPI_COMM_WORLD, my_r, my_c, &row);
    MPI_Comm_split(MPI_COMM_WORLD, my_c, my_r, &col);
    auto const ce = s.c_type().local_extent(me);
    mloc = ce[0];
    nloc = ce[1];
    kloc_a = a_t.local_extent(me)[1];
    ap.resize(static_cast<std::size_t>(mloc * s.panel_width()));
    bp.resize(static_cast<std::size_t>(s.panel_width() * nloc));
  }
  ~mpi_summa() {
    MPI_Comm_free(&row);
    MPI_Comm_free(&col);
  }
  mpi_summa(mpi_summa const&) = delete;
  mpi_summa& operator=(mpi_summa const&) = delete;

  void multiply(double const* al, double const* bl, double* cl) {
    bool const one = grid[0] == 1 && grid[1] == 1;
    for (std::size_t p = 0; p < panels.size(); ++p) {
      auto const& blocks = panels[p];
      index_t const g0 = blocks.front() * nb;
      index_t w = 0;
      for (auto j : blocks) w += std::min(nb, k - j * nb);
      if (grid[1] > 1 && mloc > 0) {
        int const root = a_t.owner(1, g0);
        if (root == my_c) {
          index_t const lc = a_t.local_index(1, g0);
          for (index_t i = 0; i < mloc; ++i)
            std::memcpy(ap.data() + i * w, al + i * kloc_a + lc,
                        static_cast<std::size_t>(w) * sizeof(double));
        }
        MPI_Bcast(ap.data(), static_cast<int>(mloc * w), MPI_DOUBLE, root, row);
      }
      if (!one && nloc > 0) {
        index_t off = 0;
        for (auto j : blocks) {  // one broadcast per block (apps::summa merges runs)
          index_t const bw = std::min(nb, k - j * nb);
          int const root = b_t.owner(0, j * nb);
          double* dst = bp.data() + off * nloc;
          if (root == my_r)
            std::memcpy(dst, bl + b_t.local_index(0, j * nb) * nloc,
                        static_cast<std::size_t>(bw * nloc) * sizeof(double));
          if (grid[0] > 1) MPI_Bcast(dst, static_cast<int>(bw * nloc), MPI_DOUBLE, root, col);
          off += bw;
        }
      }
      if (mloc == 0 || nloc == 0) continue;
      bool const a_direct = grid[1] == 1;
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(mloc),
                  static_cast<blasint>(nloc), static_cast<blasint>(w), 1.0,
                  a_direct ? al + g0 : ap.data(), static_cast<blasint>(a_direct ? kloc_a : w),
                  one ? bl + g0 * nloc : bp.data(), static_cast<blasint>(nloc), p == 0 ? 0.0 : 1.0,
                  cl, static_cast<blasint>(nloc));
    }
  }
};

#ifdef STRATA_BENCH_HAVE_SCALAPACK
// (a): pdgemm on the same local arrays. A row-major local block of an m x k matrix over a
// P_r x P_c grid is the column-major local block of its k x m transpose over a P_c x P_r
// grid; team rank r P_c + c is BLACS's (row c, column r) in column-major grid order.
struct scalapack_side {
  int context = -1;
  int da[9], db[9], dc[9];
  int m, n, k;

  scalapack_side(apps::summa const& s, int me, index_t nb, index_t m_, index_t n_, index_t k_)
      : m(static_cast<int>(m_)), n(static_cast<int>(n_)), k(static_cast<int>(k_)) {
    auto const g = s.grid();
    int rank = 0, processes = 0, rows = 0, cols = 0, row = -1, col = -1;
    Cblacs_pinfo(&rank, &processes);
    Cblacs_get(-1, 0, &context);
    Cblacs_gridinit(&context, "Col", g[1], g[0]);
    Cblacs_gridinfo(context, &rows, &cols, &row, &col);
    if (row != me % g[1] || col != me / g[1])
      throw std::runtime_error("dist-summa: BLACS put rank " + std::to_string(me) + " at (" +
                               std::to_string(row) + ", " + std::to_string(col) +
                               "); expected the transposed grid position");
    auto const ce = s.c_type().local_extent(me);
    int const nloc = std::max<int>(1, static_cast<int>(ce[1]));
    int const kloc = std::max<int>(1, static_cast<int>(s.a_type().local_extent(me)[1]));
    int const b = static_cast<int>(nb), zero = 0;
    int info = 0;
    descinit_(da, &k, &m, &b, &b, &zero, &zero, &context, &kloc, &info);  // A^T: k x m
    if (info == 0) descinit_(db, &n, &k, &b, &b, &zero, &zero, &context, &nloc, &info);  // B^T
    if (info == 0) descinit_(dc, &n, &m, &b, &b, &zero, &zero, &context, &nloc, &info);  // C^T
    if (info != 0)
      throw std::runtime_error("dist-summa: descinit_ failed with info " + std::to_string(info));
  }
  ~scalapack_side() { Cblacs_gridexit(context); }
  scalapack_side(scalapack_side const&) = delete;
  scalapack_side& operator=(scalapack_side const&) = delete;

  void multiply(double const* al, double const* bl, double* cl) const {
    int const one = 1;
    double const alpha = 1.0, beta = 0.0;
    pdgemm_("N", "N", &n, &m, &k, &alpha, bl, &one, &one, db, al, &one, &one, da, &beta, cl, &one,
            &one, dc);
  }
};
#endif

void check(array2 const& c, index_t k, std::string const& who) {
  double const err =
      apps::summa_error(c, k, 1.0, 1, 2, 0.0, 3, apps::rows_to_check(c.type().extent[0], 64));
  if (!(err <= apps::summa_tolerance(k)))
    throw std::runtime_error("dist-summa: " + who + "'s C differs from the single-rank product " +
                             "(scaled error " + std::to_string(err) + ")");
}

void run_size(context& ctx, dist::runtime& rt, index_t size) {
  int const me = rt.rank(), ranks = rt.size();
  index_t const nb = 128;
  auto const grid = apps::near_square_grid(ranks);
  apps::summa product(rt, rt.world(), size, size, size, nb, grid);
  array2 a(rt.world(), product.a_type()), b(rt.world(), product.b_type()),
      c(rt.world(), product.c_type()), cp(rt.world(), product.c_type());
  apps::summa_fill(a, 1);
  apps::summa_fill(b, 2);
  double const flops =
      2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
  int const repeats = ctx.opts().quick ? 1 : std::max(3, ctx.opts().repeats / 4);

  // The serial rate for parallel efficiency: rank 0 alone, cblas_dgemm of the whole
  // product (the best of `repeats` runs after a smaller warm-up), while the others wait.
  double serial_s = 1e300;
  if (me == 0) {
    std::vector<double> wa(static_cast<std::size_t>(size * size), 0.5), wb(wa), wc(wa.size());
    auto const s = static_cast<blasint>(size);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s / 4 + 1, s / 4 + 1, s / 4 + 1, 1.0,
                wa.data(), s, wb.data(), s, 0.0, wc.data(), s);
    for (int r = 0; r < repeats; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, s, s, 1.0, wa.data(), s, wb.data(),
                  s, 0.0, wc.data(), s);
      serial_s = std::min(
          serial_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  dist::barrier(rt.world()).wait();

  auto strata_side = [&] {
    product.multiply(1.0, a, b, 0.0, c);
    dist::barrier(rt.world()).wait();
  };
  struct peer {
    std::string name;
    std::function<void()> run;
  };
  mpi_summa hand(product, me, nb, size);
  std::vector<peer> peers;
#ifdef STRATA_BENCH_HAVE_SCALAPACK
  scalapack_side scalapack(product, me, nb, size, size, size);
  peers.push_back({"scalapack-pdgemm", [&] {
                     scalapack.multiply(a.local().data(), b.local().data(), cp.local().data());
                     MPI_Barrier(MPI_COMM_WORLD);
                   }});
#endif
  peers.push_back({"MPI_Bcast-summa", [&] {
                     hand.multiply(a.local().data(), b.local().data(), cp.local().data());
                     MPI_Barrier(MPI_COMM_WORLD);
                   }});
  for (auto const& p : peers) {
    auto [ts, tp] = compare(repeats, strata_side, p.run);
    check(c, size, "strata");
    check(cp, size, p.name);
    if (me != 0) continue;
    result r{"dist-summa", "n" + std::to_string(size) + "/ranks" + std::to_string(ranks),
             flops,        ts,
             p.name,       tp};
    double const sg = flops / ts / 1e9, pg = flops / tp / 1e9, serial = flops / serial_s / 1e9;
    r.extra = {
        {"ranks", ranks},
        {"grid_rows", grid[0]},
        {"grid_cols", grid[1]},
        {"nb", static_cast<double>(nb)},
        {"panel", static_cast<double>(product.panel_width())},
        {"strata_gflops", sg},
        {"peer_gflops", pg},
        {"serial_gflops", serial},
        {"strata_efficiency", sg / (ranks * serial)},
        {"peer_efficiency", pg / (ranks * serial)},
        {"rank0_wait_s", product.stats().wait_s},
        {"rank0_gemm_s", product.stats().gemm_s},
        {"strata_local_is_apps_gemm", product.local() == apps::summa_local::strata ? 1.0 : 0.0},
        {"host_cores", static_cast<double>(std::thread::hardware_concurrency())}};
    r.note =
        "size = flops (2 n^3); seconds per C = A B on rank 0 (a barrier ends each run); "
        "same block-cyclic nb x nb distribution and local arrays on both sides; "
        "one thread per rank on both; the peers' local GEMM is OpenBLAS, Strata's whichever "
        "of OpenBLAS and apps::gemm its timed trial chose (summa_local::automatic; rank 0's: "
        "strata_local_is_apps_gemm); efficiency = GFLOP/s / (ranks x one rank's cblas_dgemm "
        "of the whole product)";
    ctx.report(r);
  }
}

#endif  // STRATA_BENCH_HAVE_OPENBLAS

void run_dist_summa(context& ctx) {
  if (!dist::launched_by_mpi()) {
    ctx.skip("dist-summa", "needs MPI ranks: run `strata bench --ranks 2 dist-summa`");
    return;
  }
#ifndef STRATA_BENCH_HAVE_OPENBLAS
  ctx.skip("dist-summa", "OpenBLAS was not found at configure time (libopenblas-dev)");
#else
  dist::runtime rt(ctx.rt());
  apps::single_threaded_blas();
  openblas_set_num_threads(1);
  std::vector<index_t> sizes =
      ctx.opts().quick ? std::vector<index_t>{384} : std::vector<index_t>{2048, 4096};
  // n = 8192 (the largest) takes minutes per rank count: asked for by
  // STRATA_BENCH_LARGE=1.
  if (!ctx.opts().quick && large_sizes()) sizes.push_back(8192);
  for (auto n : sizes) run_size(ctx, rt, n);
#ifndef STRATA_BENCH_HAVE_SCALAPACK
  if (rt.rank() == 0)
    ctx.skip("dist-summa/scalapack",
             "ScaLAPACK was not found at configure time: install Debian's "
             "libscalapack-openmpi-dev and reconfigure to compare with pdgemm");
#endif
#endif
}

registrar dist_summa_reg("dist-summa",
                         "distributed SUMMA DGEMM (apps/common/summa) vs ScaLAPACK pdgemm and a "
                         "hand-written MPI_Bcast SUMMA (--ranks 2)",
                         run_dist_summa);

}  // namespace
}  // namespace strata::bench
