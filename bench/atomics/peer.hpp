// The peer of bench/atomics/strata.cpp: `#pragma omp atomic` in an OpenMP loop.
#pragma once

#include <cstddef>

namespace strata::bench::omp {

/// n increments of one counter by an `omp parallel for` of `threads` threads, each an
/// `omp atomic` update.
void atomic_count(std::ptrdiff_t n, long long* counter, int threads);

}  // namespace strata::bench::omp
