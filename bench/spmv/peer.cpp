// What a user would otherwise write: Eigen's SpMV, or an OpenMP loop over CSR rows.
#include "spmv/peer.hpp"

#include <Eigen/SparseCore>

namespace strata::bench::spmv_peer {

struct eigen_matrix {
  Eigen::SparseMatrix<double, Eigen::RowMajor, int> a;
};

void eigen_deleter::operator()(eigen_matrix* m) const {
  delete m;
}

eigen_handle make_eigen(std::int32_t rows, std::int32_t cols, std::int32_t const* row_ptr,
                        std::int32_t const* col, double const* val) {
  Eigen::Map<Eigen::SparseMatrix<double, Eigen::RowMajor, int> const> view(
      rows, cols, row_ptr[rows], row_ptr, col, val);
  return eigen_handle(new eigen_matrix{view});
}

void eigen_multiply(eigen_matrix const& a, double const* x, double* y, int threads) {
  Eigen::setNbThreads(threads);
  Eigen::Map<Eigen::VectorXd const> xv(x, a.a.cols());
  Eigen::Map<Eigen::VectorXd> yv(y, a.a.rows());
  yv.noalias() = a.a * xv;
}

void omp_csr_static(std::int32_t rows, std::int32_t const* row_ptr, std::int32_t const* col,
                    double const* val, double const* x, double* y, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int32_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int32_t k = row_ptr[r]; k < row_ptr[r + 1]; ++k) s += val[k] * x[col[k]];
    y[r] = s;
  }
}

void omp_csr_dynamic(std::int32_t rows, std::int32_t const* row_ptr, std::int32_t const* col,
                     double const* val, double const* x, double* y, int threads) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 64)
  for (std::int32_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::int32_t k = row_ptr[r]; k < row_ptr[r + 1]; ++k) s += val[k] * x[col[k]];
    y[r] = s;
  }
}

double gather_sum(std::int64_t nnz, std::int32_t const* col, double const* x, int threads) {
  double s = 0;
  // No simd: AVX-512 gathers (vgatherdpd) ran this loop 2-3x slower than scalar loads on
  // the development VM (AMD EPYC), and GCC keeps the double reduction scalar without it.
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : s)
  for (std::int64_t k = 0; k < nnz; ++k) s += x[col[k]];
  return s;
}

}  // namespace strata::bench::spmv_peer
