// Single-source tiled GEMM (seeds: alpaka §4.2.2, one DGEMM kernel tiled through block
// shared memory with the element level for the vector unit; PARRAY §7.1, the array types
// are the tiling): C = alpha A B + beta C, row-major, in single and double precision, by
// the kernel of apps/common/gemm_kernel.hpp on every backend this machine has (serial,
// threads, openmp on the host; sim devices). Each product is checked against a product
// accumulated in long double on sampled rows; the rate is 2 m n k / time.
//
//   gemm [--size N | --mnk M,N,K] [--precision single|double|both]
//        [--backend serial|threads|openmp|sim]... [--alpha A] [--beta B] [--repeat R]
//
// Exits 1 with a message for bad arguments, 2 when a product differs from the reference.
#include "gemm.hpp"
#include "cli.hpp"
#include "places.hpp"

#include <strata/strata.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

namespace {

char const* const usage_text =
    "usage: gemm [--size N | --mnk M,N,K] [--precision single|double|both]\n"
    "            [--backend serial|threads|openmp|sim]... [--alpha A] [--beta B] [--repeat R]\n"
    "  C = alpha A B + beta C (row-major) by one kernel source on each backend;\n"
    "  --size N      square matrices (default 1024)\n"
    "  --mnk M,N,K   A is M x K, B K x N, C M x N\n"
    "  --precision   single (sgemm), double (dgemm) or both (default)\n"
    "  --backend     repeatable; default: serial, threads, openmp and sim when there are\n"
    "                sim devices (--strata-sim-devices=2)\n"
    "  --alpha, --beta  the scalars (default 1 and 0.5)\n"
    "  --repeat R    best of R runs (default 3)";

apps::args const cli(usage_text);

struct options {
  strata::index_t m = 1024, n = 1024, k = 1024;
  bool single = true, dbl = true;
  std::vector<std::string> backends;
  double alpha = 1, beta = 0.5;
  long long repeat = 3;
};

// Values in [-1, 1) from a counter (the same matrices on every backend and run).
template <class T>
std::vector<T> random_matrix(strata::index_t rows, strata::index_t cols, std::uint64_t seed) {
  std::vector<T> v(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < v.size(); ++i) {
    strata::philox4x32 g(seed, i);
    v[i] = static_cast<T>(2 * strata::uniform_real<double>(g) - 1);
  }
  return v;
}

template <class T>
bool run(strata::place const& machine, options const& o) {
  char const* name = sizeof(T) == 4 ? "sgemm" : "dgemm";
  auto const a = random_matrix<T>(o.m, o.k, 1), b = random_matrix<T>(o.k, o.n, 2),
             c0 = random_matrix<T>(o.m, o.n, 3);
  auto const alpha = static_cast<T>(o.alpha), beta = static_cast<T>(o.beta);
  auto const rows = apps::rows_to_check(o.m);
  // A correct sum of k products errs by at most about k units of roundoff of the sum of
  // their magnitudes; twice that is the bound (plus the scaling by alpha and beta).
  double const bound = 2.0 * static_cast<double>(o.k + 2) * std::numeric_limits<T>::epsilon();
  bool all_ok = true;
  auto host = machine.slice(strata::isa::host);
  auto sims = machine.slice(strata::isa::sim).descendants(strata::place_type::device);
  for (auto const& backend : o.backends) {
    std::vector<strata::target> where;
    if (backend == "sim") {
      for (auto const& d : sims) where.emplace_back(d);
    } else {
      where.emplace_back(host, *strata::parse_backend(backend));
    }
    for (auto const& t : where) {
      std::vector<T> c = c0;
      auto const plan = apps::plan_gemm<T>(t, o.m, o.n);
      double best = 1e300;
      try {
        for (long long r = 0; r < o.repeat; ++r) {
          std::copy(c0.begin(), c0.end(), c.begin());
          auto s = std::chrono::steady_clock::now();
          apps::gemm<T>(t, o.m, o.n, o.k, alpha, a.data(), o.k, b.data(), o.n, beta, c.data(), o.n);
          best = std::min(
              best, std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
        }
      } catch (strata::not_supported const& e) {
        std::printf("  %s %-8s skipped: %s\n", name, backend.c_str(), e.what());
        continue;
      }
      double const err = apps::gemm_error(o.m, o.n, o.k, alpha, a, b, beta, c0, c, rows);
      bool const ok = err <= bound;
      all_ok = all_ok && ok;
      std::printf("  %s %-8s %-12s %9.3f ms %8.2f GFLOP/s  error %.1e (bound %.1e)  %s\n", name,
                  backend.c_str(), apps::describe(t).c_str(), best * 1e3,
                  2.0 * static_cast<double>(o.m) * static_cast<double>(o.n) *
                      static_cast<double>(o.k) / best / 1e9,
                  err, bound, ok ? "ok" : "WRONG");
      std::printf("        %s\n", plan.describe().c_str());
    }
  }
  return all_ok;
}

}  // namespace

namespace {

int app_main(int argc, char** argv) {
  strata::runtime rt(argc, argv);
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) cli.fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::printf("%s\n", usage_text);
      return 0;
    } else if (arg == "--size") {
      o.m = o.n = o.k = cli.whole(arg, value(), 1, 1 << 20);
    } else if (arg == "--mnk") {
      std::string v = value();
      auto c1 = v.find(','), c2 = v.find(',', c1 == std::string::npos ? c1 : c1 + 1);
      if (c1 == std::string::npos || c2 == std::string::npos)
        cli.fail("--mnk '" + v + "' is not M,N,K");
      o.m = cli.whole("--mnk", v.substr(0, c1), 1, 1 << 20);
      o.n = cli.whole("--mnk", v.substr(c1 + 1, c2 - c1 - 1), 1, 1 << 20);
      o.k = cli.whole("--mnk", v.substr(c2 + 1), 1, 1 << 20);
    } else if (arg == "--precision") {
      std::string v = value();
      if (v != "single" && v != "double" && v != "both")
        cli.fail("--precision '" + v + "' is not single, double or both");
      o.single = v != "double";
      o.dbl = v != "single";
    } else if (arg == "--backend") {
      std::string v = value();
      if (v != "serial" && v != "threads" && v != "openmp" && v != "sim")
        cli.fail("--backend '" + v + "' is not serial, threads, openmp or sim");
      o.backends.push_back(v);
    } else if (arg == "--alpha") {
      o.alpha = cli.real(arg, value());
    } else if (arg == "--beta") {
      o.beta = cli.real(arg, value());
    } else if (arg == "--repeat") {
      o.repeat = cli.whole(arg, value(), 1, 1 << 20);
    } else {
      cli.fail("unknown argument '" + arg + "'");
    }
  }
  // In single precision the scalars must be normal floats: a cast of a larger double is
  // undefined and a subnormal one loses the digits the error bound counts on (an outside
  // probe: --alpha 1e39 reported WRONG).
  if (o.single)
    for (auto [flag, v] : {std::pair{"--alpha", o.alpha}, std::pair{"--beta", o.beta}})
      if (v != 0 && !(std::abs(v) >= std::numeric_limits<float>::min() &&
                      std::abs(v) <= std::numeric_limits<float>::max()))
        cli.fail(std::string(flag) + " " + std::to_string(v) +
                 " is not a normal single-precision number (or 0); expected one for "
                 "--precision single or both");
  // A, B, C0 and C of the larger precision live at once: refuse sizes this machine's
  // memory cannot hold before allocating (rather than a bare std::bad_alloc, or swapping).
  double const need = 8.0 * (static_cast<double>(o.m) * static_cast<double>(o.k) +
                             static_cast<double>(o.k) * static_cast<double>(o.n) +
                             2.0 * static_cast<double>(o.m) * static_cast<double>(o.n));
  double const have =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (have > 0 && need > have)
    cli.fail("the matrices of " + std::to_string(o.m) + " x " + std::to_string(o.k) + " x " +
             std::to_string(o.n) + " need " + std::to_string(static_cast<long long>(need / 1e6)) +
             " MB; this machine has " + std::to_string(static_cast<long long>(have / 1e6)) +
             " MB of memory");
  strata::place machine = rt.machine();
  bool const have_sim =
      !machine.slice(strata::isa::sim).descendants(strata::place_type::device).empty();
  if (o.backends.empty()) {
    o.backends = {"serial", "threads", "openmp"};
    if (have_sim) o.backends.push_back("sim");
  } else if (!have_sim && std::count(o.backends.begin(), o.backends.end(), "sim") > 0) {
    cli.fail("--backend sim: this machine has no sim devices (add --strata-sim-devices=2)");
  }
  std::printf(
      "gemm: C = alpha A B + beta C, A %lld x %lld, B %lld x %lld (alpha %g, beta %g), "
      "best of %lld\n",
      static_cast<long long>(o.m), static_cast<long long>(o.k), static_cast<long long>(o.k),
      static_cast<long long>(o.n), o.alpha, o.beta, o.repeat);
  bool ok = true;
  if (o.single) ok = run<float>(machine, o) && ok;
  if (o.dbl) ok = run<double>(machine, o) && ok;
  return ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("gemm", argc, argv, app_main);
}
