// Hand-written peers of the layout benchmarks (compiled apart, so the compiler cannot
// see through the benchmark).
#pragma once

#include <cstddef>

namespace strata::bench::layout_peer {

/// b = a^T for n x n doubles, the textbook loop (OpenMP over rows).
void transpose_naive(std::ptrdiff_t n, double const* a, double* b, int threads);
/// out[i * n + j] = 2 * in[(i + r0) * big + j + c0]: an n x n window of a big x big array.
void window_double(std::ptrdiff_t n, std::ptrdiff_t big, std::ptrdiff_t r0, std::ptrdiff_t c0,
                   double const* in, double* out, int threads);
/// b = a^T in 64 x 64 tiles (OpenMP over tile rows): the usual hand optimization.
void transpose_blocked(std::ptrdiff_t n, double const* a, double* b, int threads);
/// std::memcpy.
void copy_bytes(void* dst, void const* src, std::size_t bytes);
/// std::memcpy in `threads` equal chunks, one per OpenMP thread: what a user would write
/// to copy with several threads.
void copy_bytes_parallel(void* dst, void const* src, std::size_t bytes, int threads);

}  // namespace strata::bench::layout_peer
