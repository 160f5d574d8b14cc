// The loops a user would write with OpenMP (BabelStream's OpenMP version).
#include "stream/peer.hpp"

namespace strata::bench::omp {

void init(std::ptrdiff_t n, double* a, double* b, double* c, int threads) {
#pragma omp parallel for num_threads(threads)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    a[i] = 0.1;
    b[i] = 0.2;
    c[i] = 0.0;
  }
}

void copy(std::ptrdiff_t n, double const* a, double* c, int threads) {
#pragma omp parallel for num_threads(threads)
  for (std::ptrdiff_t i = 0; i < n; ++i) c[i] = a[i];
}

void scale(std::ptrdiff_t n, double s, double* b, double const* c, int threads) {
#pragma omp parallel for num_threads(threads)
  for (std::ptrdiff_t i = 0; i < n; ++i) b[i] = s * c[i];
}

void add(std::ptrdiff_t n, double const* a, double const* b, double* c, int threads) {
#pragma omp parallel for num_threads(threads)
  for (std::ptrdiff_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

void triad(std::ptrdiff_t n, double s, double* a, double const* b, double const* c, int threads) {
#pragma omp parallel for num_threads(threads)
  for (std::ptrdiff_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

double dot(std::ptrdiff_t n, double const* a, double const* b, int threads) {
  double sum = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : sum)
  for (std::ptrdiff_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace strata::bench::omp
