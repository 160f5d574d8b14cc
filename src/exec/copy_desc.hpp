// A copy between two memories, as rows of bytes: 1-D copies are one row, pitched 2-D and
// 3-D copies are `rows` rows in each of `slices` slices.
#pragma once

#include <strata/memory/space.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>

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

/// The amount copy_part counts in: bytes for contiguous copies, rows otherwise.
inline std::size_t copy_units(copy_desc const& d) noexcept {
  return d.contiguous() ? d.bytes() : d.total_rows();
}

}  // namespace strata::detail
