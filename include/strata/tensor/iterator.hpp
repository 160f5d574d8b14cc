// What a tensor kernel receives for each cell (Ripple §5.2): an indexed iterator at the
// cell, which knows its block and global indices, dereferences to the cell, and moves by
// `offset(dim, k)` into neighbours and the padding (§5.2.1, Listing 4); `unrolled_for<N>`
// unrolls a per-dimension operation at compile time; stencil helpers compute differences.
#pragma once

#include <strata/config.hpp>
#include <strata/error.hpp>
#include <strata/tensor/cells.hpp>
#include <strata/vec.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace strata {

/// One block of a tensor as kernels see it: the padded box's first element, the interior
/// extent, where the interior starts in the global index space, the element stride of
/// each dimension (dimension N-1 is contiguous) and the padding width. Trivially copyable:
/// it is passed to kernels by value. For record cells (cells.hpp) `base` is a record_ptr
/// that carries the store's pitch; the padded box is linearized row-major either way.
template <class T, std::size_t N>
struct tensor_block {
  using pointer = typename cell_traits<T>::pointer;
  pointer base{};   // cell (-padding, ..., -padding) of the block
  vec<N> extent{};  // interior cells
  vec<N> origin{};  // global index of interior cell (0, ..., 0)
  vec<N> stride{};  // elements between neighbours in each dimension
  vec<N> global_extent{};
  index_t padding = 0;

  /// The address of local cell `i` (interior cells are [0, extent); padding is outside).
  STRATA_FN pointer address(vec<N> const& i) const noexcept {
    index_t off = i[N - 1] + padding;  // dimension N-1 is contiguous: stride 1
    for (std::size_t d = 0; d + 1 < N; ++d) off += (i[d] + padding) * stride[d];
    return base + off;
  }
  /// Cells of the padded box in each dimension.
  STRATA_FN vec<N> padded_extent() const noexcept {
    vec<N> e = extent;
    for (std::size_t d = 0; d < N; ++d) e[d] += 2 * padding;
    return e;
  }
};

namespace tensor_detail {

/// Runs fn(point) for every point of a kernel thread's element range (1-D: integers).
template <std::size_t N, class R, class Fn>
STRATA_FN void for_each_point(R const& r, Fn&& fn) {
  if constexpr (N == 1) {
    for (index_t i = r.first; i < r.last; ++i) fn(vec<1>{i});
  } else if constexpr (N == 2) {
    for (index_t i = 0; i < r.extent[0]; ++i)
      for (index_t j = 0; j < r.extent[1]; ++j) fn(vec<2>{r.first[0] + i, r.first[1] + j});
  } else {
    for (index_t i = 0; i < r.extent[0]; ++i)
      for (index_t j = 0; j < r.extent[1]; ++j)
        for (index_t k = 0; k < r.extent[2]; ++k)
          fn(vec<3>{r.first[0] + i, r.first[1] + j, r.first[2] + k});
  }
}

/// The same over a GPU thread's grid-strided elements (domain.hpp): 1-D integers.
template <std::size_t N, class Fn>
STRATA_FN void for_each_point(strided_range const& r, Fn&& fn) {
  for (auto i : r) fn(vec<1>{i});
}
/// The same over grid-strided points, the last dimension innermost.
template <std::size_t N, class Fn>
STRATA_FN void for_each_point(strided_box_range<N> const& r, Fn&& fn) {
  for (auto p : r) fn(p);
}

struct row_tiles;  // cell_kernel's row loop over AoSoA blocks (cell_rows.hpp)

[[noreturn]] inline void offset_out_of_padding(std::size_t dim, index_t to, index_t extent,
                                               index_t padding) {
  throw out_of_range("tensor iterator: offset to local index " + std::to_string(to) +
                     " in dimension " + std::to_string(dim) + " is outside the padded block [" +
                     std::to_string(-padding) + ", " + std::to_string(extent + padding) +
                     "); expected offsets within the padding (" + std::to_string(padding) +
                     " cells)");
}
[[noreturn]] inline void offset_dimension(std::size_t dim, std::size_t dims) {
  throw out_of_range("tensor iterator: offset in dimension " + std::to_string(dim) +
                     "; expected a dimension below " + std::to_string(dims));
}
}  // namespace tensor_detail

