// dist-fft (`strata bench --ranks N dist-fft`, docs/apps.md "Distributed 2-D FFT"): the
// distributed complex 2-D FFT of apps/common/dist_fft (row FFTs with FFTW, the global
// transpose as a dist::copy between the row and the column-distributed types, column
// FFTs) against FFTW's own MPI transform (fftw_mpi_plan_dft_2d, Debian's libfftw3-mpi-dev;
// when it was not found at configure time the benchmark says so and skips it).
//
// Same data (the same global array; FFTW's default block of ceil(N/P) rows puts every
// element on the same rank as Strata's row type, checked), the same planner flag
// (FFTW_ESTIMATE with --quick, FFTW_MEASURE otherwise) and the same output layout per
// variant: "transposed" is FFTW_MPI_TRANSPOSED_OUT for the forward transform and
// FFTW_MPI_TRANSPOSED_IN for the inverse against Strata's fft_layout::transposed;
// "natural" is FFTW's normal order against fft_layout::natural. A timed run is a forward
// and an inverse transform (divided by N0 N1 on both sides), so the data stays the input
// from run to run. One thread per rank on both sides (serial FFTW in each). Every rank
// runs the same sequence; rank 0 reports. The forward results of both sides are compared
// element by element on every rank, and both round trips against the input.
#include <strata/dist.hpp>

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "dist/large.hpp"
#include "harness.hpp"

// Defined (bench/CMakeLists.txt) when both FFTW (the app's strata_apps_fft) and FFTW-MPI
// were found.
#ifdef STRATA_BENCH_HAVE_FFTW_MPI
#include <fftw3-mpi.h>
#include <fftw3.h>

#include "dist_fft.hpp"
#endif

namespace strata::bench {
namespace {

#ifdef STRATA_BENCH_HAVE_FFTW_MPI
// FFTW-MPI's plans over this rank's slab (its own buffers, from fftw_alloc_complex).
struct fftw_mpi_side {
  fftw_complex *in = nullptr, *out = nullptr;
  fftw_plan forward = nullptr, backward = nullptr;
  ptrdiff_t local_n0 = 0, start0 = 0, local_n1 = 0, start1 = 0, n0, n1;
  bool transposed;

  fftw_mpi_side(index_t a, index_t b, bool t, unsigned planning) : n0(a), n1(b), transposed(t) {
    fftw_mpi_init();  // once is enough; later calls do nothing
    ptrdiff_t const alloc = fftw_mpi_local_size_2d_transposed(n0, n1, MPI_COMM_WORLD, &local_n0,
                                                              &start0, &local_n1, &start1);
    in = fftw_alloc_complex(static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1)));
    out = fftw_alloc_complex(static_cast<std::size_t>(std::max<ptrdiff_t>(alloc, 1)));
    // Out of place, allowed to overwrite its input (Strata's transform overwrites its
    // row array too): FFTW-MPI's fastest configuration for a given layout.
    unsigned const flags = planning | FFTW_DESTROY_INPUT;
    forward = fftw_mpi_plan_dft_2d(n0, n1, in, out, MPI_COMM_WORLD, FFTW_FORWARD,
                                   flags | (t ? FFTW_MPI_TRANSPOSED_OUT : 0u));
    backward = fftw_mpi_plan_dft_2d(n0, n1, out, in, MPI_COMM_WORLD, FFTW_BACKWARD,
                                    flags | (t ? FFTW_MPI_TRANSPOSED_IN : 0u));
    if (!forward || !backward) throw std::runtime_error("dist-fft: FFTW-MPI could not plan");
  }
  ~fftw_mpi_side() {
    fftw_destroy_plan(forward);
    fftw_destroy_plan(backward);
    fftw_free(in);
    fftw_free(out);
  }
  std::size_t in_count() const { return static_cast<std::size_t>(local_n0 * n1); }
  std::size_t out_count() const {
    return static_cast<std::size_t>(transposed ? local_n1 * n0 : local_n0 * n1);
  }
  void roundtrip() {
    fftw_execute(forward);
    fftw_execute(backward);
    double const k = 1.0 / (static_cast<double>(n0) * static_cast<double>(n1));
    auto* x = reinterpret_cast<double*>(in);
    for (std::size_t i = 0; i < 2 * in_count(); ++i) x[i] *= k;
  }
};

void fail(std::string const& what) {
  throw std::runtime_error("dist-fft: " + what);
}

