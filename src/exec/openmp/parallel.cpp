// The openmp backend's parallel region (include/strata/exec/openmp/backend.hpp): compiled
// with OpenMP into libstrata, so that every translation unit of a program reaches the same
// backend whatever its own compile flags.
#include <strata/exec/openmp/backend.hpp>

#include "exec/threads/pool.hpp"

#include <omp.h>

#include <atomic>

namespace strata::detail {

void openmp_parallel(int threads, openmp_body body, void* ctx) {
  // A pool worker that opens a region must not sit in the region's closing barrier while
  // its team threads wait for Strata work (a graph, a launch on another PU) that only
  // the workers run: with every worker in such a region nobody would run it (an outside
  // probe's hang, session 31). The worker waits for its team through Strata's wait,
  // which runs tasks and jobs meanwhile; the barrier is then reached by all at once.
  if (threads <= 1 || !is_pool_worker()) {
#pragma omp parallel num_threads(threads)
    body(ctx, omp_get_thread_num(), omp_get_num_threads());
    return;
  }
  std::atomic<int> finished{0};
  event all = event::pending();
#pragma omp parallel num_threads(threads)
  {
    int const nth = omp_get_num_threads();
    body(ctx, omp_get_thread_num(), nth);
    if (finished.fetch_add(1, std::memory_order_acq_rel) + 1 == nth) all.complete();
    if (omp_get_thread_num() == 0) try {
        all.wait();
      } catch (...) {  // completed without an error: nothing to report
      }
  }
}

bool openmp_built() noexcept {
  return true;
}

// For src/exec/thread_array.cpp: an omp thread array started inside a region is opened by
// a team thread (a nested region would get one thread).
bool openmp_in_parallel() noexcept {
  return omp_in_parallel() != 0;
}

}  // namespace strata::detail
