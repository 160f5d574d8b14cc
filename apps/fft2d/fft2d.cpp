// Distributed 2-D FFT over MPI ranks (Phalanx §V-B; PARRAY §7.2, Listing 46): a complex
// N0 x N1 array distributed by rows; row FFTs with FFTW, the global transpose as a
// dist::copy into the column-distributed type (apps/common/dist_fft.hpp), column FFTs,
// and optionally the copy back. Runs forward and inverse transforms, checks the forward
// result against a single-rank FFTW 2-D transform of the gathered input and the round
// trip against the input, and reports the slowest rank's times. Public API only.
//
//   mpiexec -n P fft2d [--size N | --n0 N0 --n1 N1] [--transposed-out] [--measure]
//                      [--repeat R] [--no-check]
//
// --transposed-out leaves the forward result distributed by columns (FFTW-MPI's
// FFTW_MPI_TRANSPOSED_OUT) and takes the inverse's input from there; --measure plans with
// FFTW_MEASURE instead of FFTW_ESTIMATE. Rank 0 prints. Exits 1 with a message for bad
// arguments, 2 when a result differs from the reference by more than the tolerance.
#include "cli.hpp"
#include "dist_fft.hpp"

#include <strata/dist.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace {

namespace dist = strata::dist;

apps::args const cli(
    "usage: mpiexec -n P fft2d [--size N | --n0 N0 --n1 N1] [--transposed-out] [--measure] "
    "[--repeat R] [--no-check]");

// The slowest rank's value of t.
double slowest(dist::team const& team, double t) {
  double out = 0;
  dist::all_reduce(team, std::span<double const>(&t, 1), std::span(&out, 1), dist::reduce_op::max)
      .wait();
  return out;
}

}  // namespace

namespace {

int run(dist::runtime const& rt, int argc, char** argv) {
  long long n0 = 1024, n1 = 1024, repeat = 5;
  bool check = true;
  apps::fft2d_options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (cli.help(arg, rt.rank() == 0)) return 0;
    auto value = [&]() -> char const* {
      if (i + 1 >= argc) cli.fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--size") {
      n0 = n1 = cli.whole(arg, value());
    } else if (arg == "--n0") {
      n0 = cli.whole(arg, value());
    } else if (arg == "--n1") {
      n1 = cli.whole(arg, value());
    } else if (arg == "--transposed-out") {
      options.output = apps::fft_layout::transposed;
    } else if (arg == "--measure") {
      options.planning = apps::fft_planning::measure;
    } else if (arg == "--repeat") {
      repeat = cli.whole(arg, value());
    } else if (arg == "--no-check") {
      check = false;
    } else {
      cli.fail("unknown argument '" + arg + "'");
    }
  }
  int const me = rt.rank(), ranks = rt.size();
  auto const& world = rt.world();
  bool const transposed = options.output == apps::fft_layout::transposed;

  auto t0 = std::chrono::steady_clock::now();
  apps::distributed_fft2d fft(world, n0, n1, options);  // plans (and overwrites) first
  double const t_plan =
      slowest(world, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (me == 0)
    std::printf(
        "fft2d: %lld x %lld complex doubles, %d rank%s, %s output, FFTW_%s (planned in "
        "%.2f s)\n",
        n0, n1, ranks, ranks == 1 ? "" : "s", transposed ? "transposed" : "natural",
        options.planning == apps::fft_planning::measure ? "MEASURE" : "ESTIMATE", t_plan);

  apps::fill_fft_test_input(fft.rows());
  std::vector<apps::complex> input, want;  // rank 0: the whole input and its transform
  if (check) {
    input = apps::gather_natural(fft.rows());
    if (me == 0) {
      want = input;
      apps::reference_fft2d(n0, n1, want, -1);
    }
  }

  // A transform's time is the slowest rank's: line the ranks up before each one.
  double best_forward = 1e300, best_inverse = 1e300;
  apps::fft_phases phases_forward, phases_inverse;  // rank 0's, of the best runs
  double forward_error = 0, roundtrip_error = 0;
  for (long long r = 0; r < repeat; ++r) {
    dist::barrier(world).wait();
    auto s = std::chrono::steady_clock::now();
    fft.forward();
    double t =
        slowest(world, std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
    if (t < best_forward) {
      best_forward = t;
      phases_forward = fft.last_phases();
    }
    if (check && r == 0) {
      auto got = apps::gather_natural(fft.output());
      if (me == 0) forward_error = apps::max_relative_difference(got, want);
    }
    dist::barrier(world).wait();
    s = std::chrono::steady_clock::now();
    fft.inverse();
    t = slowest(world, std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
    if (t < best_inverse) {
      best_inverse = t;
      phases_inverse = fft.last_phases();
    }
    if (check && r == 0) {
      auto got = apps::gather_natural(fft.rows());
      if (me == 0) roundtrip_error = apps::max_relative_difference(got, input);
    }
  }
  double const tol = apps::fft_tolerance(n0, n1);
  bool const ok = !check || (forward_error <= tol && roundtrip_error <= tol);
  if (me == 0) {
    double const flops = apps::fft_flops(n0, n1);
    auto show = [&](char const* what, double t, apps::fft_phases const& p) {
      std::printf(
          "  %-7s %9.3f ms  %6.2f GFLOP/s   rank 0: rows %.3f, transpose %.3f, columns %.3f, "
          "scale %.3f ms\n",
          what, t * 1e3, flops / t / 1e9, p.rows * 1e3, p.transpose * 1e3, p.columns * 1e3,
          p.scale * 1e3);
    };
    show("forward", best_forward, phases_forward);
    show("inverse", best_inverse, phases_inverse);
    if (check)
      std::printf(
          "  max relative error: forward vs single-rank FFTW %.1e, inverse(forward(x)) vs x "
          "%.1e (tolerance %.1e)  %s\n",
          forward_error, roundtrip_error, tol, ok ? "ok" : "WRONG");
  }
  // Rank 0 decides; every rank exits alike.
  int verdict = ok ? 0 : 2;
  dist::broadcast(world, std::span(&verdict, 1), 0).wait();
  return verdict;
}

// The runtime's scope holds the whole run: an error is printed before the runtime ends
// (apps::report_errors), since a rank that fails alone ends the job there.
int app_main(int argc, char** argv) {
  dist::runtime rt(argc, argv);
  return apps::report_errors("fft2d", [&] { return run(rt, argc, argv); });
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("fft2d", argc, argv, app_main);
}
