// Compact array types for kernels (issue 14): the strided form of an array type, a base
// offset and an extent and step per rank, in a few words.
//
// An array_type carries its whole dimension tree (PARRAY §2: references, displacements,
// chains, `func` and cyclic steps): kilobytes, over CUDA's classic 4 KiB kernel-parameter
// limit when taken by value, and an offset is a walk over the tree. Most types a kernel
// indexes through (plain, transposed `{A[1], A[0]}`, windows, displacements, sub-dimension
// orders) have offsets affine in their rank indices (array_type::is_strided); for those,
// strided_type is what a kernel takes by value:
//
//   array_type<double> const a{n, n};
//   array_type<double> const t{a[1], a[0]};              // the transpose
//   strided_type<double, host_space, 2> const s(t);      // 40 bytes: base, 2 x (extent, step)
//   launch(where, grid(n).block(n), kernel, s, p);       // in the kernel: p[s(i, j)]
//
// A type that is not strided (`func`, cyclic wraps, chains that are not affine) is an
// error naming it; such types stay array_type (by pointer in device code).
#pragma once

#include <strata/config.hpp>
#include <strata/error.hpp>
#include <strata/layout/array_type.hpp>
#include <strata/memory/space.hpp>

#include <string>

namespace strata {

/// An array type's offsets as base + sum over ranks r of i_r * stride(r): trivially
/// copyable, constexpr, usable in device code. R is the rank (array_type::rank()).
template <class T, memory_space Space = host_space, int R = 1>
class strided_type {
  static_assert(R >= 1 && R <= max_axes, "strided_type<T, Space, R>: R must be 1 to max_axes");

 public:
  using element_type = T;
  using space = Space;
  using index_type = index_t;
  static constexpr int rank_value = R;

  constexpr strided_type() = default;

  /// The strided form of `type`; an error when its mapping is not strided or its rank is not R.
  explicit constexpr strided_type(array_type<T, Space> const& type) {
    if (type.rank() != R)
      throw invalid_argument("strided_type: the array type " + to_string(type.root()) +
                             " has rank " + std::to_string(type.rank()) + "; expected rank " +
                             std::to_string(R));
    auto const w = type.whole_strides();
    if (!w.ok)
      throw invalid_argument("strided_type: the array type " + to_string(type.root()) +
                             " is not strided (a func or cyclic step, or a chain whose offsets "
                             "are not affine in the indices); expected a strided type (keep "
                             "the array_type for this one)");
    base_ = w.form.base;
    for (int r = 0; r < R; ++r) {
      extent_[r] = w.form.axes[r].extent;
      stride_[r] = w.form.axes[r].stride;
    }
  }

  /// The offset of the element at rank indices (i_0, ..., i_{R-1}).
  template <class... I>
  requires(sizeof...(I) == R && R > 1) STRATA_FN constexpr index_t operator()(I... i) const {
    index_t const idx[] = {static_cast<index_t>(i)...};
    index_t o = base_;
    for (int r = 0; r < R; ++r) {
      // Checked as array_type checks its indices (docs/layout.md): without NDEBUG.
#if !defined(NDEBUG) || defined(STRATA_DEBUG)
      detail::layout_check(idx[r] >= 0 && idx[r] < extent_[r], "strided_type index", idx[r],
                           extent_[r]);
#endif
      o += idx[r] * stride_[r];
    }
    return o;
  }
  /// The offset of flat index k (row-major over the ranks, as array_type's A(k)).
  STRATA_FN constexpr index_t operator()(index_t k) const {
#if !defined(NDEBUG) || defined(STRATA_DEBUG)
    detail::layout_check(k >= 0 && k < size(), "strided_type flat index", k, size());
#endif
    index_t o = base_;
    for (int r = R - 1; r > 0; --r) {
      o += k % extent_[r] * stride_[r];
      k /= extent_[r];
    }
    return o + k * stride_[0];
  }

  STRATA_FN static constexpr int rank() {
    return R;
  }
  STRATA_FN constexpr index_t extent(int r) const {
    return extent_[r];
  }
  STRATA_FN constexpr index_t stride(int r) const {
    return stride_[r];
  }
  /// The offset of the element at index 0 (a window's or displacement's start).
  STRATA_FN constexpr index_t base() const {
    return base_;
  }
  STRATA_FN constexpr index_t size() const {
    index_t s = 1;
    for (int r = 0; r < R; ++r) s *= extent_[r];
    return s;
  }

 private:
  index_t base_ = 0;
  index_t extent_[R] = {};
  index_t stride_[R] = {};
};

}  // namespace strata
