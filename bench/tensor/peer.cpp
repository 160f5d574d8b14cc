// Hand-written OpenMP peers of the tensor benchmarks (see peer.hpp).
#include "tensor/peer.hpp"

#include <omp.h>

#include <utility>

namespace strata::bench::omp {

void tensor_saxpy(std::ptrdiff_t n, float a, float const* x, float* y, int threads) {
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (std::ptrdiff_t i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}

void jacobi(std::ptrdiff_t n, double* a, double* b, int iterations, int threads) {
  std::ptrdiff_t const w = n + 2;
  double* in = a;
  double* out = b;
  for (int it = 0; it < iterations; ++it) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::ptrdiff_t i = 1; i <= n; ++i) {
      double const* up = in + (i - 1) * w;
      double const* mid = in + i * w;
      double const* down = in + (i + 1) * w;
      double* o = out + i * w;
#pragma omp simd
      for (std::ptrdiff_t j = 1; j <= n; ++j)
        o[j] = 0.25 * (up[j] + down[j] + mid[j - 1] + mid[j + 1]);
    }
    std::swap(in, out);
  }
}

double jacobi_with_change(std::ptrdiff_t n, double* a, double* b, int iterations, int threads) {
  std::ptrdiff_t const w = n + 2;
  double* in = a;
  double* out = b;
  double change = 0;
  for (int it = 0; it < iterations; ++it) {
    change = 0;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(max : change)
    for (std::ptrdiff_t i = 1; i <= n; ++i) {
      double const* up = in + (i - 1) * w;
      double const* mid = in + i * w;
      double const* down = in + (i + 1) * w;
      double* o = out + i * w;
      double c = 0;
#pragma omp simd reduction(max : c)
      for (std::ptrdiff_t j = 1; j <= n; ++j) {
        double const v = 0.25 * (up[j] + down[j] + mid[j - 1] + mid[j + 1]);
        double const d = v > mid[j] ? v - mid[j] : mid[j] - v;
        c = d > c ? d : c;
        o[j] = v;
      }
      change = c > change ? c : change;
    }
    std::swap(in, out);
  }
  return change;
}

}  // namespace strata::bench::omp
