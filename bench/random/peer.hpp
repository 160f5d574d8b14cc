// What a user writes without a counter-based generator: one std::mt19937_64 per OpenMP
// thread. The peer of bench/random/strata.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::bench::omp {

/// x[i] uniform in [0, 1) for i < n: an `omp parallel` region where each thread seeds its
/// own std::mt19937_64 with seed + its thread number and fills its static share of the
/// loop through std::uniform_real_distribution<double>.
void fill_uniform_mt(std::ptrdiff_t n, double* x, std::uint64_t seed, int threads);

}  // namespace strata::bench::omp
