// Contended atomics: n increments of one counter with strata::atomic_add from a kernel
// on the threads backend, against `#pragma omp atomic` in an OpenMP loop. At one thread
// both measure an uncontended locked add; at two, both threads fight over one cache line.
#include <stdexcept>
#include <string>

#include "atomics/peer.hpp"
#include "harness.hpp"

namespace strata::bench {
namespace {

struct count_k {
  template <class S>
  void operator()(S const& self, index_t n, long long* counter) const {
    for ([[maybe_unused]] auto i : self.elements(n)) atomic_add(counter, 1);
  }
};

void run_atomics(context& ctx) {
  index_t const n = ctx.opts().quick ? index_t{1} << 16 : index_t{1} << 22;
  for (int t : ctx.thread_counts()) {
    auto where = on(ctx.cpus(t), backend_id::threads);
    auto s = divide_work(where, n);
    long long strata_count = 0, peer_count = 0;
    auto [ts, tp] = compare(
        ctx.opts().repeats,
        [&] {
          strata_count = 0;
          launch(where, s, count_k{}, n, &strata_count).wait();
        },
        [&] {
          peer_count = 0;
          omp::atomic_count(n, &peer_count, t);
        });
    if (strata_count != n || peer_count != n)
      throw std::runtime_error("atomics benchmark: counted " + std::to_string(strata_count) +
                               " (strata) and " + std::to_string(peer_count) + " (peer), not " +
                               std::to_string(n));
    result r{"atomics", "threads/" + std::to_string(t),    double(n),
             ts,        "omp-atomic/" + std::to_string(t), tp};
    r.extra = {{"threads", t},
               {"strata_ns_per_op", ts / double(n) * 1e9},
               {"peer_ns_per_op", tp / double(n) * 1e9}};
    ctx.report(r);
  }
}

registrar atomics_r("atomics", "n atomic_add on one counter from a kernel vs #pragma omp atomic",
                    run_atomics);

}  // namespace
}  // namespace strata::bench
