// What a user writes without Strata's tensors: OpenMP loops over plain arrays. The peers
// of bench/tensor/strata.cpp.
#pragma once

#include <cstddef>

namespace strata::bench::omp {

/// y[i] = a x[i] + y[i] for i < n on `threads` OpenMP threads.
void tensor_saxpy(std::ptrdiff_t n, float a, float const* x, float* y, int threads);

/// `iterations` Jacobi sweeps of the 5-point average over the interior of an
/// (n+2) x (n+2) grid whose outer ring stays fixed, alternating between a and b (an even
/// count leaves the result in a).
void jacobi(std::ptrdiff_t n, double* a, double* b, int iterations, int threads);

/// The same sweeps as a solver to a tolerance does them (the hybrid scheme's CPU code):
/// each sweep also finds the largest change of a cell; returns that of the last sweep.
double jacobi_with_change(std::ptrdiff_t n, double* a, double* b, int iterations, int threads);

}  // namespace strata::bench::omp
