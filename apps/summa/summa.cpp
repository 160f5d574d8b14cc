// Distributed DGEMM by SUMMA over MPI ranks (Phalanx §V-B): C = alpha A B + beta C with A,
// B and C in 2-D block-cyclic distributed arrays over a P_r x P_c grid of the ranks,
// panels broadcast along grid rows and columns while the previous panel's local GEMM runs
// (apps/common/summa.hpp). Every rank fills its blocks from a formula of the global
// indices; the result is gathered to rank 0 and checked against a single-rank BLAS product
// of the whole matrices. Public API only.
//
//   mpiexec -n P summa [--n N] [--m M] [--k K] [--nb NB] [--grid PrxPc] [--panel W]
//                      [--lookahead L] [--local auto|blas|strata] [--alpha X] [--beta Y]
//                      [--repeat R] [--check all|sample]
//
// C is m x n, A m x k, B k x n; n is 2048 by default, m and k are n unless given. --grid defaults
// to the near-square grid of all ranks. --check sample (the default above 2048^3 flops)
// compares 64 rows spread over C; all compares every row. BLAS runs one thread per rank.
// Rank 0 prints. Exits 1 with a message for bad arguments, 2 when C differs from the
// reference.
#include "summa.hpp"
#include "cli.hpp"
#include "gemm.hpp"

#include <strata/dist.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <span>
#include <string>

namespace {

namespace dist = strata::dist;
using strata::index_t;

apps::args const cli(
    "usage: mpiexec -n P summa [--n N] [--m M] [--k K] [--nb NB] [--grid PrxPc] [--panel W] "
    "[--lookahead L] [--local auto|blas|strata] [--alpha X] [--beta Y] [--repeat R] [--check "
    "all|sample]");

}  // namespace

namespace {

int run(dist::runtime const& rt, int argc, char** argv) {
  apps::single_threaded_blas();
  index_t n = 2048, nb = 128;
  std::optional<index_t> m_given, k_given;  // m and k default to n
  long long repeat = 3;
  double alpha = 1.0, beta = 0.5;
  std::string check;
  apps::process_grid grid = apps::near_square_grid(rt.size());
  apps::summa_options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (cli.help(arg, rt.rank() == 0)) return 0;
    auto value = [&]() -> char const* {
      if (i + 1 >= argc) cli.fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--n") {
      n = cli.whole(arg, value(), 1);
    } else if (arg == "--m") {
      m_given = cli.whole(arg, value(), 1);
    } else if (arg == "--k") {
      k_given = cli.whole(arg, value(), 1);
    } else if (arg == "--nb") {
      nb = cli.whole(arg, value(), 1);
    } else if (arg == "--grid") {
      grid = apps::parse_grid(value());
    } else if (arg == "--panel") {
      options.panel = cli.whole(arg, value(), 1);
    } else if (arg == "--lookahead") {
      options.lookahead = static_cast<int>(cli.whole(arg, value(), 0));
    } else if (arg == "--local") {
      std::string v = value();
      if (v == "auto")
        options.local = apps::summa_local::automatic;
      else if (v == "blas")
        options.local = apps::summa_local::blas;
      else if (v == "strata")
        options.local = apps::summa_local::strata;
      else
        cli.fail("--local '" + v + "': expected auto, blas or strata");
    } else if (arg == "--alpha") {
      // Products of the entries (at most k * 4 in magnitude) must stay finite: 1e308
      // overflowed to a NaN error, "WRONG" (an outside probe).
      alpha = cli.real(arg, value(), -1e250, 1e250);
    } else if (arg == "--beta") {
      beta = cli.real(arg, value(), -1e250, 1e250);
    } else if (arg == "--repeat") {
      repeat = cli.whole(arg, value(), 1);
    } else if (arg == "--check") {
      check = value();
      if (check != "all" && check != "sample") cli.fail("--check '" + check + "': all or sample");
    } else {
      cli.fail("unknown argument '" + arg + "'");
    }
  }
  int const me = rt.rank(), ranks = rt.size();
  index_t const m = m_given.value_or(n), k = k_given.value_or(n);
  apps::summa product(rt, rt.world(), m, n, k, nb, grid, options);
  dist::array<double, 2> a(rt.world(), product.a_type()), b(rt.world(), product.b_type()),
      c(rt.world(), product.c_type());
  apps::summa_fill(a, 1);
  apps::summa_fill(b, 2);
  if (me == 0)
    std::printf(
        "summa: C(%lld x %lld) = %g A(%lld x %lld) B + %g C, nb %lld, grid %d x %d of %d "
        "rank%s, panel %lld, lookahead %d, local %s%s\n",
        static_cast<long long>(m), static_cast<long long>(n), alpha, static_cast<long long>(m),
        static_cast<long long>(k), beta, static_cast<long long>(nb), grid[0], grid[1], ranks,
        ranks == 1 ? "" : "s", static_cast<long long>(product.panel_width()), options.lookahead,
        product.local() == apps::summa_local::blas ? "cblas_dgemm" : "strata gemm",
        apps::summa_has_blas() || product.local() == apps::summa_local::strata
            ? ""
            : " (no OpenBLAS: plain loops)");

  // A multiply's time is the slowest rank's: line the ranks up before each one. C starts
  // from C0 every time, so the last result is the one checked.
  double best = 1e300;
  for (long long r = 0; r < repeat; ++r) {
    apps::summa_fill(c, 3);
    dist::barrier(rt.world()).wait();
    auto s = std::chrono::steady_clock::now();
    product.multiply(alpha, a, b, beta, c);
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count(),
           slowest = 0;
    dist::all_reduce(rt.world(), std::span<double const>(&t, 1), std::span(&slowest, 1),
                     dist::reduce_op::max)
        .wait();
    best = std::min(best, slowest);
  }
  auto const stats = product.stats();
  bool const sample =
      check == "sample" ||
      (check.empty() && static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) >
                            2048.0 * 2048.0 * 2048.0);
  auto const rows = sample ? apps::rows_to_check(m, 64) : std::vector<index_t>{};
  double const err = apps::summa_error(c, k, alpha, 1, 2, beta, 3, rows);
  bool const ok = err <= apps::summa_tolerance(k);
  if (me == 0) {
    std::printf(
        "  rank 0: %lld panels, %lld broadcasts; wait %.1f ms, local gemm %.1f ms, "
        "pack %.1f ms\n",
        static_cast<long long>(stats.panels), static_cast<long long>(stats.broadcasts),
        stats.wait_s * 1e3, stats.gemm_s * 1e3, stats.pack_s * 1e3);
    std::printf(
        "  %d rank%s (%d x %d)  %9.3f ms  %7.2f GFLOP/s  scaled error %.1e (%s rows, "
        "tolerance %.1e)  %s\n",
        ranks, ranks == 1 ? "" : "s", grid[0], grid[1], best * 1e3,
        2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / best / 1e9,
        err, sample ? "64 sampled" : "all", apps::summa_tolerance(k), ok ? "ok" : "WRONG");
  }
  return ok ? 0 : 2;
}

// The runtime's scope holds the whole run: an error is printed before the runtime ends
// (apps::report_errors), since a rank that fails alone ends the job there.
int app_main(int argc, char** argv) {
  dist::runtime rt(argc, argv);
  return apps::report_errors("summa", [&] { return run(rt, argc, argv); });
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("summa", argc, argv, app_main);
}
