// The peers of bench/spmv/strata.cpp: Eigen's sparse matrix times vector (row-major, the
// storage its OpenMP product parallelizes) and a hand-written OpenMP CSR loop.
#pragma once

#include <cstdint>
#include <memory>

namespace strata::bench::spmv_peer {

struct eigen_matrix;
struct eigen_deleter {
  void operator()(eigen_matrix* m) const;
};
using eigen_handle = std::unique_ptr<eigen_matrix, eigen_deleter>;

/// An Eigen::SparseMatrix<double, RowMajor, int> holding a copy of the CSR arrays.
eigen_handle make_eigen(std::int32_t rows, std::int32_t cols, std::int32_t const* row_ptr,
                        std::int32_t const* col, double const* val);
/// y = A x with Eigen on `threads` OpenMP threads (Eigen::setNbThreads).
void eigen_multiply(eigen_matrix const& a, double const* x, double* y, int threads);

/// y = A x: `#pragma omp parallel for` over rows, schedule(static) or schedule(dynamic, 64).
void omp_csr_static(std::int32_t rows, std::int32_t const* row_ptr, std::int32_t const* col,
                    double const* val, double const* x, double* y, int threads);
void omp_csr_dynamic(std::int32_t rows, std::int32_t const* row_ptr, std::int32_t const* col,
                     double const* val, double const* x, double* y, int threads);

/// The gathers of a CSR product alone: the sum of x[col[k]] over k in [0, nnz), a
/// `#pragma omp parallel for` over k. No product reads x through col faster than this
/// loop (it streams col and nothing else), so its time bounds every CSR kernel where
/// x's accesses miss the cache, which STREAM bandwidth does not.
double gather_sum(std::int64_t nnz, std::int32_t const* col, double const* x, int threads);

}  // namespace strata::bench::spmv_peer
