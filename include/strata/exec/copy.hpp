// copy(dst, src) -> event between any two memories (Phalanx §III-C; Alpaka §3.4.4 copies
// with pitch), and fill/memset. A copy that involves a device is asynchronous on that
// device's copy engine; a large host copy runs in parallel on the pool. The event
// completes when the bytes have arrived.
//
// Copies live in the execution layer, not the memory layer, because they are operations
// that return events and run on backends; they take the memory layer's ptr, view and
// buffer types.
#pragma once

#include <strata/exec/event.hpp>
#include <strata/exec/launch.hpp>
#include <strata/exec/work_division.hpp>
#include <strata/memory/buffer.hpp>
#include <strata/memory/ptr.hpp>

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>

namespace strata {

namespace detail {

struct copy_side_desc {
  void* base;
  std::size_t pitch;
  std::size_t slice_pitch;
  space_id space;
  std::uint32_t place_id;
};

/// Starts a copy of `slices` x `rows` rows of `row_bytes` (after `deps`).
event copy_rows(after const& deps, copy_side_desc dst, copy_side_desc src, std::size_t row_bytes,
                std::size_t rows, std::size_t slices);

/// Sets `slices` x `rows` rows of `row_bytes` of CUDA (device or managed) memory to `byte`
/// with cudaMemsetAsync / cudaMemset2DAsync on the GPU's stream (after `deps`). In the
/// library, so that memset works from files the host compiler builds too.
event memset_rows(after const& deps, copy_side_desc dst, std::size_t row_bytes, std::size_t rows,
                  std::size_t slices, unsigned char byte);

/// In builds without NDEBUG: checks that [p, p + bytes) lies in one live allocation of
/// `space` (a freed pointer, a pointer of another space, or a range running past its
/// allocation is an error naming `what`). Pointers Strata did not allocate pass when the
/// space is host-accessible.
void check_range(void const* p, std::size_t bytes, space_id space, char const* what);

/// The place a fill of `address` (whose pointer says memory `memory_place`) runs on: the
/// processors next to the memory.
target fill_target(void const* address, std::uint32_t memory_place);
/// fill_target for a view of `space`: a null address, or a memory place of another kind
/// than the space (a `cuda_space` pointer naming host memory, which a host kernel would
/// then write through), is an invalid_argument naming `what`.
target fill_target(void const* address, std::uint32_t memory_place, space_id space,
                   char const* what);

template <class V>
struct view_traits;
template <class T, std::size_t D, class S>
struct view_traits<view<T, D, S>> {
  using type = view<T, D, S>;
};
template <class T, std::size_t D, class S>
struct view_traits<buffer<T, D, S>> {
  using type = view<T, D, S>;
};

template <class V>
using view_of = typename view_traits<std::remove_cvref_t<V>>::type;

template <class V>
view_of<V> as_view(V const& v) {
  if constexpr (std::is_same_v<std::remove_cvref_t<V>, view_of<V>>)
    return v;
  else
    return v.view();
}

template <class T, std::size_t D, class S>
copy_side_desc side_of(view<T, D, S> const& v) {
  return {const_cast<std::remove_const_t<T>*>(v.data().get()), v.pitch(), v.slice_pitch(), S::id,
          v.data().place_id()};
}

template <std::size_t D>
std::string shape_text(vec<D> const& e) {
  std::string s = "[";
  for (std::size_t i = 0; i < D; ++i) s += (i ? " x " : "") + std::to_string(e[i]);
  return s + "]";
}

}  // namespace detail

template <class V>
concept viewable = requires {
  typename detail::view_of<V>;
};

namespace detail {

/// The arguments of copy_rows for one view-to-view copy (rows == 0: nothing to copy).
/// Planned once, a copy repeated between the same views (a tensor's halo exchange) is
/// issued without its checks and shape arithmetic again.
struct view_copy {
  copy_side_desc dst{}, src{};
  std::size_t row_bytes = 0, rows = 0, slices = 0;
  std::size_t dst_span = 0, src_span = 0;  // the bytes each side's rows cover
};

/// One side of a copy to plan: where its first element is and its extents.
struct copy_plan_side {
  copy_side_desc desc;
  index_t const* extent;  // rank entries
};

/// Checks a copy of `rank`-D boxes of `elem_bytes`-byte elements and says how to issue it
/// (src/exec/copy.cpp). Out of line: plan_view_copy is instantiated for every pair of
/// memory spaces a tensor's halo may join (tensor/boundary.hpp), and compiling this body
/// into each pair was a seventh of the text of a tensor-using unit (session 35).
view_copy plan_copy(copy_plan_side dst, copy_plan_side src, std::size_t rank,
                    std::size_t elem_bytes);

/// Checks a copy of `src` into `dst` and says how to issue it.
template <viewable Dst, viewable Src>
view_copy plan_view_copy(Dst const& dst_in, Src const& src_in) {
  auto dst = as_view(dst_in);
  auto src = as_view(src_in);
  using DV = decltype(dst);
  using SV = decltype(src);
  static_assert(std::is_same_v<std::remove_const_t<typename DV::element_type>,
                               std::remove_const_t<typename SV::element_type>>,
                "copy: source and destination must have the same element type");
  static_assert(!std::is_const_v<typename DV::element_type>, "copy: the destination is const");
  static_assert(DV::rank == SV::rank, "copy: source and destination must have the same rank");
  using T = std::remove_const_t<typename DV::element_type>;
  auto const de = dst.extent();
  auto const se = src.extent();
  return plan_copy({side_of(dst), de.v}, {side_of(src), se.v}, DV::rank, sizeof(T));
}

/// Issues a planned copy (after `deps`).
inline event start_view_copy(after const& deps, view_copy const& p) {
  if (p.rows == 0) return when_all(deps);
  return copy_rows(deps, p.dst, p.src, p.row_bytes, p.rows, p.slices);
}

}  // namespace detail

/// Copies `src` into `dst`: two views (or buffers) of the same extents and element type,
/// in any two memory spaces, 1-3D, each with its own pitch.
template <viewable Dst, viewable Src>
event copy(after const& deps, Dst const& dst, Src const& src) {
  auto const p = detail::plan_view_copy(dst, src);
#if !defined(NDEBUG)
  if (p.rows != 0) {
    detail::check_range(p.dst.base, p.dst_span, p.dst.space, "copy destination");
    detail::check_range(p.src.base, p.src_span, p.src.space, "copy source");
  }
#endif
  return detail::start_view_copy(deps, p);
}

template <viewable Dst, viewable Src>
event copy(Dst const& dst, Src const& src) {
  return copy(after{}, dst, src);
}

/// Copies the box [0, extent) of `src` into the same box of `dst`.
template <viewable Dst, viewable Src, std::size_t D>
event copy(after const& deps, Dst const& dst, Src const& src, vec<D> const& extent) {
  return copy(deps, detail::as_view(dst).window(vec<D>::fill(0), extent),
              detail::as_view(src).window(vec<D>::fill(0), extent));
}
template <viewable Dst, viewable Src, std::size_t D>
event copy(Dst const& dst, Src const& src, vec<D> const& extent) {
  return copy(after{}, dst, src, extent);
}

/// Copies n elements between two pointers of any spaces.
template <class TD, class SD, class TS, class SS>
event copy(after const& deps, ptr<TD, SD> dst, ptr<TS, SS> src, std::size_t n) {
  auto len = vec<1>{static_cast<index_t>(n)};
  return copy(deps, view<TD, 1, SD>(dst, len), view<TS, 1, SS>(src, len));
}
template <class TD, class SD, class TS, class SS>
event copy(ptr<TD, SD> dst, ptr<TS, SS> src, std::size_t n) {
  return copy(after{}, dst, src, n);
}

namespace detail {
template <std::size_t D, class T>
struct fill_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, std::byte* base, std::size_t pitch,
                            std::size_t slice_pitch, vec<D> extent, T value) const {
    for (auto p : self.elements(extent)) {
      vec<D> i{};
      if constexpr (D == 1)
        i = vec<1>{p};
      else
        i = p;
      std::size_t offset = static_cast<std::size_t>(i[D - 1]) * sizeof(T);
      if constexpr (D >= 2) offset += static_cast<std::size_t>(i[D - 2]) * pitch;
      if constexpr (D == 3) offset += static_cast<std::size_t>(i[0]) * slice_pitch;
      std::memcpy(base + offset, &value, sizeof(T));
    }
  }
};
}  // namespace detail

