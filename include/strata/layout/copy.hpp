// copy between any two array types of equal size, in any two memory spaces (PARRAY §3.2:
// `copy A(x) to B(y)` makes y[B(k)] a copy of x[A(k)] for every k).
//
// The copy is cut into maximal contiguous runs (PARRAY §5.2): one run is one memcpy; runs
// on a regular grid go to the pitched row copies of the memory layer (asynchronous on a
// device's copy engine); short runs and transposes go to a cache-blocked strided copy on
// the host's processors, in parallel; types without a common strided form (user offset
// functions, cyclic wraps) are copied element by element. Device data that the host
// must permute is staged through host memory.
#pragma once

#include <strata/exec/event.hpp>
#include <strata/exec/launch.hpp>
#include <strata/layout/array_type.hpp>

#include <cstddef>
#include <optional>
#include <type_traits>

// Range checks of copies follow the caller's build: on without NDEBUG or with STRATA_DEBUG.
#if !defined(NDEBUG) || defined(STRATA_DEBUG)
#define STRATA_LAYOUT_CHECKS true
#else
#define STRATA_LAYOUT_CHECKS false
#endif

namespace strata {

namespace detail {

struct layout_side {
  std::byte* base;
  space_id space;
  std::uint32_t place_id;
  dimension const* type;
};

/// Starts dst[B(k)] = src[A(k)] for all k (after `deps`); `where` runs the host part
/// (default: the processors next to the destination's memory).
/// `check_ranges`: check both spans against their allocations (the caller's build decides,
/// see STRATA_LAYOUT_CHECKS above, so a consumer's debug build checks against a release
/// library).
event copy_layout(after const& deps, std::optional<target> const& where, layout_side dst,
                  layout_side src, std::size_t elem, bool check_ranges);

template <class T, class S>
layout_side side_of(array_view<T, S> const& v) {
  return {reinterpret_cast<std::byte*>(const_cast<std::remove_const_t<T>*>(v.data().get())), S::id,
          v.data().place_id(), &v.layout().root()};
}

}  // namespace detail

/// Copies `src` into `dst`, two views of equal size and element type in any two spaces.
template <class TD, class SD, class TS, class SS>
event copy(after const& deps, array_view<TD, SD> const& dst, array_view<TS, SS> const& src) {
  static_assert(std::is_same_v<std::remove_const_t<TD>, std::remove_const_t<TS>>,
                "copy: source and destination must have the same element type");
  static_assert(!std::is_const_v<TD>, "copy: the destination is const");
  static_assert(std::is_trivially_copyable_v<TD>, "copy: elements must be trivially copyable");
  return detail::copy_layout(deps, std::nullopt, detail::side_of(dst), detail::side_of(src),
                             sizeof(TD), STRATA_LAYOUT_CHECKS);
}
template <class TD, class SD, class TS, class SS>
event copy(array_view<TD, SD> const& dst, array_view<TS, SS> const& src) {
  return copy(after{}, dst, src);
}
/// As above, with the host part of the copy on `where` (e.g. a slice of the CPUs).
template <class TD, class SD, class TS, class SS>
event copy(after const& deps, target const& where, array_view<TD, SD> const& dst,
           array_view<TS, SS> const& src) {
  static_assert(std::is_same_v<std::remove_const_t<TD>, std::remove_const_t<TS>>,
                "copy: source and destination must have the same element type");
  static_assert(!std::is_const_v<TD>, "copy: the destination is const");
  static_assert(std::is_trivially_copyable_v<TD>, "copy: elements must be trivially copyable");
  return detail::copy_layout(deps, where, detail::side_of(dst), detail::side_of(src), sizeof(TD),
                             STRATA_LAYOUT_CHECKS);
}

}  // namespace strata
