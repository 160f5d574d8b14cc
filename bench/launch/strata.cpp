// Launch overhead: an empty kernel launched and waited for, against an empty
// `omp parallel for`, per launch, at 1 and all threads.
#include "harness.hpp"
#include "launch/peer.hpp"

namespace strata::bench {
namespace {

struct empty_k {
  template <class S>
  void operator()(S const&) const {
    asm volatile("" ::: "memory");
  }
};

void run_launch(context& ctx) {
  int const launches = ctx.opts().quick ? 200 : 5000;
  for (int t : ctx.thread_counts()) {
    std::vector<backend_id> backends{backend_id::threads};
    if (t == 1) backends.insert(backends.begin(), backend_id::serial);
#if defined(_OPENMP)
    backends.push_back(backend_id::openmp);
#endif
    for (auto b : backends) {
      auto where = on(ctx.cpus(t), b);
      auto s = grid(t);  // one block per thread: nothing but the launch itself
      auto [ts, tp] = compare(
          ctx.opts().repeats,
          [&] {
            for (int i = 0; i < launches; ++i) launch(where, s, empty_k{}).wait();
          },
          [&] {
            for (int i = 0; i < launches; ++i) omp::empty_parallel_for(t);
          });
      result r{"launch",
               std::string(to_string(b)) + "/" + std::to_string(t),
               double(launches),
               ts / launches,
               "omp-parallel-for/" + std::to_string(t),
               tp / launches};
      r.extra = {
          {"threads", t}, {"strata_us", ts / launches * 1e6}, {"peer_us", tp / launches * 1e6}};
      ctx.report(r);
    }
  }
}

registrar launch_r("launch", "launch+wait of an empty kernel vs an empty omp parallel for",
                   run_launch);

}  // namespace
}  // namespace strata::bench
