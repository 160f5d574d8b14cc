#pragma once

namespace strata::bench::omp {
/// An OpenMP region of `threads` threads meeting at `barriers` barriers (`omp barrier`).
void region_with_barriers(int threads, int barriers);
}  // namespace strata::bench::omp
