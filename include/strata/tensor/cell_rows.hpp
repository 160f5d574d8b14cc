// The row loop of kernels over cells (tensor/split.hpp's for_each_cell and graph splits;
// docs/tensor.md "Kernels over cells and iterators"): a thread's element box walked row
// by row, the iterators made once per row and stepped along it, the kernel inlined into
// the loop, and the cells declared independent so that the compiler vectorizes the rows
// (of SoA records too); AoSoA rows run block by block (row_tiles.hpp).
#pragma once

#include <strata/config.hpp>
#include <strata/tensor/iterator.hpp>
#include <strata/tensor/row_tiles.hpp>

#include <cstddef>

namespace strata::tensor_detail {

/// Calls f with every argument as an lvalue (Ripple kernels take `auto& it`); returns
/// what f returns (a reducing split's value of the cell).
template <class F, class... A>
STRATA_FN decltype(auto) call_lvalues(F const& f, A... a) {
  return f(a...);
}

/// Moves a kernel argument to the next cell of its row (values stay as they are).
template <class T, std::size_t N>
STRATA_FN void next_in_row(tensor_iterator<T, N>& it) {
  it.next_in_row();
}
template <class T, std::size_t N>
STRATA_FN void next_in_row(block_iterator<T, N>& it) {
  it.next_in_row();
}
template <class V>
STRATA_FN void next_in_row(V&) {}

#if (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define STRATA_CELL_FLATTEN [[gnu::flatten]]
#else
#define STRATA_CELL_FLATTEN
#endif
// The cells of a row are independent (docs/tensor.md "Cells are independent"): GCC may
// skip its run-time alias checks, which an SoA stencil has more of than it accepts. Not
// for clang: its equivalent, `loop vectorize(assume_safety)`, warns by default
// (-Wpass-failed) in the user's build wherever a kernel cannot be vectorized, and a
// `diagnostic ignored` does not reach that warning without -g.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define STRATA_CELL_INDEPENDENT _Pragma("GCC ivdep")
#else
#define STRATA_CELL_INDEPENDENT
#endif

/// One row of `len` cells whose arguments include AoSoA iterators (`it...` at the row's
/// first cell; common_aosoa_block<I...>() != 0). When the AoSoA arguments share their
/// lane, each whole block of the row is `block(it...)`, the iterators re-addressed from
/// the block's start (row_tiles: a loop over lanes 0..B-1 there), then moved past it; the
/// cells before the first and after the last whole block, and every cell of a row whose
/// arguments are at different lanes (other paddings), are `cell(it...)` one by one. One
/// loop holds both, so a kernel called from both is inlined twice, not three times (the
/// FORCE flux is large). The kernels over cells and the reducing kernels share it (host
/// code only: a GPU thread takes single cells).
template <class Block, class Cell, class... I>
void aosoa_row(index_t len, Block const& block, Cell const& cell, I... it) {
  constexpr auto b = static_cast<index_t>(common_aosoa_block<I...>());
  static_assert(b != 0, "aosoa_row: no argument is an AoSoA iterator");
  index_t lane = row_tiles::common_lane(it...);
  bool const tiles = lane >= 0;
  for (index_t k = 0; k < len;) {
    if (tiles && lane == 0 && k + b <= len) {
      (row_tiles::to_block_start(it), ...);
      block(it...);
      (row_tiles::advance(it, b), ...);
      k += b;
    } else {
      cell(it...);
      (next_in_row(it), ...);
      lane = (lane + 1) & (b - 1);
      ++k;
    }
  }
}

template <std::size_t N, class F>
struct cell_kernel {
  F f;
  // Rows of the thread's element box: the iterators are made once per row and stepped
  // along it, so the inner loop is as plain as a raw-index loop (the callgrind check in
  // tests/CMakeLists.txt holds it to that).
  // `lo` is the first local cell: 0, or -n for a kernel expanded n cells into the padding.
  template <class Self, class... A>
  STRATA_FN void operator()(Self const& self, vec<N> extent, index_t lo, A const&... a) const {
    auto r = self.element_chunk(extent);
    if constexpr (N == 1) {
      row(r.last - r.first, a.at(vec<1>{lo + r.first})...);
    } else if constexpr (N == 2) {
      for (index_t i = 0; i < r.extent[0]; ++i)
        row(r.extent[1], a.at(vec<2>{lo + r.first[0] + i, lo + r.first[1]})...);
    } else {
      for (index_t i = 0; i < r.extent[0]; ++i)
        for (index_t j = 0; j < r.extent[1]; ++j)
          row(r.extent[2],
              a.at(vec<3>{lo + r.first[0] + i, lo + r.first[1] + j, lo + r.first[2]})...);
    }
  }
  // Flattened: the kernel is inlined into the row loop whatever the inliner's budget (as
  // for_each_record's loops are, docs/records.md). A large kernel (the FORCE flux: four
  // face fluxes of three Euler fluxes each) otherwise stays a call per cell, and its
  // record addresses (an SoA's array starts, from the pitch) are recomputed in every call
  // instead of once per row: 2-6x slower (docs/apps.md, "Ripple's benchmarks").
  template <class... I>
  STRATA_CELL_FLATTEN STRATA_FN void row(index_t len, I... it) const {
#if !STRATA_DEVICE_CODE
    // AoSoA arguments: whole blocks as loops over their lanes (aosoa_row).
    constexpr auto b = static_cast<index_t>(common_aosoa_block<I...>());
    if constexpr (b != 0) {
      aosoa_row(
          len,
          [&](I const&... at) {
            STRATA_CELL_INDEPENDENT
            for (index_t l = 0; l < b; ++l) call_lvalues(f, row_tiles::along(at, l)...);
          },
          [&](I const&... at) { call_lvalues(f, at...); }, it...);
      return;
    }
#endif
    STRATA_CELL_INDEPENDENT
    for (index_t k = 0; k < len; ++k) {
      call_lvalues(f, it...);  // copies: a kernel that moves its iterator moves its own
      (next_in_row(it), ...);
    }
  }
};

}  // namespace strata::tensor_detail
