// What a user would otherwise call for a dense product: OpenBLAS (the BLAS Debian ships,
// libopenblas-dev) or Eigen 3.4.
#include "gemm/peer.hpp"

// GCC 12 warns of an uninitialized register inside its own AVX-512 intrinsics as Eigen's
// float product instantiates them (a false positive in avx512fintrin.h, not Eigen's code).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>

#if STRATA_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace strata::bench::gemm_peer {

#if STRATA_BENCH_HAVE_OPENBLAS
bool have_openblas() {
  return true;
}
std::string openblas_core() {
  return openblas_get_corename();
}
void openblas_gemm(long n, double alpha, double const* a, double const* b, double beta, double* c,
                   int threads) {
  openblas_set_num_threads(threads);
  auto const m = static_cast<blasint>(n);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, m, m, alpha, a, m, b, m, beta, c, m);
}
void openblas_gemm(long n, float alpha, float const* a, float const* b, float beta, float* c,
                   int threads) {
  openblas_set_num_threads(threads);
  auto const m = static_cast<blasint>(n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, m, m, alpha, a, m, b, m, beta, c, m);
}
#else
bool have_openblas() {
  return false;
}
std::string openblas_core() {
  return "OpenBLAS was not found when the benchmarks were built (libopenblas-dev)";
}
void openblas_gemm(long, double, double const*, double const*, double, double*, int) {}
void openblas_gemm(long, float, float const*, float const*, float, float*, int) {}
#endif

namespace {

template <class T>
void eigen(long n, T alpha, T const* a, T const* b, T beta, T* c, int threads) {
  using matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::setNbThreads(threads);
  Eigen::Map<matrix const> am(a, n, n), bm(b, n, n);
  Eigen::Map<matrix> cm(c, n, n);
  cm *= beta;
  cm.noalias() += alpha * am * bm;
}

}  // namespace

void eigen_gemm(long n, double alpha, double const* a, double const* b, double beta, double* c,
                int threads) {
  eigen(n, alpha, a, b, beta, c, threads);
}
void eigen_gemm(long n, float alpha, float const* a, float const* b, float beta, float* c,
                int threads) {
  eigen(n, alpha, a, b, beta, c, threads);
}

}  // namespace strata::bench::gemm_peer
