// How a kernel's row loop walks AoSoA record cells block by block (tensor/cell_rows.hpp,
// cell_kernel::row; docs/tensor.md): which arguments are AoSoA iterators, their lane in
// the block, and iterators re-addressed from the block's start and moved along the row.
#pragma once

#include <strata/config.hpp>
#include <strata/layout/record.hpp>
#include <strata/tensor/cells.hpp>
#include <strata/tensor/iterator.hpp>

#include <cstddef>

namespace strata::tensor_detail {

/// The AoSoA block of a kernel argument's cells: B for an iterator over aosoa<B> records
/// (and the block's bytes), 0 for anything else (plain cells, other layouts, values).
template <class I>
struct aosoa_block {
  static constexpr std::size_t value = 0;
};
template <record_desc D, std::size_t B>
struct aosoa_block_of {
  static constexpr std::size_t value = B;
  static constexpr auto bytes = static_cast<index_t>(detail::record_map<aosoa<B>, D>::block_bytes);
  static constexpr int shift = detail::log2_of(B);
};
template <record_desc D, std::size_t B, std::size_t N>
struct aosoa_block<tensor_iterator<records<D, aosoa<B>>, N>> : aosoa_block_of<D, B> {};
template <record_desc D, std::size_t B, std::size_t N>
struct aosoa_block<block_iterator<records<D, aosoa<B>>, N>> : aosoa_block_of<D, B> {};

/// The one AoSoA block of a kernel's arguments; 0 if none has one or two differ.
template <class... I>
constexpr std::size_t common_aosoa_block() {
  std::size_t const blocks[] = {0, aosoa_block<I>::value...};
  std::size_t b = 0;
  for (auto x : blocks) {
    if (x == 0) continue;
    if (b != 0 && b != x) return 0;
    b = x;
  }
  return b;
}

/// A row loop's view of AoSoA iterators (Ripple §4.3's AoSoA, §5.2's iterators). An
/// AoSoA cell's address is `(i / B) * block_bytes + (i % B) * stride` from the store's
/// start, not affine in i, so a loop stepping i does not vectorize (ripple-particles on
/// AoSoA16 ran at 0.6 of Kokkos). Addressed from its block's start, the cells of one
/// block are lanes 0..B-1 of a loop whose counter the compiler knows to lie in [0, B):
/// the division and the remainder fold away and the lanes are a vector per component.
/// Offsets from such an iterator may reach the previous block: record_offset floors.
struct row_tiles {
  /// The cell's lane in its AoSoA block (-1: not an AoSoA iterator).
  template <class I>
  STRATA_FN static index_t lane(I const& it) {
    if constexpr (aosoa_block<I>::value != 0)
      return it.p_.index() & static_cast<index_t>(aosoa_block<I>::value - 1);
    else
      return -1;
  }
  /// The lane that every AoSoA iterator among `it` is at, or -1 if they differ (their
  /// blocks then cannot be walked together).
  template <class... I>
  STRATA_FN static index_t common_lane(I const&... it) {
    index_t const lanes[] = {lane(it)...};
    index_t common = -1;
    for (auto l : lanes)
      if (l >= 0) {
        if (common >= 0 && l != common) return -1;
        common = l;
      }
    return common;
  }
  /// Re-addresses an AoSoA iterator from the start of its cell's block (lane 0 there).
  template <class I>
  STRATA_FN static void to_block_start(I& it) {
    using A = aosoa_block<I>;
    if constexpr (A::value != 0) {
      index_t const block = it.p_.index() >> A::shift;
      it.p_ = typename I::pointer(it.p_.base() + block * A::bytes, 0, it.p_.pitch());
    }
  }
  /// Moves an iterator `k` cells along the row (a value argument stays as it is).
  template <class I>
  static constexpr bool moves = requires(I& r) {
    r.next_in_row();
  };
  template <class I>
  STRATA_FN static void advance(I& it, index_t k) {
    if constexpr (moves<I>) {
      it.p_ += k;
      it.local_[I::dims - 1] += k;
    }
  }
  /// The iterator `k` cells further along the row (a value argument stays as it is).
  template <class I>
  STRATA_FN static I along(I const& it, index_t k) {
    if constexpr (moves<I>) {
      I r = it;
      r.p_ += k;
      r.local_[I::dims - 1] += k;
      return r;
    } else {
      return it;
    }
  }
};

}  // namespace strata::tensor_detail
