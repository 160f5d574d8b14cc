// Owning buffers with 1-3D extents and a pitch (Alpaka §3.4.4), and views of them.
//
// The last dimension is contiguous; each row starts at a multiple of the space's row
// alignment (64 bytes on the host for SIMD, 256/512 on devices for coalescing), so a
// row is `pitch` bytes apart from the next, and a 3-D slice `pitch * extent[1]` bytes.
#pragma once

#include <strata/memory/allocate.hpp>
#include <strata/memory/ptr.hpp>
#include <strata/vec.hpp>

#include <cstddef>
#include <string>
#include <utility>

namespace strata {

/// A window of memory: a base pointer, extents, and the byte distance between rows.
template <class T, std::size_t D = 1, memory_space Space = host_space>
class view {
 public:
  using element_type = T;
  using space = Space;
  static constexpr std::size_t rank = D;

  constexpr view() = default;
  /// `pitch` is the byte distance between consecutive rows (ignored in 1-D); `slice_pitch`
  /// between consecutive 2-D slices of a 3-D view (0: rows packed, pitch * extent[1]).
  constexpr view(ptr<T, Space> base, vec<D> extent, std::size_t pitch, std::size_t slice_pitch = 0)
      : base_(base),
        extent_(extent),
        pitch_(D == 1 ? static_cast<std::size_t>(extent[0]) * sizeof(T) : pitch),
        slice_pitch_(D == 3
                         ? (slice_pitch ? slice_pitch : pitch * static_cast<std::size_t>(extent[1]))
                         : pitch_) {}
  /// A dense view: rows packed without padding.
  constexpr view(ptr<T, Space> base, vec<D> extent)
      : view(base, extent, static_cast<std::size_t>(extent[D - 1]) * sizeof(T)) {}

  ptr<T, Space> data() const noexcept { return base_; }
  vec<D> const& extent() const noexcept { return extent_; }
  std::size_t pitch() const noexcept { return pitch_; }
  /// Bytes between consecutive 2-D slices of a 3-D view (a window keeps its parent's).
  std::size_t slice_pitch() const noexcept { return slice_pitch_; }
  index_t size() const noexcept { return extent_.product(); }
  std::size_t row_bytes() const noexcept {
    return static_cast<std::size_t>(extent_[D - 1]) * sizeof(T);
  }
  /// Whether rows follow each other without padding (one contiguous run).
  bool contiguous() const noexcept { return D == 1 || pitch_ == row_bytes(); }

  /// The address of element `i` (row-major over the pitch).
  ptr<T, Space> address(vec<D> const& i) const noexcept {
    std::size_t offset = static_cast<std::size_t>(i[D - 1]) * sizeof(T);
    if constexpr (D >= 2) offset += static_cast<std::size_t>(i[D - 2]) * pitch_;
    if constexpr (D == 3) offset += static_cast<std::size_t>(i[0]) * slice_pitch();
    return ptr<T, Space>(reinterpret_cast<T*>(reinterpret_cast<char*>(base_.get()) + offset),
                         base_.place_id());
  }

  template <std::integral... I>
  requires(sizeof...(I) == D && accessible_here_v<Space>) T& operator()(I... i) const {
    vec<D> idx{static_cast<index_t>(i)...};
#if !defined(NDEBUG)
    check(idx);
#endif
    return *address(idx);
  }

  /// The sub-window starting at `origin` with `extent` (checked against this view).
  view window(vec<D> const& origin, vec<D> const& extent) const {
    for (std::size_t d = 0; d < D; ++d)
      if (origin[d] < 0 || extent[d] < 0 || origin[d] + extent[d] > extent_[d])
        throw invalid_argument("view::window: [" + std::to_string(origin[d]) + ", " +
                               std::to_string(origin[d] + extent[d]) + ") in dimension " +
                               std::to_string(d) + " leaves the view's extent " +
                               std::to_string(extent_[d]));
    return view(address(origin), extent, pitch_, slice_pitch_);
  }

