// Sparse matrix-vector product over several places (Phalanx §V-A): a CSR matrix read from
// a Matrix Market file or generated, its rows partitioned over host places and sim
// devices, each part multiplied by one kernel source, the result merged and checked
// against a serial reference product. Public API only (apps/common holds the shared code).
//
//   spmv [--mtx FILE | --laplacian2d N | --laplacian3d N | --power-law N] [--average D]
//        [--places NAME]... [--format auto|rule|csr] [--repeat R] [--strata-sim-devices=2]
//
// NAME is host, host:K, sim, host+sim (apps/common/places.hpp); by default every set this
// machine has. --format csr reads the matrix as it is; auto (the default) lets host parts
// read it in row groups (eight rows of one stencil pattern as vectors) or value-indexed,
// with column offsets, where it allows, and in column blocks where
// its columns are scattered over an x larger than the L2 and a timed trial finds them
// faster; rule skips the trial (apps/common/spmv.hpp, spmv_format). Exits 1 with a message for bad
// arguments or files, 2 when a product differs from the reference.
#include "spmv.hpp"
#include "cli.hpp"
#include "places.hpp"
#include "sparse.hpp"

#include <array>
#include <strata/strata.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

apps::args const cli(
    "usage: spmv [--mtx FILE | --laplacian2d N | --laplacian3d N | --power-law N] [--average D] "
    "[--places host|host:K|sim|host+sim]... [--format auto|rule|csr] [--repeat R]");

}  // namespace

namespace {

int app_main(int argc, char** argv) {
  strata::runtime rt(argc, argv);
  std::string source = "laplacian3d", file;
  long long size = 64, repeat = 10;
  double average = 8;
  std::vector<std::string> place_names;
  apps::spmv_format format = apps::spmv_format::automatic;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (cli.help(arg)) return 0;
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
      place_names.push_back(value());
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
  strata::place machine = rt.machine();
  if (place_names.empty()) {
    place_names = {"host",
                   "host:" + std::to_string(machine.slice(strata::isa::host).processors().size())};
    if (!machine.slice(strata::isa::sim).descendants(strata::place_type::device).empty())
      place_names.insert(place_names.end(), {"sim", "host+sim"});
  }

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
  double const t_make =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("spmv: %s: %d x %d, %lld nonzeros, %.1f MB (made in %.2f s)\n", what.c_str(), a.rows,
              a.cols, static_cast<long long>(a.nnz()), a.bytes() / 1e6, t_make);

  std::vector<double> x(static_cast<std::size_t>(a.cols)), want(static_cast<std::size_t>(a.rows));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 7) / 8;
  apps::reference_spmv(a, x.data(), want.data());

  bool all_ok = true;
  for (auto const& name : place_names) {
    auto where = apps::places_named(machine, name);
    apps::partitioned_spmv product(a, where, format);
    std::vector<double> y(want.size(), -1.0);
    double best = 1e300;
    for (long long r = 0; r < repeat; ++r) {
      auto s = std::chrono::steady_clock::now();
      product.multiply(x.data(), y.data());
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
    }
    double err = apps::max_relative_difference(y, want);
    // Each row is summed in the reference's order; only a compiler's contraction of
    // a multiply-add into an FMA may change the last bits.
    bool ok = err <= 1e-12;
    all_ok = all_ok && ok;
    // GB/s of what the parts read: their rows as encoded, x and y once.
    double bytes = 8.0 * (a.rows + a.cols);
    for (auto const& p : product.parts()) bytes += p.matrix_bytes;
    std::printf("  %-9s %8.3f ms  %6.2f GFLOP/s  %6.2f GB/s  max rel. error %.1e  %s\n",
                name.c_str(), best * 1e3, 2.0 * static_cast<double>(a.nnz()) / best / 1e9,
                bytes / best / 1e9, err, ok ? "ok" : "WRONG");
    for (auto const& p : product.parts())
      std::printf("            %-14s rows [%d, %d), %s, %.1f MB\n",
                  apps::describe(strata::target(p.where)).c_str(), p.first_row, p.last_row,
                  std::string(apps::to_string(p.encoding)).c_str(), p.matrix_bytes / 1e6);
  }
  return all_ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("spmv", argc, argv, app_main);
}
