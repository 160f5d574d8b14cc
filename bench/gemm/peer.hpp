// The peers of bench/gemm/strata.cpp: OpenBLAS's cblas_?gemm (its own pthreads, set by
// openblas_set_num_threads) and Eigen's dense product (OpenMP threads, setNbThreads).
#pragma once

#include <string>

namespace strata::bench::gemm_peer {

/// Whether OpenBLAS was found when the benchmarks were built, and its kernel's name
/// (openblas_get_corename, e.g. "Haswell"), or why there is none.
bool have_openblas();
std::string openblas_core();

/// C = alpha A B + beta C, row-major n x n, on `threads` threads.
void openblas_gemm(long n, double alpha, double const* a, double const* b, double beta, double* c,
                   int threads);
void openblas_gemm(long n, float alpha, float const* a, float const* b, float beta, float* c,
                   int threads);
void eigen_gemm(long n, double alpha, double const* a, double const* b, double beta, double* c,
                int threads);
void eigen_gemm(long n, float alpha, float const* a, float const* b, float beta, float* c,
                int threads);

}  // namespace strata::bench::gemm_peer