 private:
  void check(vec<D> const& i) const {
    for (std::size_t d = 0; d < D; ++d)
      if (i[d] < 0 || i[d] >= extent_[d])
        throw invalid_argument("view: index " + std::to_string(i[d]) + " in dimension " +
                               std::to_string(d) + " is outside [0, " + std::to_string(extent_[d]) +
                               ")");
  }

  ptr<T, Space> base_;
  vec<D> extent_ = vec<D>::fill(0);
  std::size_t pitch_ = 0;
  std::size_t slice_pitch_ = 0;
};

/// An owning, move-only buffer (Alpaka's mem::buf): allocated at construction, released
/// at destruction.
template <class T, std::size_t D = 1, memory_space Space = host_space>
class buffer {
 public:
  buffer() = default;
  buffer(place const& where, vec<D> extent) : extent_(extent) {
    for (std::size_t d = 0; d < D; ++d)
      if (extent[d] < 1)
        throw invalid_argument("buffer: extent " + std::to_string(extent[d]) + " in dimension " +
                               std::to_string(d) + " is invalid; expected at least 1");
    std::size_t row = detail::bytes_for<T>(static_cast<std::size_t>(extent[D - 1]));
    pitch_ = D == 1 ? row : detail::round_up_checked(row, Space::row_alignment, "buffer row");
    std::size_t rows = 1;  // checked: huge extents must fail, not wrap to a tiny buffer
    for (std::size_t d = 0; d + 1 < D; ++d)
      rows = detail::mul_checked(rows, static_cast<std::size_t>(extent[d]), "buffer rows");
    bytes_ = detail::mul_checked(pitch_, rows, "buffer size");
    auto raw = detail::allocate_bytes(where, bytes_, Space::row_alignment, Space::id);
    data_ = ptr<T, Space>(static_cast<T*>(raw.address), raw.place_id);
  }
  /// A 1-D buffer of n elements.
  buffer(place const& where, std::size_t n) requires(D == 1)
      : buffer(where, vec<1>{static_cast<index_t>(n)}) {}

  /// Adopts memory allocated through the registry (e.g. a mapped file).
  static buffer adopt(ptr<T, Space> data, vec<D> extent, std::size_t pitch, std::size_t bytes) {
    buffer b;
    b.data_ = data;
    b.extent_ = extent;
    b.pitch_ = pitch;
    b.bytes_ = bytes;
    return b;
  }

  buffer(buffer&& o) noexcept
      : data_(std::exchange(o.data_, {})), extent_(o.extent_), pitch_(o.pitch_), bytes_(o.bytes_) {}
  buffer& operator=(buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, {});
      extent_ = o.extent_;
      pitch_ = o.pitch_;
      bytes_ = o.bytes_;
    }
    return *this;
  }
  buffer(buffer const&) = delete;
  buffer& operator=(buffer const&) = delete;
  ~buffer() { release(); }

  ptr<T, Space> data() const noexcept { return data_; }
  vec<D> const& extent() const noexcept { return extent_; }
  std::size_t pitch() const noexcept { return pitch_; }
  std::size_t bytes() const noexcept { return bytes_; }
  index_t size() const noexcept { return extent_.product(); }
  place where() const { return data_.place(); }
  strata::view<T, D, Space> view() const {
    return strata::view<T, D, Space>(data_, extent_, pitch_);
  }
  operator strata::view<T, D, Space>() const { return view(); }  // NOLINT: a buffer is a view

  template <std::integral... I>
  requires(sizeof...(I) == D && accessible_here_v<Space>) T& operator()(I... i) const {
    return view()(i...);
  }

 private:
  void release() noexcept {
    if (data_) {
      try {
        detail::deallocate_bytes(data_.get(), Space::id);
      } catch (...) {
        // A buffer only frees what it allocated; failure here is a broken invariant, and
        // a destructor must not throw.
      }
      data_ = {};
    }
  }

  ptr<T, Space> data_;
  vec<D> extent_ = vec<D>::fill(0);
  std::size_t pitch_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace strata
