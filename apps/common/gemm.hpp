// GEMM over Strata's places: C = alpha A B + beta C with the operands described by PARRAY
// array types (seeds/parray-users-manual.txt §7.1: the types are the sub-program's
// arguments, so a transposed or windowed operand needs no flag), run by the one kernel of
// gemm_kernel.hpp on a host place (serial, threads, openmp: the CPU tiling) or a sim
// device (the device tiling, operands copied to its memory and C back). Used by apps/gemm,
// `strata bench gemm` and tests/apps.
#pragma once

#include "gemm_kernel.hpp"

#include <strata/strata.hpp>

#include <string>
#include <type_traits>
#include <vector>

namespace apps {

/// PARRAY's row-major m x n window of an [m][ld] array (§2.10): `[[m # X_0][n # X_1]]`.
/// ld >= n, else invalid_argument.
template <class T>
strata::array_type<T> row_major(index_t m, index_t n, index_t ld);

/// The strided form of a rank-2 array type laid over `data`. invalid_argument, naming
/// `name`, for a type that is not rank 2 or not strided (cyclic, func, a split that
/// crosses digits): the kernel walks operands by two strides.
template <class T>
gemm_operand<T> gemm_operand_of(strata::array_type<std::remove_const_t<T>> const& type, T* data,
                                char const* name);

/// How a launch cuts C: block tile bm x bn, threads per block, kernel tiling.
struct gemm_plan {
  index_t bm = 0, bn = 0;
  index_t threads = 1;  // per block, in each of two dimensions
  bool device = false;  // the device tiling (and copies to the device's memory)
  std::string describe() const;
};

/// The launch shape of a plan: a 2-D grid of 2-D parallel blocks, each thread's elements
/// whole register tiles, the tiling's scratchpad (Alpaka §4.2.2: the work division and
/// the shared memory are what a backend tunes; the kernel stays the same).
template <class Tiling>
strata::shape<2, strata::parallel_group> gemm_shape(gemm_plan const& p, index_t m, index_t n) {
  return strata::grid((m + p.bm - 1) / p.bm, (n + p.bn - 1) / p.bn)
      .block(strata::parallel, p.threads, p.threads)
      .elements(p.bm / p.threads, p.bn / p.threads)
      .scratchpad(Tiling::scratch_bytes(p.bm, p.bn, p.threads));
}

/// The device tiling's plan (CUDA, sim): 64 x 64 tiles of 16 x 16 threads.
template <class T>
gemm_plan device_gemm_plan() {
  gemm_plan p;
  p.device = true;
  p.threads = gemm_device_tiling<T>::threads;
  p.bm = gemm_device_tiling<T>::max_bm;
  p.bn = gemm_device_tiling<T>::max_bn;
  return p;
}

/// The block tile for `where` and an m x n C. On CPU: C cut into equal blocks no larger
/// than the tiling's largest tile, then its longer side into twice as many until there
/// are two blocks per thread to balance (one for one thread).
template <class T>
gemm_plan plan_gemm(strata::target const& where, index_t m, index_t n);

/// C = alpha A B + beta C. The views' data are in host memory; their types give each
/// operand's extents and layout (rank 2, strided). Blocks until done; a kernel's or
/// copy's failure is rethrown. invalid_argument for extents that do not conform.
template <class T>
void gemm(strata::target const& where, T alpha, strata::array_view<T const, strata::host_space> a,
          strata::array_view<T const, strata::host_space> b, T beta,
          strata::array_view<T, strata::host_space> c);

/// The same for row-major arrays with leading dimensions (the BLAS call's shape). As
/// BLAS: m or n of 0 does nothing, k of 0 scales C by beta.
template <class T>
void gemm(strata::target const& where, index_t m, index_t n, index_t k, T alpha, T const* a,
          index_t lda, T const* b, index_t ldb, T beta, T* c, index_t ldc);

/// Checks rows `rows` of C = alpha A B + beta C0 (row-major, tight) against a product
/// accumulated in long double: the largest |C - ref| / (|alpha| (|A||B|)_ij + |beta C0_ij|),
/// a multiple of the unit roundoff for a correct product (0 where both sides are 0).
template <class T>
double gemm_error(index_t m, index_t n, index_t k, T alpha, std::vector<T> const& a,
                  std::vector<T> const& b, T beta, std::vector<T> const& c0,
                  std::vector<T> const& c, std::vector<index_t> const& rows);

/// Every row when m is small, else `samples` rows spread over [0, m) (first and last too).
std::vector<index_t> rows_to_check(index_t m, index_t samples = 48);

}  // namespace apps
