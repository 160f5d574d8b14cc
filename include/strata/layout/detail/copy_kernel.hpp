// The host side of layout-changing copies: a copy_plan in bytes, cut into work items
// that threads take in any order. Two shapes of work (PARRAY §5.2: copy in maximal
// contiguous runs):
//   * rows: the axis with the smallest strides is the same on both sides; an item is a
//     chunk of one row, one memcpy when the row is contiguous on both sides;
//   * tiles: the source's and the destination's fastest axes differ (a transpose); an
//     item is a tile of both axes, small enough that its source lines stay in cache
//     while the destination is written line by line.
// Header-only and host-only, so the fuzz target checks this very code.
#pragma once

#include <strata/layout/contiguity.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace strata::detail {

struct byte_plan {
  int count = 0;
  index_t extent[max_axes] = {};
  index_t src[max_axes] = {};  // byte strides
  index_t dst[max_axes] = {};
  index_t src_base = 0;  // bytes
  index_t dst_base = 0;
  int p = 0;  // axis with the smallest source stride
  int q = 0;  // axis with the smallest destination stride
  index_t tile_p = 1;
  index_t tile_q = 1;
  index_t items = 1;
  std::size_t elem = 1;
};

inline index_t abs_index(index_t x) {
  return x < 0 ? -x : x;
}

inline byte_plan make_byte_plan(copy_plan const& c, std::size_t elem) {
  byte_plan b;
  b.elem = elem;
  b.count = c.count;
  auto const e = static_cast<index_t>(elem);
  b.src_base = c.src_base * e;
  b.dst_base = c.dst_base * e;
  for (int a = 0; a < c.count; ++a) {
    b.extent[a] = c.axes[a].extent;
    b.src[a] = c.axes[a].src * e;
    b.dst[a] = c.axes[a].dst * e;
    if (abs_index(b.src[a]) < abs_index(b.src[b.p])) b.p = a;
    if (abs_index(b.dst[a]) < abs_index(b.dst[b.q])) b.q = a;
  }
  if (c.count == 0) return b;
  if (b.p == b.q) {
    // Rows: chunks of about 64 KiB, so long runs still split over threads.
    b.tile_p = std::max<index_t>(1, (index_t{64} << 10) / e);
    b.tile_p = std::min(b.tile_p, b.extent[b.p]);
  } else {
    // Tiles of about 64 x 64 doubles (32 KiB read, 32 KiB written): an L1/L2-sized block.
    index_t t = std::max<index_t>(4, 512 / e);
    b.tile_p = std::min(t, b.extent[b.p]);
    b.tile_q = std::min(t, b.extent[b.q]);
  }
  for (int a = 0; a < c.count; ++a) {
    if (a == b.p)
      b.items *= (b.extent[a] + b.tile_p - 1) / b.tile_p;
    else if (a == b.q)
      b.items *= (b.extent[a] + b.tile_q - 1) / b.tile_q;
    else
      b.items *= b.extent[a];
  }
  return b;
}

template <std::size_t E>
inline void copy_element(std::byte* d, std::byte const* s, std::size_t elem) {
  if constexpr (E == 0)
    std::memcpy(d, s, elem);
  else
    std::memcpy(d, s, E);
}

template <std::size_t E>
void copy_items_sized(byte_plan const& b, std::byte* dst, std::byte const* src, index_t first,
                      index_t last) {
  std::size_t const elem = E == 0 ? b.elem : E;
  for (index_t item = first; item < last; ++item) {
    // Decode the item: axes in order, the tiled ones counting tiles (last axis fastest).
    index_t rest = item, so = b.src_base, doff = b.dst_base;
    index_t p0 = 0, q0 = 0;
    for (int a = b.count - 1; a >= 0; --a) {
      index_t n = a == b.p   ? (b.extent[a] + b.tile_p - 1) / b.tile_p
                  : a == b.q ? (b.extent[a] + b.tile_q - 1) / b.tile_q
                             : b.extent[a];
      index_t digit = rest % n;
      rest /= n;
      if (a == b.p)
        p0 = digit * b.tile_p;
      else if (a == b.q)
        q0 = digit * b.tile_q;
      else
        so += digit * b.src[a], doff += digit * b.dst[a];
    }
    if (b.count == 0) {
      copy_element<E>(dst + doff, src + so, elem);
      continue;
    }
    index_t const pn = std::min(b.tile_p, b.extent[b.p] - p0);
    if (b.p == b.q) {
      std::byte const* s = src + so + p0 * b.src[b.p];
      std::byte* d = dst + doff + p0 * b.dst[b.p];
      auto const ie = static_cast<index_t>(elem);
      if (b.src[b.p] == ie && b.dst[b.p] == ie) {
        std::memcpy(d, s, static_cast<std::size_t>(pn) * elem);
      } else {
        for (index_t i = 0; i < pn; ++i)
          copy_element<E>(d + i * b.dst[b.p], s + i * b.src[b.p], elem);
      }
      continue;
    }
    index_t const qn = std::min(b.tile_q, b.extent[b.q] - q0);
    std::byte const* s0 = src + so + p0 * b.src[b.p] + q0 * b.src[b.q];
    std::byte* d0 = dst + doff + p0 * b.dst[b.p] + q0 * b.dst[b.q];
    index_t const sp = b.src[b.p], sq = b.src[b.q], dp = b.dst[b.p], dq = b.dst[b.q];
    // Writes along the destination's fastest axis in the inner loop: stores stream into
    // whole lines while the tile's source lines stay cached (measured faster than the
    // other order on this machine).
    for (index_t i = 0; i < pn; ++i) {
      std::byte const* s = s0 + i * sp;
      std::byte* d = d0 + i * dp;
      for (index_t j = 0; j < qn; ++j) copy_element<E>(d + j * dq, s + j * sq, elem);
    }
  }
}

/// Copies work items [first, last) of `b` from src to dst (base pointers of the two
/// types' offset 0).
inline void copy_items(byte_plan const& b, std::byte* dst, std::byte const* src, index_t first,
                       index_t last) {
  switch (b.elem) {
    case 1:
      return copy_items_sized<1>(b, dst, src, first, last);
    case 2:
      return copy_items_sized<2>(b, dst, src, first, last);
    case 4:
      return copy_items_sized<4>(b, dst, src, first, last);
    case 8:
      return copy_items_sized<8>(b, dst, src, first, last);
    case 16:
      return copy_items_sized<16>(b, dst, src, first, last);
    default:
      return copy_items_sized<0>(b, dst, src, first, last);
  }
}

/// The fallback for types without a common strided form: offsets one by one.
inline void copy_elements(dimension const& dt, dimension const& st, std::size_t elem,
                          index_t dst_shift, index_t src_shift, std::byte* dst,
                          std::byte const* src, index_t first, index_t last) {
  for (index_t k = first; k < last; ++k)
    std::memcpy(dst + (detail::node_offset(dt.tree(), dt.node(), k) + dst_shift) *
                          static_cast<index_t>(elem),
                src + (detail::node_offset(st.tree(), st.node(), k) + src_shift) *
                          static_cast<index_t>(elem),
                elem);
}

}  // namespace strata::detail
