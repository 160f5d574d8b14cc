// Thread arrays (PARRAY §4.3, §4.10): a `pthd` array launched and joined, and its threads
// meeting at syncs, against the OpenMP code a user would write instead (a parallel region,
// `omp barrier`), both with as many threads as the machine has PUs.
#include <strata/strata.hpp>

#include <thread>

#include "harness.hpp"
#include "thread_array/peer.hpp"

namespace strata::bench {
namespace {

void run_thread_array(context& ctx) {
  int const threads = ctx.thread_counts().back();
  thread_array<thread_kind::pthd> P{threads};
  struct variant {
    char const* name;
    int syncs;
  };
  int const many = ctx.opts().quick ? 100 : 10000;
  for (auto v : {variant{"launch", 0}, variant{"sync", many}}) {
    int const launches = v.syncs == 0 ? (ctx.opts().quick ? 10 : 200) : 1;
    auto [ts, tp] = compare(
        ctx.opts().repeats,
        [&] {
          for (int l = 0; l < launches; ++l)
            for_threads(P, [&](thread_context const& t) {
              for (int s = 0; s < v.syncs; ++s) t.sync();
            });
        },
        [&] {
          for (int l = 0; l < launches; ++l) omp::region_with_barriers(threads, v.syncs);
        });
    result r{"thread-array",
             std::string("pthd-") + v.name + "/" + std::to_string(threads),
             double(v.syncs == 0 ? launches : v.syncs),
             ts,
             std::string("omp-") + (v.syncs == 0 ? "parallel" : "barrier") + "/" +
                 std::to_string(threads),
             tp};
    r.extra = {{"threads", threads}, {"launches", launches}, {"syncs_per_launch", v.syncs}};
    r.note = v.syncs == 0 ? "size = launches of an empty thread array (fork and join)"
                          : "size = syncs of the whole array in one launch";
    ctx.report(r);
  }
}

registrar thread_array_r("thread-array",
                         "pthd thread array launch and sync vs an OpenMP region and barrier",
                         run_thread_array);

}  // namespace
}  // namespace strata::bench
