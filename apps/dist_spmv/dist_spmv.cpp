// Distributed sparse matrix-vector product over MPI ranks (Phalanx §V-B): every rank makes
// (or reads) the same global CSR matrix, keeps the rows it owns (split over the ranks by
// nonzeros), and the product exchanges only the x entries each rank's rows need from the
// others, overlapping the product of the rows' local part (apps/common/dist_spmv.hpp).
// Each rank's y rows are checked against the serial reference product of the whole
// matrix. Public API only.
//
//   mpiexec -n P dist_spmv [--mtx FILE | --laplacian2d N | --laplacian3d N | --power-law N]
//                          [--average D] [--places NAME] [--format auto|rule|csr] [--repeat R]
//                          [--strata-sim-devices=2]
//
// NAME is host, host:K, sim or host+sim (apps/common/places.hpp), this rank's places;
// default host. --format csr reads the rows as CSR; auto (the default) lets host parts
// read them in row groups or value-indexed, with column offsets, where they allow, or in
// column blocks where
// their columns are scattered and a timed trial finds them faster; rule skips the trial
// (apps/common/spmv.hpp). Rank 0
// prints. Exits 1 with a message for bad arguments or files, 2 when a product differs from the
// reference.
#include "dist_spmv.hpp"
#include "cli.hpp"
#include "places.hpp"
#include "sparse.hpp"

#include <array>
#include <strata/dist.hpp>
#include <strata/strata.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace {

namespace dist = strata::dist;

apps::args const cli(
    "usage: mpiexec -n P dist_spmv [--mtx FILE | --laplacian2d N | --laplacian3d N | --power-law "
    "N] [--average D] [--places host|host:K|sim|host+sim] [--format auto|rule|csr] [--repeat R]");

std::string join(std::vector<int> const& v) {
  std::string s;
  for (auto r : v) s += (s.empty() ? "" : ",") + std::to_string(r);
  return "[" + s + "]";
}

}  // namespace

namespace {

int run(dist::runtime const& rt, int argc, char** argv) {
  std::string source = "laplacian3d", file, place_name = "host";
  long long size = 64, repeat = 10;
  double average = 8;
  apps::spmv_format format = apps::spmv_format::automatic;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (cli.help(arg, rt.rank() == 0)) return 0;
    auto value = [&]() -> char const* {
      if (i + 1 >= argc) cli.fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--mtx") {
      source = "mtx";
      file = value();
    } else if (arg == "--laplacian2d" || arg == "--laplacian3d" || arg == "--power-law") {
      // The matrices' nonzeros (5 N^2, 7 N^3, up to N^2) must fit 32-bit CSR indices.
      source = arg.substr(2);
      size = cli.whole(arg, value(), 1, apps::generator_limit(source));
    } else if (arg == "--average") {
      average = cli.real(arg, value());
    } else if (arg == "--places") {
      place_name = value();
    } else if (arg == "--format") {
      format =
          std::array{apps::spmv_format::automatic, apps::spmv_format::by_rule,
                     apps::spmv_format::csr}[cli.one_of(arg, value(), {"auto", "rule", "csr"})];
    } else if (arg == "--repeat") {
      repeat = cli.whole(arg, value());
    } else {
      cli.fail("unknown argument '" + arg + "'");
    }
  }
  int const me = rt.rank(), ranks = rt.size();

  // Every rank makes the same matrix (the generators are deterministic) and keeps its
  // rows; the whole matrix also gives the reference product each rank checks against.
  auto t0 = std::chrono::steady_clock::now();
  apps::csr_matrix a;
  std::string what;
  if (source == "mtx") {
    apps::matrix_market_header h;
    a = apps::read_matrix_market_file(file, &h);
    what = file + " (" + h.field + ", " + h.symmetry + ")";
  } else if (source == "laplacian2d") {
    a = apps::laplacian_2d(static_cast<apps::csr_index>(size), static_cast<apps::csr_index>(size));
    what = "2-D Laplacian " + std::to_string(size) + "^2";
  } else if (source == "laplacian3d") {
    auto n = static_cast<apps::csr_index>(size);
    a = apps::laplacian_3d(n, n, n);
    what = "3-D Laplacian " + std::to_string(size) + "^3";
  } else {
    a = apps::random_power_law(static_cast<apps::csr_index>(size), average, 2024);
    what = "power-law rows, average " + apps::number_text(average);
  }
  if (a.rows != a.cols)
    throw strata::invalid_argument("dist_spmv: the matrix is " + std::to_string(a.rows) + " x " +
                                   std::to_string(a.cols) +
                                   "; x is split like the rows, so it must be square");
  double const t_make =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (me == 0)
    std::printf("dist_spmv: %s: %d x %d, %lld nonzeros, %.1f MB, %d rank%s (made in %.2f s)\n",
                what.c_str(), a.rows, a.cols, static_cast<long long>(a.nnz()), a.bytes() / 1e6,
                ranks, ranks == 1 ? "" : "s", t_make);

