// Random numbers in a kernel: fill N doubles uniform in [0, 1) with Philox4x32-10
// (include/strata/exec/random.hpp) on the threads backend, against an OpenMP loop where
// each thread draws from its own std::mt19937_64 (what a user would otherwise write).
// The two do not produce the same numbers: Strata's depend only on (seed, index), the
// peer's on the thread count too. Both are checked to be in [0, 1) with mean 1/2.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"
#include "random/peer.hpp"

namespace strata::bench {
namespace {

// One Philox block (four 32-bit words) gives two doubles: work item j fills 2j and 2j+1,
// so the numbers do not depend on the work division.
struct fill_uniform_k {
  template <class S>
  void operator()(S const& self, std::uint64_t seed, index_t pairs, double* x) const {
    for (auto j : self.elements(pairs)) {
      philox4x32 g(seed, static_cast<std::uint64_t>(j));
      x[2 * j] = uniform_real<double>(g);
      x[2 * j + 1] = uniform_real<double>(g);
    }
  }
};

void check(std::vector<double> const& x, char const* who) {
  double sum = 0;
  for (double v : x) {
    if (!(v >= 0.0 && v < 1.0))
      throw std::runtime_error(std::string("rng benchmark: ") + who + " drew " + std::to_string(v) +
                               ", outside [0, 1)");
    sum += v;
  }
  double const mean = sum / static_cast<double>(x.size());
  // 6 standard errors of the mean of N uniforms (N >= 2^20: 0.0017).
  if (std::abs(mean - 0.5) > 6 * std::sqrt(1.0 / 12 / static_cast<double>(x.size())))
    throw std::runtime_error(std::string("rng benchmark: ") + who + "'s mean is " +
                             std::to_string(mean));
}

void run_rng(context& ctx) {
  index_t const n = ctx.opts().quick ? index_t{1} << 20 : index_t{1} << 24;
  std::uint64_t const seed = 20240521;
  std::vector<double> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
  for (int t : ctx.thread_counts()) {
    auto where = on(ctx.cpus(t), backend_id::threads);
    auto s = divide_work(where, n / 2);
    auto [ts, tp] = compare(
        ctx.opts().repeats,
        [&] { launch(where, s, fill_uniform_k{}, seed, n / 2, x.data()).wait(); },
        [&] { omp::fill_uniform_mt(n, y.data(), seed, t); });
    check(x, "strata");
    check(y, "the peer");
    // Strata's numbers are a function of the index: spot-check against a direct draw.
    for (index_t j : {index_t{0}, n / 2 - 1, n / 7}) {
      philox4x32 g(seed, static_cast<std::uint64_t>(j));
      double const want = uniform_real<double>(g);
      if (x[static_cast<std::size_t>(2 * j)] != want)
        throw std::runtime_error("rng benchmark: element " + std::to_string(2 * j) +
                                 " is not Philox's");
    }
    result r{"rng", "threads/" + std::to_string(t),        double(n),
             ts,    "omp-mt19937_64/" + std::to_string(t), tp};
    r.extra = {{"threads", t},
               {"strata_gsamples_per_s", double(n) / ts / 1e9},
               {"peer_gsamples_per_s", double(n) / tp / 1e9}};
    r.note =
        "not bit-identical: Strata's Philox4x32-10 numbers depend only on (seed, index), the "
        "peer's std::mt19937_64 per OpenMP thread (seed + thread number) on the thread count";
    ctx.report(r);
  }
}

registrar rng_r("rng",
                "fill 2^24 doubles uniform in [0,1): Philox in a kernel vs std::mt19937_64 per "
                "OpenMP thread",
                run_rng);

}  // namespace
}  // namespace strata::bench