/// Ripple's IndexedIterator: a cell of a block, with its block and global indices.
/// Valid while the kernel call that received it runs.
template <class T, std::size_t N>
class tensor_iterator {
 public:
  static constexpr std::size_t dims = N;
  using value_type = typename cell_traits<T>::value_type;
  using pointer = typename cell_traits<T>::pointer;

  STRATA_FN tensor_iterator(tensor_block<T, N> const& b, vec<N> const& local) noexcept
      : block_(&b), p_(b.address(local)), local_(local), stride_(b.stride) {}

  /// The cell: T& for plain cells, a record proxy (record_ref) for records.
  STRATA_FN decltype(auto) operator*() const noexcept { return *p_; }
  STRATA_FN decltype(auto) operator->() const noexcept {
    if constexpr (cell_traits<T>::is_record)
      return p_.operator->();
    else
      return p_;
  }
  STRATA_FN pointer get() const noexcept { return p_; }

  /// The iterator `k` cells away in dimension `dim`, into the padding at most (checked in
  /// builds without NDEBUG: a step past the padding is strata::out_of_range).
  STRATA_FN tensor_iterator offset(std::size_t dim, index_t k) const {
#if !defined(NDEBUG) && !defined(__CUDA_ARCH__)
    if (dim >= N) tensor_detail::offset_dimension(dim, N);
#endif
    tensor_iterator r = *this;
    r.local_[dim] += k;
#if !defined(NDEBUG) && !defined(__CUDA_ARCH__)
    auto const& b = *block_;
    if (r.local_[dim] < -b.padding || r.local_[dim] >= b.extent[dim] + b.padding)
      tensor_detail::offset_out_of_padding(dim, r.local_[dim], b.extent[dim], b.padding);
#endif
    // Dimension N-1 has stride 1: a constant `dim` (the usual call) folds to p + k.
    r.p_ += dim == N - 1 ? k : k * stride_[dim];
    return r;
  }
  /// Moves to the next cell of the row (dimension N-1), as kernels over cells do.
  STRATA_FN void next_in_row() noexcept {
    ++p_;
    ++local_[N - 1];
  }
  /// Moves this iterator by `k` cells in `dim` (as offset, in place).
  STRATA_FN tensor_iterator& shift(std::size_t dim, index_t k) {
    return *this = offset(dim, k);
  }

  /// The cell's index inside its block's interior (negative or >= block size in padding).
  STRATA_FN index_t index(std::size_t dim) const noexcept {
    return local_[dim];
  }
  STRATA_FN vec<N> index() const noexcept {
    return local_;
  }
  /// The cell's index in the whole tensor.
  STRATA_FN index_t global_index(std::size_t dim) const noexcept {
    return block_->origin[dim] + local_[dim];
  }
  STRATA_FN vec<N> global_index() const noexcept {
    vec<N> g{};
    for (std::size_t d = 0; d < N; ++d) g[d] = global_index(d);
    return g;
  }
  STRATA_FN index_t size(std::size_t dim) const noexcept {
    return block_->extent[dim];
  }
  STRATA_FN index_t global_size(std::size_t dim) const noexcept {
    return block_->global_extent[dim];
  }
  STRATA_FN index_t padding() const noexcept {
    return block_->padding;
  }
  /// Whether the cell is on the first / last row of the whole tensor in `dim`.
  STRATA_FN bool first(std::size_t dim) const noexcept {
    return global_index(dim) == 0;
  }
  STRATA_FN bool last(std::size_t dim) const noexcept {
    return global_index(dim) == global_size(dim) - 1;
  }
  STRATA_FN tensor_block<T, N> const& block() const noexcept {
    return *block_;
  }

 private:
  friend struct tensor_detail::row_tiles;
  tensor_block<T, N> const* block_;
  pointer p_;
  vec<N> local_;
  // The strides are the iterator's own, not read through block_: a kernel's store of an
  // index_t-sized integer (a {double, int64} record's field) may alias the block's
  // stride for the compiler, which then reloads it after every cell's store, and GCC
  // leaves a row loop with such a reload scalar ("control flow in loop"; the 2-D Eikonal
  // on double SoA records ran 2x slower, docs/apps.md). A copy in the iterator lives in a
  // register through the row.
  vec<N> stride_;
};

