#include "atomics/peer.hpp"

namespace strata::bench::omp {

void atomic_count(std::ptrdiff_t n, long long* counter, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
#pragma omp atomic
    *counter += 1;
  }
}

}  // namespace strata::bench::omp
