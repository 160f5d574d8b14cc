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

}  // namespace strata::detail
