// BabelStream's five kernels as raw OpenMP loops: the peer of bench/stream/strata.cpp.
#pragma once

#include <cstddef>

namespace strata::bench::omp {

void init(std::ptrdiff_t n, double* a, double* b, double* c, int threads);
void copy(std::ptrdiff_t n, double const* a, double* c, int threads);
void scale(std::ptrdiff_t n, double s, double* b, double const* c, int threads);
void add(std::ptrdiff_t n, double const* a, double const* b, double* c, int threads);
void triad(std::ptrdiff_t n, double s, double* a, double const* b, double const* c, int threads);
double dot(std::ptrdiff_t n, double const* a, double const* b, int threads);

}  // namespace strata::bench::omp
