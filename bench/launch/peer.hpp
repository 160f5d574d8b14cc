#pragma once

namespace strata::bench::omp {
/// One `omp parallel for` over `threads` empty iterations: the cost of a fork and join.
void empty_parallel_for(int threads);
}  // namespace strata::bench::omp
