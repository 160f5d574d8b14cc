// Record arrays (Ripple §4.2): n records of a description in layout L, in any memory
// space. `record_array` owns the memory (allocated through the registry, like buffer);
// `record_view` is its typed window (pointer + layout + space); kernels receive a
// `record_span` (launch unwraps views as it unwraps ptr, checking the memory's space).
#pragma once

#include <strata/exec/launch.hpp>
#include <strata/exec/work_division.hpp>
#include <strata/layout/record.hpp>
#include <strata/memory/allocate.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

namespace strata {

/// n records in layout L in memory space Space: a typed pointer, the size and the pitch.
/// Indexing needs host-accessible memory; kernels get the span (launch converts).
template <record_desc D, class L, memory_space Space = host_space>
class record_view {
  using map = detail::record_map<L, D>;

 public:
  using desc = D;
  using layout = L;
  using space = Space;
  using reference = record_ref<D, L>;

  constexpr record_view() = default;
  /// n records in layout L from `base` (which spans at least required_span_bytes()).
  /// Throws invalid_argument for a negative n or one whose span overflows: a wrapped span
  /// (0 bytes for 2^61 records of 8) made copies move nothing or read past the memory.
  record_view(ptr<std::byte, Space> base, index_t size)
      : base_(base), size_(size), pitch_(checked_pitch(size, "record_view")) {}

  /// pitch_for(n), after checking that n >= 0 and that the array's bytes fit in size_t
  /// (with a cache line per record to spare, as record_array allocates).
  static index_t checked_pitch(index_t n, char const* what) {
    if (n < 0)
      throw invalid_argument(std::string(what) + ": size " + std::to_string(n) +
                             " is invalid; expected at least 0");
    // pitch_for rounds n up (to 64 for SoA): below 2^62 that cannot wrap index_t.
    if (n > (index_t{1} << 62))
      throw invalid_argument(std::string(what) + ": size " + std::to_string(n) +
                             " is too large; expected at most 2^62 records");
    index_t const pitch = map::pitch_for(n);
    detail::mul_checked(static_cast<std::size_t>(pitch), record_traits<D>::record_bytes + 64, what);
    return pitch;
  }

  /// The array's base (element 0 of the array, not of a sub-view: see first()).
  ptr<std::byte, Space> data() const noexcept { return base_; }
  index_t size() const noexcept { return size_; }
  /// Elements between component arrays (SoA), the size rounded up to whole blocks (AoSoA),
  /// the size (AoS): the whole array's, also in a sub-view.
  index_t pitch() const noexcept { return pitch_; }
  /// This view's element 0 in the array (0 unless it is a sub-view).
  index_t first() const noexcept { return first_; }
  /// Whether this view is a whole array (not a window of a larger one). A window's pitch
  /// cannot tell: the first 90 of 100 SoA records have the pitch 100 records have.
  bool whole() const noexcept { return !window_; }
  /// Bytes the layout spans from data() (mdspan's required_span_size, in bytes): the whole
  /// array's, also in a sub-view (whose elements are spread over it).
  std::size_t required_span_bytes() const noexcept { return map::bytes_at_pitch(pitch_); }
  record_view view() const noexcept { return *this; }

  /// Records [offset, offset + count) of this view, with the array's pitch (Ripple's
  /// partitions and PARRAY's windows of record arrays): kernels, copies and
  /// for_each_record see count records; the rest of the array is not touched.
  record_view subview(index_t offset, index_t count) const {
    if (offset < 0 || count < 0 || offset > size_ - count)
      throw invalid_argument("record_view::subview: [" + std::to_string(offset) + ", " +
                             std::to_string(offset) + " + " + std::to_string(count) +
                             ") is outside the view's [0, " + std::to_string(size_) + ")");
    record_view v = *this;
    v.window_ = window_ || offset != 0 || count != size_;
    v.size_ = count;
    v.first_ = first_ + offset;
    return v;
  }

  /// The raw span kernels use (no space check: prefer passing the view to launch).
  record_span<D, L> span() const noexcept { return {base_.get(), size_, pitch_, first_}; }

  reference operator[](index_t i) const requires accessible_here_v<Space> { return span()[i]; }

 private:
  ptr<std::byte, Space> base_;
  index_t size_ = 0;
  index_t pitch_ = 0;
  index_t first_ = 0;
  bool window_ = false;
};

/// An owning, move-only array of n records in layout L, allocated in Space at or near
/// `where` (uninitialized, as allocate's memory is).
template <record_desc D, class L, memory_space Space = host_space>
class record_array {
  using map = detail::record_map<L, D>;

 public:
  using desc = D;
  using layout = L;
  using space = Space;
  using view_type = record_view<D, L, Space>;
  using value_type = record_value<D>;

  /// The alignment of record memory: the space's rows, a cache line, and the description's
  /// most-aligned field (the layouts place fields at multiples of their alignment from the
  /// base, so a field declared alignas(128) needs a 128-aligned base).
  static constexpr std::size_t alignment =
      std::max({Space::row_alignment, std::size_t{64}, record_traits<D>::info::max_align});