  auto const bounds = apps::split_over_ranks(a, ranks);
  auto block = apps::extract_rows(a, bounds[static_cast<std::size_t>(me)],
                                  bounds[static_cast<std::size_t>(me) + 1]);
  auto where = apps::places_named(rt.machine(), place_name);
  apps::distributed_spmv product(rt.world(), a.rows, block, where, format);

  std::vector<double> x_all(static_cast<std::size_t>(a.cols)),
      want(static_cast<std::size_t>(a.rows));
  for (std::size_t i = 0; i < x_all.size(); ++i) x_all[i] = 1.0 + static_cast<double>(i % 7) / 8;
  apps::reference_spmv(a, x_all.data(), want.data());
  auto const first = static_cast<std::size_t>(block.first_row);
  auto const rows = static_cast<std::size_t>(block.rows.rows);
  std::vector<double> x(x_all.begin() + static_cast<std::ptrdiff_t>(first),
                        x_all.begin() + static_cast<std::ptrdiff_t>(first + rows));
  std::vector<double> y(rows, -1.0);

  // A product's time is the slowest rank's: line the ranks up before each one.
  double best = 1e300;
  for (long long r = 0; r < repeat; ++r) {
    dist::barrier(rt.world()).wait();
    auto s = std::chrono::steady_clock::now();
    product.multiply(x.data(), y.data());
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count(),
           slowest = 0;
    dist::all_reduce(rt.world(), std::span<double const>(&t, 1), std::span(&slowest, 1),
                     dist::reduce_op::max)
        .wait();
    best = std::min(best, slowest);
  }
  double err = apps::max_scaled_difference(block, x_all.data(), y.data(), want.data() + first);
  // MPI's max of a NaN and a number may be either: reduce the error with NaN as +inf,
  // and whether any rank had a NaN, so that one rank's NaN is every rank's verdict.
  bool const nan = std::isnan(err);
  double const mine_err[2] = {nan ? std::numeric_limits<double>::infinity() : err, nan ? 1.0 : 0.0};
  double reduced[2] = {0, 0};
  dist::all_reduce(rt.world(), std::span<double const>(mine_err, 2), std::span(reduced, 2),
                   dist::reduce_op::max)
      .wait();
  double const worst = reduced[1] > 0 ? std::numeric_limits<double>::quiet_NaN() : reduced[0];

  // Rank 0 reports every rank's share: rows, nonzeros, ghosts and neighbours.
  auto const info = product.info();
  std::vector<std::int64_t> mine = {info.first_row,
                                    info.rows,
                                    info.local_nonzeros,
                                    info.remote_nonzeros,
                                    info.ghosts,
                                    info.sent,
                                    static_cast<std::int64_t>(info.local_encoding),
                                    static_cast<std::int64_t>(info.remote_encoding)};
  std::size_t const neighbours = mine.size();
  for (int r = 0; r < ranks; ++r)
    mine.push_back(std::count(info.receives_from.begin(), info.receives_from.end(), r));
  std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(ranks));
  dist::all_gather(rt.world(), std::span<std::int64_t const>(mine), std::span(all)).wait();
  // Each row is the reference's sum in another order (local part, then remote part):
  // the difference is measured against the magnitudes summed (max_scaled_difference).
  bool const ok = worst <= 1e-12;
  if (me == 0) {
    for (int r = 0; r < ranks; ++r) {
      auto const* v = all.data() + static_cast<std::size_t>(r) * mine.size();
      std::vector<int> from;
      for (int q = 0; q < ranks; ++q)
        if (v[neighbours + static_cast<std::size_t>(q)]) from.push_back(q);
      auto const encoding = [](std::int64_t e) {
        return std::string(apps::to_string(static_cast<apps::spmv_encoding>(e)));
      };
      std::printf(
          "  rank %d: rows [%lld, %lld), %lld local (%s) + %lld remote (%s) nonzeros, %lld "
          "ghosts from %s, %lld x entries sent\n",
          r, static_cast<long long>(v[0]), static_cast<long long>(v[0] + v[1]),
          static_cast<long long>(v[2]), encoding(v[6]).c_str(), static_cast<long long>(v[3]),
          encoding(v[7]).c_str(), static_cast<long long>(v[4]), join(from).c_str(),
          static_cast<long long>(v[5]));
    }
    std::printf("  %d rank%s x %-9s %8.3f ms  %6.2f GFLOP/s  max scaled error %.1e  %s\n", ranks,
                ranks == 1 ? "" : "s", place_name.c_str(), best * 1e3,
                2.0 * static_cast<double>(a.nnz()) / best / 1e9, worst, ok ? "ok" : "WRONG");
  }
  return ok ? 0 : 2;
}

// The runtime's scope holds the whole run: an error is printed before the runtime ends
// (apps::report_errors), since a rank that fails alone ends the job there.
int app_main(int argc, char** argv) {
  dist::runtime rt(argc, argv);
  return apps::report_errors("dist_spmv", [&] { return run(rt, argc, argv); });
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("dist_spmv", argc, argv, app_main);
}