void run_size(context& ctx, dist::runtime& rt, index_t n, bool transposed) {
  int const me = rt.rank(), size = rt.size();
  bool const quick = ctx.opts().quick;
  apps::fft2d_options options{transposed ? apps::fft_layout::transposed : apps::fft_layout::natural,
                              quick ? apps::fft_planning::estimate : apps::fft_planning::measure};
  apps::distributed_fft2d fft(rt.world(), n, n, options);
  apps::fill_fft_test_input(fft.rows());
  std::vector<apps::complex> input(fft.rows().local().begin(), fft.rows().local().end());
  double const tol = apps::fft_tolerance(n, n);
  auto rows = fft.rows().local();
  // Round trips per timed run: enough to take tens of milliseconds at the small sizes,
  // and at least five timed runs per side. (With two round trips and three runs, the
  // 1024^2 figure at four ranks on two cores moved between 0.67 and 1.08 from one
  // invocation to the next: each run is a few time slices of the four ranks.)
  int const k = quick ? 1 : std::max(1, static_cast<int>(4096 / n));
  int const repeats = quick ? 1 : std::max(5, ctx.opts().repeats / 2);
  auto strata_side = [&] {
    for (int i = 0; i < k; ++i) {
      fft.forward();
      fft.inverse();
    }
    dist::barrier(rt.world()).wait();
  };
  auto roundtrip_check = [&](std::span<apps::complex const> got, std::string const& who) {
    double const e = apps::max_relative_difference(got, input);
    if (!(e <= tol))
      fail(who + "'s round trip differs from the input by " + std::to_string(e) + " on rank " +
           std::to_string(me));
  };

  std::string const variant = std::to_string(n) + (transposed ? "/transposed" : "/natural") +
                              "/ranks" + std::to_string(size);
  char const* const layout =
      transposed ? "output by columns (FFTW_MPI_TRANSPOSED_OUT / _IN)" : "output in natural order";
  fftw_mpi_side peer(n, n, transposed, quick ? FFTW_ESTIMATE : FFTW_MEASURE);
  // Same distribution: FFTW's slab of rows (and of the transpose's rows) must be Strata's.
  if (peer.local_n0 != fft.rows().local_extent()[0] ||
      peer.local_n1 != fft.columns().local_extent()[1])
    fail("FFTW-MPI's slab (" + std::to_string(peer.local_n0) + " rows, " +
         std::to_string(peer.local_n1) + " transposed rows) is not Strata's block on rank " +
         std::to_string(me));
  auto* peer_in = reinterpret_cast<apps::complex*>(peer.in);
  auto* peer_out = reinterpret_cast<apps::complex*>(peer.out);
  // The forward results side by side (FFTW's plans may overwrite in: refill first).
  std::copy(input.begin(), input.end(), rows.begin());
  fft.forward();
  std::copy(input.begin(), input.end(), peer_in);
  fftw_execute(peer.forward);
  auto const strata_out = fft.output().local();
  if (strata_out.size() != peer.out_count())
    fail("the two forward results hold " + std::to_string(strata_out.size()) + " and " +
         std::to_string(peer.out_count()) + " elements on rank " + std::to_string(me));
  double const e = apps::max_relative_difference(
      strata_out, std::span<apps::complex const>(peer_out, peer.out_count()));
  double worst = 0;
  dist::all_reduce(rt.world(), std::span<double const>(&e, 1), std::span(&worst, 1),
                   dist::reduce_op::max)
      .wait();
  if (!(worst <= tol))
    fail("Strata's and FFTW-MPI's forward results differ by " + std::to_string(worst));
  std::copy(input.begin(), input.end(), rows.begin());
  std::copy(input.begin(), input.end(), peer_in);
  auto [ts, tp] = compare(repeats, strata_side, [&] {
    for (int i = 0; i < k; ++i) peer.roundtrip();
    MPI_Barrier(MPI_COMM_WORLD);
  });
  roundtrip_check(rows, "Strata");
  roundtrip_check(std::span<apps::complex const>(peer_in, peer.in_count()), "FFTW-MPI");
  if (me == 0) {
    double const flops = 2 * apps::fft_flops(n, n);  // a forward and an inverse
    result r{"dist-fft",
             variant,
             static_cast<double>(n) * static_cast<double>(n),
             ts / k,
             "fftw_mpi_plan_dft_2d",
             tp / k};
    auto const& p = fft.last_phases();  // rank 0's inverse in the last run
    r.extra = {{"ranks", size},
               {"n", static_cast<double>(n)},
               {"strata_gflops", flops / (ts / k) / 1e9},
               {"peer_gflops", flops / (tp / k) / 1e9},
               {"max_rel_diff_vs_fftw_mpi", worst},
               {"rank0_inverse_rows_s", p.rows},
               {"rank0_inverse_transpose_s", p.transpose},
               {"rank0_inverse_columns_s", p.columns}};
    r.note = std::string(
                 "size = N^2 points; seconds per forward + inverse transform pair on "
                 "rank 0 (a barrier ends each timed run of ") +
             std::to_string(k) + "), " + layout + ", FFTW_" + (quick ? "ESTIMATE" : "MEASURE") +
             " on both sides, serial FFTW in each rank; Strata's transpose is dist::copy";
    ctx.report(r);
  }
}
#endif

void run_dist_fft(context& ctx) {
  if (!dist::launched_by_mpi()) {
    ctx.skip("dist-fft", "needs MPI ranks: run `strata bench --ranks 2 dist-fft`");
    return;
  }
#ifndef STRATA_BENCH_HAVE_FFTW_MPI
  // Without the peer there is nothing to compare with (the app, apps/fft2d, still runs).
  char const* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!rank || std::string(rank) == "0")
    ctx.skip("dist-fft/fftw-mpi",
             "FFTW (libfftw3-dev) or FFTW-MPI (libfftw3-mpi-dev) was not found at configure "
             "time: install both and reconfigure to compare with fftw_mpi_plan_dft_2d");
#else
  dist::runtime rt(ctx.rt());
  std::vector<index_t> sizes =
      ctx.opts().quick ? std::vector<index_t>{256} : std::vector<index_t>{1024, 2048, 4096};
  // N = 8192 (the largest: 1 GiB per array) when STRATA_BENCH_LARGE=1.
  if (!ctx.opts().quick && large_sizes()) sizes.push_back(8192);
  for (auto n : sizes)
    for (bool transposed : {true, false}) run_size(ctx, rt, n, transposed);
#endif
}

registrar dist_fft_reg("dist-fft",
                       "distributed complex 2-D FFT (apps/common/dist_fft: FFTW rows and columns, "
                       "transpose as dist::copy) vs FFTW-MPI's fftw_mpi_plan_dft_2d (--ranks 2)",
                       run_dist_fft);

}  // namespace
}  // namespace strata::bench
