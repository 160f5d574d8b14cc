// The openmp backend's parallel region (include/strata/exec/openmp/backend.hpp): compiled
// with OpenMP into libstrata, so that every translation unit of a program reaches the same
// backend whatever its own compile flags.
#include <strata/exec/openmp/backend.hpp>

#include <omp.h>

namespace strata::detail {

void openmp_parallel(int threads, openmp_body body, void* ctx) {
#pragma omp parallel num_threads(threads)
  body(ctx, omp_get_thread_num(), omp_get_num_threads());
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
