#include "thread_array/peer.hpp"

namespace strata::bench::omp {

void region_with_barriers(int threads, int barriers) {
#pragma omp parallel num_threads(threads)
  for (int b = 0; b < barriers; ++b) {
#pragma omp barrier
  }
}

}  // namespace strata::bench::omp
