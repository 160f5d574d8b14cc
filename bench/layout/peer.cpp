#include "layout/peer.hpp"

#include <algorithm>
#include <cstring>

#include <omp.h>

namespace strata::bench::layout_peer {

void transpose_naive(std::ptrdiff_t n, double const* a, double* b, int threads) {
#pragma omp parallel for num_threads(threads)
  for (std::ptrdiff_t i = 0; i < n; ++i)
    for (std::ptrdiff_t j = 0; j < n; ++j) b[j * n + i] = a[i * n + j];
}

void window_double(std::ptrdiff_t n, std::ptrdiff_t big, std::ptrdiff_t r0, std::ptrdiff_t c0,
                   double const* in, double* out, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::ptrdiff_t i = 0; i < n; ++i)
    for (std::ptrdiff_t j = 0; j < n; ++j) out[i * n + j] = 2.0 * in[(i + r0) * big + j + c0];
}

void transpose_blocked(std::ptrdiff_t n, double const* a, double* b, int threads) {
  constexpr std::ptrdiff_t tile = 64;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::ptrdiff_t ib = 0; ib < n; ib += tile)
    for (std::ptrdiff_t jb = 0; jb < n; jb += tile) {
      std::ptrdiff_t const ie = std::min(ib + tile, n), je = std::min(jb + tile, n);
      for (std::ptrdiff_t j = jb; j < je; ++j)
        for (std::ptrdiff_t i = ib; i < ie; ++i) b[j * n + i] = a[i * n + j];
    }
}

void copy_bytes(void* dst, void const* src, std::size_t bytes) {
  std::memcpy(dst, src, bytes);
}

void copy_bytes_parallel(void* dst, void const* src, std::size_t bytes, int threads) {
#pragma omp parallel num_threads(threads)
  {
    // One chunk per thread, cut on cache lines so no line is written by two threads.
    auto const n = static_cast<std::size_t>(omp_get_num_threads());
    auto const t = static_cast<std::size_t>(omp_get_thread_num());
    std::size_t const chunk = (bytes / n + 63) / 64 * 64;
    std::size_t const first = std::min(bytes, t * chunk), last = std::min(bytes, first + chunk);
    std::memcpy(static_cast<char*>(dst) + first, static_cast<char const*>(src) + first,
                last - first);
  }
}

}  // namespace strata::bench::layout_peer