  record_array() = default;
  // Overflow: the largest pitch in bytes must fit, checked before it is computed.
  record_array(place const& where, index_t n)
      : size_(n), pitch_(view_type::checked_pitch(n, "record_array")) {
    if (n == 0) return;
    bytes_ = map::bytes_for(n);
    std::size_t const align = alignment;
    auto raw = detail::allocate_bytes(where, bytes_, align, Space::id);
    data_ = ptr<std::byte, Space>(static_cast<std::byte*>(raw.address), raw.place_id);
  }
  record_array(record_array&& o) noexcept
      : data_(std::exchange(o.data_, {})),
        size_(std::exchange(o.size_, 0)),
        pitch_(std::exchange(o.pitch_, 0)),
        bytes_(std::exchange(o.bytes_, 0)) {}
  record_array& operator=(record_array&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, {});
      size_ = std::exchange(o.size_, 0);
      pitch_ = std::exchange(o.pitch_, 0);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  record_array(record_array const&) = delete;
  record_array& operator=(record_array const&) = delete;
  ~record_array() { release(); }

  index_t size() const noexcept { return size_; }
  index_t pitch() const noexcept { return pitch_; }
  std::size_t bytes() const noexcept { return bytes_; }
  ptr<std::byte, Space> data() const noexcept { return data_; }
  place where() const { return data_.place(); }

  view_type view() const noexcept { return view_type(data_, size_); }
  /// Records [offset, offset + count) (record_view::subview).
  view_type subview(index_t offset, index_t count) const { return view().subview(offset, count); }
  operator view_type() const noexcept { return view(); }  // NOLINT: an array is a view
  record_span<D, L> span() const noexcept { return view().span(); }

  record_ref<D, L> operator[](index_t i) const requires accessible_here_v<Space> {
    return view()[i];
  }

 private:
  void release() noexcept {
    if (data_) {
      try {
        detail::deallocate_bytes(data_.get(), Space::id);
      } catch (...) {
        // Only what this array allocated is freed; a failure is a broken invariant, and a
        // destructor must not throw.
      }
      data_ = {};
    }
  }

  ptr<std::byte, Space> data_;
  index_t size_ = 0;
  index_t pitch_ = 0;
  std::size_t bytes_ = 0;
};

template <class V>
struct is_record_view : std::false_type {};
template <class D, class L, class S>
struct is_record_view<record_view<D, L, S>> : std::true_type {};
template <class D, class L, class S>
struct is_record_view<record_array<D, L, S>> : std::true_type {};

/// A record_view or a record_array (a copy's argument).
template <class V>
concept record_viewable = is_record_view<std::remove_cvref_t<V>>::value;

/// divide_work for the records of an array or view: as divide_work(where, size), except
/// that on CPU backends each thread's range of an AoSoA starts and ends on a block
/// boundary (whole blocks per range: no partial-block loops, and no two threads writing
/// the cache lines of one block).
template <level_policy Policy = streaming_group, record_viewable V>
shape<1, Policy> divide_work(target const& where, V const& records) {
  auto s = divide_work<Policy>(where, records.size());
  using RV = std::remove_cvref_t<V>;
  using W = detail::block_walk<typename RV::desc, typename RV::layout>;
  if constexpr (W::blocked) {
    index_t const e = s.element_extent()[0];
    if (s.block_extent()[0] == 1 && e > 1) {  // the CPU streaming form: ranges of e
      index_t const b = W::block;
      index_t const per = (e + b - 1) / b * b;
      return shape<1, Policy>(vec<1>{(records.size() + per - 1) / per}, s.block_extent(),
                              vec<1>{per});
    }
  }
  return s;
}

namespace detail {

// Kernels receive record_span for record_view arguments, as they receive T* for ptr<T, S>;
// the view's memory is checked against the launch's backend like a typed pointer (found
// by ADL from launch's unqualified to_kernel_arg call; more constrained than the generic
// overload, so preferred).
template <class D, class L, class S>
struct kernel_arg<record_view<D, L, S>> {
  using type = record_span<D, L>;
};

template <class V>
requires is_record_view<std::remove_cvref_t<V>>::value &&
    (!std::is_same_v<std::remove_cvref_t<V>, record_array<typename std::remove_cvref_t<V>::desc,
                                                          typename std::remove_cvref_t<V>::layout,
                                                          typename std::remove_cvref_t<V>::space>>)
        record_span<typename std::remove_cvref_t<V>::desc,
                    typename std::remove_cvref_t<V>::layout> to_kernel_arg(placement const& p,
                                                                           V&& v,
                                                                           std::size_t index) {
  using S = typename std::remove_cvref_t<V>::space;
  if (v.data()) check_kernel_pointer(p, v.data().get(), S::id, true, v.data().place_id(), index);
  return v.span();
}

}  // namespace detail
}  // namespace strata