/// Ripple's BlockIterator (§5.2.2): a lighter iterator for performance-critical kernels.
/// It knows the cell, the strides of its block's store and its index inside the block,
/// but nothing of the global space: a pointer, N strides and N indices, against the
/// indexed iterator's block reference plus indices. Kernels receive it for tensors passed
/// as `block_access(t)` (split.hpp). Offsets into the padding are checked as the indexed
/// iterator's are, against the padding recorded with it.
template <class T, std::size_t N>
class block_iterator {
 public:
  static constexpr std::size_t dims = N;
  using value_type = typename cell_traits<T>::value_type;
  using pointer = typename cell_traits<T>::pointer;

  STRATA_FN block_iterator(tensor_block<T, N> const& b, vec<N> const& local) noexcept
      : p_(b.address(local)), local_(local) {
    for (std::size_t d = 0; d < N; ++d) {
      stride_[d] = static_cast<std::int32_t>(b.stride[d]);
      size_[d] = static_cast<std::int32_t>(b.extent[d]);
    }
    pad_ = static_cast<std::int32_t>(b.padding);
  }

  STRATA_FN decltype(auto) operator*() const noexcept { return *p_; }
  STRATA_FN decltype(auto) operator->() const noexcept {
    if constexpr (cell_traits<T>::is_record)
      return p_.operator->();
    else
      return p_;
  }
  STRATA_FN pointer get() const noexcept { return p_; }

  STRATA_FN block_iterator offset(std::size_t dim, index_t k) const {
#if !defined(NDEBUG) && !defined(__CUDA_ARCH__)
    if (dim >= N) tensor_detail::offset_dimension(dim, N);
#endif
    block_iterator r = *this;
    r.local_[dim] += k;
#if !defined(NDEBUG) && !defined(__CUDA_ARCH__)
    if (r.local_[dim] < -pad_ || r.local_[dim] >= size_[dim] + pad_)
      tensor_detail::offset_out_of_padding(dim, r.local_[dim], size_[dim], pad_);
#endif
    r.p_ += dim == N - 1 ? k : k * stride_[dim];
    return r;
  }
  STRATA_FN void next_in_row() noexcept {
    ++p_;
    ++local_[N - 1];
  }
  /// The cell's index inside its block, and the block's size.
  STRATA_FN index_t index(std::size_t dim) const noexcept {
    return local_[dim];
  }
  STRATA_FN index_t size(std::size_t dim) const noexcept {
    return size_[dim];
  }
  STRATA_FN index_t padding() const noexcept {
    return pad_;
  }

 private:
  friend struct tensor_detail::row_tiles;
  pointer p_;
  vec<N> local_;
  std::int32_t stride_[N];
  std::int32_t size_[N];
  std::int32_t pad_;
};

/// Calls `f(std::integral_constant<std::size_t, d>{})` for d = 0 .. N-1, unrolled at
/// compile time (Ripple §5.2.1).
template <std::size_t N, class F>
STRATA_FN constexpr void unrolled_for(F&& f) {
  [&]<std::size_t... D>(std::index_sequence<D...>) {
    (f(std::integral_constant<std::size_t, D>{}), ...);
  }
  (std::make_index_sequence<N>{});
}

// Differences on iterators (Ripple's stencil helpers): forward, backward and central first
// differences, the second difference, and the gradient by central differences over `h`.
template <class It>
STRATA_FN auto forward_diff(It const& it, std::size_t dim) {
  return *it.offset(dim, 1) - *it;
}
template <class It>
STRATA_FN auto backward_diff(It const& it, std::size_t dim) {
  return *it - *it.offset(dim, -1);
}
template <class It>
STRATA_FN auto central_diff(It const& it, std::size_t dim) {
  return *it.offset(dim, 1) - *it.offset(dim, -1);
}
template <class It>
STRATA_FN auto second_diff(It const& it, std::size_t dim) {
  return *it.offset(dim, 1) - *it * 2 + *it.offset(dim, -1);
}
/// The gradient by central differences, `(x[i+1] - x[i-1]) / (2h)` per dimension.
template <class It, class H>
STRATA_FN auto gradient(It const& it, H h) {
  using V = std::remove_cvref_t<decltype(*it - *it)>;
  struct grad {
    V v[It::dims];
    STRATA_FN V operator[](std::size_t d) const { return v[d]; }
  } g{};
  unrolled_for<It::dims>([&](auto d) { g.v[d] = central_diff(it, d) / (2 * h); });
  return g;
}

}  // namespace strata
