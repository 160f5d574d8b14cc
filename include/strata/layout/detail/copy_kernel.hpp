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
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// Fully unrolled micro-tile loops (the library builds at -O2, which does not unroll them).
#if defined(__CUDACC__) || defined(__clang__)
#define STRATA_COPY_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define STRATA_COPY_UNROLL _Pragma("GCC unroll 16")
#else
#define STRATA_COPY_UNROLL
#endif

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
  bool stream = false;  // tiles written with streaming stores (see copy_tile)
};

/// Copies of at least this many bytes write transposed tiles with streaming stores.
inline constexpr index_t stream_bytes = index_t{16} << 20;

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
    // Tiles of 128 source bytes (two lines) along p by 2 KiB of destination along q (16 x
    // 256 doubles): each destination row is one long sequential run of whole lines, each
    // source row a pair of lines the adjacent-line prefetcher fetches together. Measured
    // on 4096^2 doubles against 64 x 64 and 32 x 128 tiles: 1.1-1.3x faster (docs/layout.md).
    b.tile_p = std::min(std::max<index_t>(4, 128 / e), b.extent[b.p]);
    b.tile_q = std::min(std::max<index_t>(4, 2048 / e), b.extent[b.q]);
    // Streaming stores once the destination is well beyond the caches; below that the
    // destination is better left in cache for whoever reads it next.
    index_t total = 1;
    for (int a = 0; a < c.count; ++a) total *= b.extent[a];
    b.stream = total * e >= stream_bytes;
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

/// An element of E bytes as one value, so a micro-tile lives in registers.
template <std::size_t E>
struct word {
  unsigned char b[E];
};
template <>
struct word<1> {
  std::uint8_t v;
};
template <>
struct word<2> {
  std::uint16_t v;
};
template <>
struct word<4> {
  std::uint32_t v;
};
template <>
struct word<8> {
  std::uint64_t v;
};

/// Micro-tile side: one 64-byte cache line of elements (8 doubles), at most 16.
template <std::size_t E>
inline constexpr index_t micro = E == 0 ? 1
                                        : std::clamp<index_t>(64 / index_t(E == 0 ? 1 : E), 1, 16);

/// Whether micro-tile rows can be written with streaming (non-temporal) stores: SSE2
/// (every x86-64) and rows of exactly one cache line.
template <std::size_t E>
inline constexpr bool can_stream =
#if defined(__SSE2__)
    E != 0 && micro<E>* index_t(E) == 64;
#else
    false;
#endif

/// Writes one 64-byte line at d (64-byte aligned) from `line`, bypassing the caches.
inline void stream_line(std::byte* d, void const* line) {
#if defined(__SSE2__)
  auto const* s = static_cast<__m128i const*>(line);
  auto* t = reinterpret_cast<__m128i*>(d);
  for (int k = 0; k < 4; ++k) _mm_stream_si128(t + k, _mm_loadu_si128(s + k));
#else
  std::memcpy(d, line, 64);
#endif
}

/// Orders streaming stores before whatever signals the copy's completion.
inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

/// A pn x qn tile: source lines run along p (stride sp), destination lines along q (dq).
/// Cut into M x M micro-tiles, M elements being a cache line: M source lines are read
/// whole into registers, then M destination lines are written whole, so every line that
/// is touched is used completely while it is in L1 — even with power-of-two strides, where
/// a tile's lines share a few cache sets and evict each other (PARRAY §5.2's runs are one
/// element long here; the line is the real unit of transfer). With `stream` (large
/// copies, dense destination lines) the lines are written with non-temporal stores: no
/// read of the destination line before it is overwritten, a third of the traffic.
template <std::size_t E>
void copy_tile(std::byte* d0, std::byte const* s0, index_t pn, index_t qn, index_t sp, index_t sq,
               index_t dp, index_t dq, std::size_t elem, bool stream) {
  constexpr index_t m = micro<E>;
  index_t i0 = 0;
  if constexpr (m > 1) {
    using w = word<E>;
    // Columns before jb: scalar, so that micro-tile rows start on a line boundary.
    index_t jb = 0;
    if constexpr (can_stream<E>) {
      auto const addr = reinterpret_cast<std::uintptr_t>(d0);
      stream = stream && dq == index_t(E) && dp % 64 == 0 && addr % E == 0;
      if (stream)
        jb = std::min<index_t>(qn, static_cast<index_t>((64 - addr % 64) % 64) / index_t(E));
    } else {
      stream = false;
    }
    for (; i0 + m <= pn; i0 += m) {
      for (index_t i = i0; i < i0 + m; ++i)
        for (index_t j = 0; j < jb; ++j)
          copy_element<E>(d0 + i * dp + j * dq, s0 + i * sp + j * sq, elem);
      index_t j0 = jb;
      for (; j0 + m <= qn; j0 += m) {
        w buf[m][m];  // buf[i] is destination line i
        std::byte const* s = s0 + i0 * sp + j0 * sq;
        STRATA_COPY_UNROLL
        for (index_t j = 0; j < m; ++j) STRATA_COPY_UNROLL
        for (index_t i = 0; i < m; ++i) std::memcpy(&buf[i][j], s + i * sp + j * sq, E);
        std::byte* d = d0 + i0 * dp + j0 * dq;
        if (stream) {
          for (index_t i = 0; i < m; ++i) stream_line(d + i * dp, buf[i]);
        } else {
          STRATA_COPY_UNROLL
          for (index_t i = 0; i < m; ++i) STRATA_COPY_UNROLL
          for (index_t j = 0; j < m; ++j) std::memcpy(d + i * dp + j * dq, &buf[i][j], E);
        }
      }
      // The tile's last columns, narrower than a micro-tile.
      for (index_t i = i0; i < i0 + m; ++i)
        for (index_t j = j0; j < qn; ++j)
          copy_element<E>(d0 + i * dp + j * dq, s0 + i * sp + j * sq, elem);
    }
  }
  // Rows left over (all of them when elements are too large for micro-tiles): writes
  // along the destination's fastest axis in the inner loop.
  for (index_t i = i0; i < pn; ++i) {
    std::byte const* s = s0 + i * sp;
    std::byte* d = d0 + i * dp;
    for (index_t j = 0; j < qn; ++j) copy_element<E>(d + j * dq, s + j * sq, elem);
  }
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
    copy_tile<E>(d0, s0, pn, qn, b.src[b.p], b.src[b.q], b.dst[b.p], b.dst[b.q], elem, b.stream);
  }
}

/// Copies work items [first, last) of `b` from src to dst (base pointers of the two
/// types' offset 0).
inline void copy_items(byte_plan const& b, std::byte* dst, std::byte const* src, index_t first,
                       index_t last) {
  switch (b.elem) {
    case 1:
      copy_items_sized<1>(b, dst, src, first, last);
      break;
    case 2:
      copy_items_sized<2>(b, dst, src, first, last);
      break;
    case 4:
      copy_items_sized<4>(b, dst, src, first, last);
      break;
    case 8:
      copy_items_sized<8>(b, dst, src, first, last);
      break;
    case 16:
      copy_items_sized<16>(b, dst, src, first, last);
      break;
    default:
      copy_items_sized<0>(b, dst, src, first, last);
      break;
  }
  if (b.stream) stream_fence();
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

#undef STRATA_COPY_UNROLL