/// Sets every element of `dst` to `value`, on processors next to its memory (the host's
/// for host memory, the device's for device memory).
template <viewable Dst>
event fill(after const& deps, Dst const& dst_in,
           std::remove_const_t<typename detail::view_of<Dst>::element_type> value) {
  auto dst = detail::as_view(dst_in);
  using V = decltype(dst);
  static_assert(!std::is_const_v<typename V::element_type>,
                "fill: the destination is const (a view<T const>); fill a view of T");
  using T = typename V::element_type;
  constexpr std::size_t D = V::rank;
  if (dst.size() == 0) return when_all(deps);
  auto where = detail::fill_target(dst.data().get(), dst.data().place_id(), V::space::id, "fill");
  auto s = divide_work(where, dst.extent());
  return launch(deps, where, s, detail::fill_kernel<D, T>{},
                reinterpret_cast<std::byte*>(dst.data().get()), dst.pitch(), dst.slice_pitch(),
                dst.extent(), value);
}
template <viewable Dst>
event fill(Dst const& dst, std::remove_const_t<typename detail::view_of<Dst>::element_type> value) {
  return fill(after{}, dst, value);
}

/// Sets every byte of `dst`'s elements to `byte` (not its row padding), after `deps`. On
/// CUDA memory: cudaMemsetAsync / cudaMemset2DAsync (from any file); elsewhere a fill.
template <viewable Dst>
event memset(after const& deps, Dst const& dst_in, unsigned char byte) {
  auto dst = detail::as_view(dst_in);
  using V = decltype(dst);
  static_assert(!std::is_const_v<typename V::element_type>,
                "memset: the destination is const (a view<T const>); memset a view of T");
  constexpr std::size_t D = V::rank;
  using S = typename V::space;
  if constexpr (S::id == space_id::cuda || S::id == space_id::managed) {
    // CUDA's memset engine, not a byte-per-thread kernel.
    if (dst.size() == 0) return when_all(deps);
    std::size_t const rows = D >= 2 ? static_cast<std::size_t>(dst.extent()[D - 2]) : 1;
    std::size_t const slices = D == 3 ? static_cast<std::size_t>(dst.extent()[0]) : 1;
    std::size_t const row_bytes =
        static_cast<std::size_t>(dst.extent()[D - 1]) * sizeof(typename V::element_type);
    return detail::memset_rows(deps, detail::side_of(dst), row_bytes, rows, slices, byte);
  }
  vec<D> bytes_extent = dst.extent();
  bytes_extent[D - 1] *= static_cast<index_t>(sizeof(typename V::element_type));
  using B = std::byte;
  // The window's own slice pitch: recomputed from pitch x rows, a 3-D window's slices
  // would land inside its parent's and the fill would write rows it does not own.
  view<B, D, S> raw(ptr<B, S>(reinterpret_cast<B*>(dst.data().get()), dst.data().place_id()),
                    bytes_extent, dst.pitch(), dst.slice_pitch());
  if (dst.size() == 0) return when_all(deps);
  auto where = detail::fill_target(dst.data().get(), dst.data().place_id(), S::id, "memset");
  return launch(deps, where, divide_work(where, raw.extent()), detail::fill_kernel<D, B>{},
                raw.data().get(), raw.pitch(), raw.slice_pitch(), raw.extent(), std::byte{byte});
}
template <viewable Dst>
event memset(Dst const& dst, unsigned char byte) {
  return memset(after{}, dst, byte);
}

}  // namespace strata
