#include "launch/peer.hpp"

namespace strata::bench::omp {

void empty_parallel_for(int threads) {
#pragma omp parallel for num_threads(threads)
  for (int i = 0; i < threads; ++i) asm volatile("" ::: "memory");  // a body the compiler keeps
}

}  // namespace strata::bench::omp
