#include "random/peer.hpp"

#include <omp.h>

#include <random>

namespace strata::bench::omp {

void fill_uniform_mt(std::ptrdiff_t n, double* x, std::uint64_t seed, int threads) {
#pragma omp parallel num_threads(threads)
  {
    std::mt19937_64 gen(seed + static_cast<std::uint64_t>(omp_get_thread_num()));
    std::uniform_real_distribution<double> dist(0.0, 1.0);
#pragma omp for schedule(static)
    for (std::ptrdiff_t i = 0; i < n; ++i) x[i] = dist(gen);
  }
}

}  // namespace strata::bench::omp
