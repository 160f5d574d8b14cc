// A copy between two memories, as rows of bytes: 1-D copies are one row, pitched 2-D and
// 3-D copies are `rows` rows in each of `slices` slices.
#pragma once

#include <strata/memory/space.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace strata::detail {

struct copy_side {
  std::byte* base;
  std::size_t pitch;        // bytes between rows
  std::size_t slice_pitch;  // bytes between slices
  space_id space;
  std::uint32_t place_id;
};

struct copy_desc {
  copy_side dst;
  copy_side src;
  std::size_t row_bytes;
  std::size_t rows;  // per slice
  std::size_t slices;
  // The two sides' spans intersect (one memory): the copy reads every source byte before
  // it writes any (memmove semantics, as layout copies promise), in one piece; memcpy of
  // overlapping pieces in parallel corrupted the seams (an outside probe, session 30).
  bool overlapping = false;

  std::size_t total_rows() const noexcept { return rows * slices; }
  std::size_t bytes() const noexcept { return row_bytes * rows * slices; }
  /// Whether both sides are one contiguous run, so the copy is one memcpy.
  bool contiguous() const noexcept {
    return (rows == 1 || (dst.pitch == row_bytes && src.pitch == row_bytes)) &&
           (slices == 1 ||
            (dst.slice_pitch == row_bytes * rows && src.slice_pitch == row_bytes * rows));
  }
};

/// Copies rows [first, last) of `d` (counting over all slices), or, for a contiguous copy,
/// bytes [first, last).
inline void copy_part(copy_desc const& d, std::size_t first, std::size_t last) {
  if (d.overlapping) {  // always the whole copy (host_copy and the engines never split it)
    if (d.contiguous()) {
      std::memmove(d.dst.base + first, d.src.base + first, last - first);
      return;
    }
    std::vector<std::byte> aside((last - first) * d.row_bytes);
    for (std::size_t r = first; r < last; ++r) {
      std::size_t slice = r / d.rows, row = r % d.rows;
      std::memcpy(aside.data() + (r - first) * d.row_bytes,
                  d.src.base + slice * d.src.slice_pitch + row * d.src.pitch, d.row_bytes);
    }
    for (std::size_t r = first; r < last; ++r) {
      std::size_t slice = r / d.rows, row = r % d.rows;
      std::memcpy(d.dst.base + slice * d.dst.slice_pitch + row * d.dst.pitch,
                  aside.data() + (r - first) * d.row_bytes, d.row_bytes);
    }
    return;
  }
  if (d.contiguous()) {
    std::memcpy(d.dst.base + first, d.src.base + first, last - first);
    return;
  }
  for (std::size_t r = first; r < last; ++r) {
    std::size_t slice = r / d.rows, row = r % d.rows;
    std::memcpy(d.dst.base + slice * d.dst.slice_pitch + row * d.dst.pitch,
                d.src.base + slice * d.src.slice_pitch + row * d.src.pitch, d.row_bytes);
  }
}

/// Whether the bytes a side's rows span intersect the other side's: the first byte to one
/// past the last row's end (a conservative test: interleaved rows that share no byte count
/// as overlapping, and are then copied through a buffer, which is still exact).
inline bool spans_intersect(copy_desc const& d) noexcept {
  auto span = [&](copy_side const& s) {
    return (d.slices - 1) * s.slice_pitch + (d.rows - 1) * s.pitch + d.row_bytes;
  };
  if (d.bytes() == 0) return false;
  auto const* a = d.dst.base;
  auto const* b = d.src.base;
  return a < b + span(d.src) && b < a + span(d.dst);
}

/// The amount copy_part counts in: bytes for contiguous copies, rows otherwise.
inline std::size_t copy_units(copy_desc const& d) noexcept {
  return d.contiguous() ? d.bytes() : d.total_rows();
}

}  // namespace strata::detail
