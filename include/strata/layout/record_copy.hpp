// copy(dst, src) -> event between record arrays of any two layouts and memory spaces
// (Ripple §4.2: the layout is a parameter, so data must move between layouts; PARRAY §5.2:
// move maximal contiguous runs).
//
// * Same layout, whole arrays: one contiguous copy of the bytes.
// * Both sides host-accessible, otherwise (other layouts, sub-views): a conversion kernel
//   on the processors next to the destination (parallel, vectorized where the layouts
//   allow).
// * Whole arrays of two layouts with a device on either side: the source's bytes move once
//   into the converting device's memory (the destination's, or the source's when the
//   destination is host memory) and a conversion kernel runs there.
// * Otherwise (sub-views, one layout, CUDA from host-compiled files): per component,
//   pitched 2-D/3-D copies of the runs both layouts keep contiguous, on the device's copy
//   engine (asynchronous).
//
// Like the copies of plain views, these live with the execution layer's machinery (they
// return events and run on backends) although the types are the layout layer's.
#pragma once

#include <strata/exec/copy.hpp>
#include <strata/exec/work_division.hpp>
#include <strata/layout/record_array.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

template <record_viewable Dst, record_viewable Src>
event copy(after const& deps, Dst const& dst_in, Src const& src_in);

namespace detail {

/// One component of one side of a record copy: where element 0 is, and how elements
/// follow (block == 0: every element `stride` bytes after the previous one; else blocks of
/// `block` elements `stride` bytes apart, blocks `block_bytes` apart).
struct record_run_side {
  std::byte* start;
  std::size_t block;
  std::size_t stride;
  std::size_t block_bytes;
};

struct record_copy_plan {
  copy_side_desc dst_side;
  copy_side_desc src_side;
  std::vector<event>* events;
  after const* deps;

  void emit(record_run_side const& d, record_run_side const& s, std::size_t row_bytes,
            std::size_t rows, std::size_t slices, std::size_t dst_pitch, std::size_t src_pitch,
            std::size_t dst_slice, std::size_t src_slice) {
    if (rows == 0 || slices == 0) return;
    auto dd = dst_side, ss = src_side;
    dd.base = d.start;
    dd.pitch = dst_pitch;
    dd.slice_pitch = dst_slice;
    ss.base = s.start;
    ss.pitch = src_pitch;
    ss.slice_pitch = src_slice;
    events->push_back(copy_rows(*deps, dd, ss, row_bytes, rows, slices));
  }

  /// Copies n elements of `size` bytes from s to d as pitched rows. Blocks nest because
  /// AoSoA block lengths are powers of two.
  void run(record_run_side d, record_run_side s, std::size_t n, std::size_t size) {
    if (n == 0) return;
    if (d.block == 0 && s.block == 0) {
      // Both unblocked: one row per element (one row in all when both are dense).
      if (d.stride == size && s.stride == size)
        return emit(d, s, n * size, 1, 1, n * size, n * size, n * size, n * size);
      return emit(d, s, size, n, 1, d.stride, s.stride, n * d.stride, n * s.stride);
    }
    if (d.block != 0 && s.block != 0 && d.block == s.block) {
      // Same blocks: a 2-D copy of whole block rows, then the tail.
      std::size_t const b = d.block, full = n / b;
      emit(d, s, b * size, full, 1, d.block_bytes, s.block_bytes, full * d.block_bytes,
           full * s.block_bytes);
      return run(unblocked(d, full), unblocked(s, full), n - full * b, size);
    }
    bool const d_big = d.block == 0 || (s.block != 0 && d.block > s.block);
    record_run_side& big = d_big ? d : s;  // unblocked, or the larger block
    record_run_side& small = d_big ? s : d;
    std::size_t const g = small.block;
    if (big.block == 0) {
      // Blocks of g against a sequence: per block, g elements.
      std::size_t const full = n / g;
      if (big.stride == size) {  // a dense sequence: whole block rows
        auto [dp, sp] =
            d_big ? std::pair{g * size, small.block_bytes} : std::pair{small.block_bytes, g * size};
        emit(d, s, g * size, full, 1, dp, sp, full * dp, full * sp);
      } else {  // a strided sequence: element rows, one slice per block
        auto [dp, sp] = d_big ? std::pair{big.stride, size} : std::pair{size, big.stride};
        auto [dsl, ssl] = d_big ? std::pair{g * big.stride, small.block_bytes}
                                : std::pair{small.block_bytes, g * big.stride};
        emit(d, s, size, g, full, dp, sp, dsl, ssl);
      }
      record_run_side big_tail = big, small_tail = small;
      big_tail.start += full * g * big.stride;
      small_tail = unblocked(small, full);
      return d_big ? run(big_tail, small_tail, n - full * g, size)
                   : run(small_tail, big_tail, n - full * g, size);
    }
    // Two block lengths, g dividing L: a slice per large block, a row per small block.
    std::size_t const l = big.block, full = n / l, per = l / g;
    auto [dp, sp] =
        d_big ? std::pair{g * size, small.block_bytes} : std::pair{small.block_bytes, g * size};
    auto [dsl, ssl] = d_big ? std::pair{big.block_bytes, per * small.block_bytes}
                            : std::pair{per * small.block_bytes, big.block_bytes};
    emit(d, s, g * size, per, full, dp, sp, dsl, ssl);
    record_run_side big_tail = unblocked(big, full), small_tail = small;
    small_tail.start += full * per * small.block_bytes;
    return d_big ? run(big_tail, small_tail, n - full * l, size)
                 : run(small_tail, big_tail, n - full * l, size);
  }

  /// As run, for sides that may start inside a block (sub-views): lane `dl` of d's first
  /// block and lane `sl` of s's. Runs up to the next block boundary of a side inside a block
  /// go as dense sequences, until both sides are on boundaries (or unblocked); sides whose
  /// lanes never line up go in pieces of at most a block.
  void run_from(record_run_side d, std::size_t dl, record_run_side s, std::size_t sl, std::size_t n,
                std::size_t size) {
    while (n > 0 && (dl != 0 || sl != 0)) {
      std::size_t k = n;
      if (dl != 0) k = std::min(k, d.block - dl);
      if (sl != 0) k = std::min(k, s.block - sl);
      run(lanes(d, dl), lanes(s, sl), k, size);
      advance(d, dl, k);
      advance(s, sl, k);
      n -= k;
    }
    run(d, s, n, size);
  }

  /// Elements from lane l of x's current block as a sequence (they stay inside the block);
  /// x itself when it is unblocked or on a block boundary.
  static record_run_side lanes(record_run_side const& x, std::size_t l) {
    return l == 0 ? x : record_run_side{x.start + l * x.stride, 0, x.stride, 0};
  }
  static void advance(record_run_side& x, std::size_t& l, std::size_t k) {
    if (x.block == 0) {
      x.start += k * x.stride;
      return;
    }
    l += k;
    x.start += l / x.block * x.block_bytes;
    l %= x.block;
  }

  /// The partial block after `full` whole blocks, as a dense sequence.
  static record_run_side unblocked(record_run_side const& x, std::size_t full) {
    return {x.start + full * x.block_bytes, 0, x.stride, 0};
  }
};

/// Bytes between the blocks of field k's arrays (field groups have one block size each).
template <class M>
constexpr std::size_t field_block_bytes(std::size_t k) {
  if constexpr (requires { M::block_bytes_of(k); })
    return M::block_bytes_of(k);
  else
    return M::block_bytes;
}

/// Component d of field K from element `first` of an array at `base`: the run's side and
/// the lane `first` has in its block (0 when unblocked).
template <class L, class D, std::size_t K>
std::pair<record_run_side, std::size_t> run_side(std::byte* base, std::size_t d, index_t pitch,
                                                 index_t first) {
  using M = record_map<L, D>;
  record_run_side x{base + M::start(K, d, pitch), M::block, M::element_stride(K),
                    field_block_bytes<M>(K)};
  auto const f = static_cast<std::size_t>(first);
  if (x.block == 0) {
    x.start += f * x.stride;
    return {x, 0};
  }
  x.start += f / x.block * x.block_bytes;
  return {x, f % x.block};
}

template <class D, class DL, class SL>
struct record_convert_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, record_span<D, DL> dst,
                            record_span<D, SL> src) const {
    for (auto i : self.elements(dst.size())) dst[i] = src[i];
  }
};

/// Whether a conversion kernel can run on the processors next to memory of space S from
/// this file: host memory, sim devices, CUDA devices in files nvcc compiles (a kernel
/// launched on CUDA must be in the device image).
template <class S>
inline constexpr bool converts_here_v = S::host_accessible || S::id == space_id::sim
#if defined(__CUDACC__)
                                        || S::id == space_id::cuda
#endif
    ;

/// Whole arrays of two layouts with a device on one side or both: the source's bytes move
/// once (one contiguous copy into a staging array in the converting device's memory) and a
/// kernel there converts them, instead of per-component pitched copies whose rows are one
/// component wide (4 bytes for AoS <-> SoA: what a copy engine moves worst).
/// No event when the staging array does not fit the device: the destination may fit
/// where a second copy of the records does not, and the caller then copies per component
/// (slower, but needing no memory of its own).
template <class DV, class SV>
std::optional<event> convert_on_device(after const& deps, DV const& dst, SV const& src) {
  using D = typename DV::desc;
  using DL = typename DV::layout;
  using SL = typename SV::layout;
  using DS = typename DV::space;
  using SS = typename SV::space;
  index_t const n = dst.size();
  // The staging is freed by the continuation of the copy's last operation, without the
  // wait for the device's queued work that a free makes: that work may include operations
  // after this copy, which wait for this very continuation.
  struct staging_memory {
    std::shared_ptr<std::byte> bytes;
    std::uint32_t place_id;
  };
  auto stage = [](place const& where, space_id space,
                  std::size_t bytes) -> std::optional<staging_memory> {
    // A cache line, or the description's most-aligned field (as record_array aligns).
    constexpr std::size_t align = std::max(std::size_t{64}, record_traits<D>::info::max_align);
    raw_allocation raw{};
    try {
      raw = allocate_bytes(where, bytes, align, space);
    } catch (out_of_memory const&) {
      return std::nullopt;
    }
    return staging_memory{
        std::shared_ptr<std::byte>(static_cast<std::byte*>(raw.address),
                                   [space](std::byte* p) {
                                     try {
                                       deallocate_bytes_used_up(p, space);
                                     } catch (...) {  // a broken invariant; must not throw
                                     }
                                   }),
        raw.place_id};
  };
  if constexpr (!DS::host_accessible) {  // convert where the destination lives
    auto where = fill_target(dst.data().get(), dst.data().place_id());
    auto staged = stage(dst.data().place(), DS::id, src.required_span_bytes());
    if (!staged) return std::nullopt;
    auto& staging = *staged;
    record_view<D, SL, DS> const copy_of_src(
        ptr<std::byte, DS>(staging.bytes.get(), staging.place_id), n);
    event moved = copy(deps, copy_of_src, src);  // one layout, whole arrays: one byte copy
    event done = launch(after(moved), where, divide_work(where, n),
                        record_convert_kernel<D, DL, SL>{}, dst, copy_of_src);
    done.then([keep = staging.bytes] {});
    return done;
  } else {  // the source is on the device: convert there, then move the bytes once
    auto where = fill_target(src.data().get(), src.data().place_id());
    auto staged = stage(src.data().place(), SS::id, dst.required_span_bytes());
    if (!staged) return std::nullopt;
    auto& staging = *staged;
    record_view<D, DL, SS> const converted_src(
        ptr<std::byte, SS>(staging.bytes.get(), staging.place_id), n);
    event converted = launch(deps, where, divide_work(where, n), record_convert_kernel<D, DL, SL>{},
                             converted_src, src);
    event done = copy(after(converted), dst, converted_src);
    done.then([keep = staging.bytes] {});
    return done;
  }
}

}  // namespace detail

/// Copies the records of `src` into `dst` (same description, equal sizes, any layouts and
/// memory spaces); the event completes when the last byte has arrived.
template <record_viewable Dst, record_viewable Src>
event copy(after const& deps, Dst const& dst_in, Src const& src_in) {
  auto dst = dst_in.view();
  auto src = src_in.view();
  using DV = decltype(dst);
  using SV = decltype(src);
  using D = typename DV::desc;
  using DL = typename DV::layout;
  using SL = typename SV::layout;
  using DS = typename DV::space;
  using SS = typename SV::space;
  static_assert(std::is_same_v<D, typename SV::desc>,
                "copy: source and destination must hold records of the same description");
  if (dst.size() != src.size())
    throw invalid_argument("copy: the destination holds " + std::to_string(dst.size()) +
                           " records and the source " + std::to_string(src.size()) +
                           "; expected equal sizes");
  if (dst.size() == 0) return when_all(deps);
  if (!dst.data() || !src.data())
    throw invalid_argument(std::string("copy: the ") + (dst.data() ? "source" : "destination") +
                           " record array has no memory");
#if !defined(NDEBUG)
  detail::check_range(dst.data().get(), dst.required_span_bytes(), DS::id, "copy destination");
  detail::check_range(src.data().get(), src.required_span_bytes(), SS::id, "copy source");
#endif
  // Overlap: one memory seen through two views whose records intersect: two windows of
  // one array (same base, layout and pitch) by their indices, any other pair by the bytes
  // their arrays span (an SoA window's records lie all over its array). The host reads
  // every record before it writes any (the source is staged: memmove semantics); a device
  // copy would race its own rows, so it is refused.
  {
    std::byte const* d0 = dst.data().get();
    std::byte const* s0 = src.data().get();
    std::size_t const dbytes = dst.required_span_bytes(), sbytes = src.required_span_bytes();
    constexpr bool host_both = DS::host_accessible && SS::host_accessible;
    bool const same_array = std::is_same_v<DL, SL> && (host_both || DS::id == SS::id) && d0 == s0 &&
                            dst.pitch() == src.pitch();
    bool const overlap =
        same_array
            ? dst.first() < src.first() + src.size() && src.first() < dst.first() + dst.size()
            : (host_both || DS::id == SS::id) && d0 < s0 + sbytes && s0 < d0 + dbytes;
    if (overlap) {
      if (same_array && dst.first() == src.first()) return when_all(deps);  // the records
      if constexpr (!host_both) {
        throw invalid_argument(
            "copy: the destination and source record arrays overlap in device memory (" +
            std::to_string(dbytes) + " and " + std::to_string(sbytes) +
            " bytes); expected disjoint memory (copy through a separate array)");
      } else {
        // Aligned as the source's own memory (a field may be over-aligned).
        constexpr std::align_val_t align{record_array<D, SL, host_space>::alignment};
        auto staged =
            std::shared_ptr<std::byte>(static_cast<std::byte*>(::operator new(sbytes, align)),
                                       [](std::byte* p) { ::operator delete(p, align); });
        detail::copy_side_desc to{staged.get(), sbytes, sbytes, space_id::host, 0};
        detail::copy_side_desc from{src.data().get(), sbytes, sbytes, SS::id,
                                    src.data().place_id()};
        event read = detail::copy_rows(deps, to, from, sbytes, 1, 1);
        // The staged array has the source's pitch (pitch_for gives a pitch back unchanged).
        auto const copy_of_src =
            record_view<D, SL, host_space>(ptr<std::byte, host_space>(staged.get(), 0), src.pitch())
                .subview(src.first(), src.size());
        event done = copy(after(read), dst, copy_of_src);
        done.then([staged] {});
        return done;
      }
    }
  }
  detail::copy_side_desc dside{dst.data().get(), 0, 0, DS::id, dst.data().place_id()};
  detail::copy_side_desc sside{src.data().get(), 0, 0, SS::id, src.data().place_id()};
  if (std::is_same_v<DL, SL> && dst.whole() && src.whole()) {
    std::size_t const bytes = dst.required_span_bytes();
    dside.pitch = sside.pitch = dside.slice_pitch = sside.slice_pitch = bytes;
    return detail::copy_rows(deps, dside, sside, bytes, 1, 1);
  }
  if constexpr (DS::host_accessible && SS::host_accessible) {
    auto where = detail::fill_target(dst.data().get(), dst.data().place_id());
    return launch(deps, where, divide_work(where, dst.size()),
                  detail::record_convert_kernel<D, DL, SL>{}, dst, src);
  } else {
    constexpr bool convert =
        !std::is_same_v<DL, SL> &&
        (DS::host_accessible ? detail::converts_here_v<SS> : detail::converts_here_v<DS>);
    if constexpr (convert)
      if (dst.whole() && src.whole())
        if (auto done = detail::convert_on_device(deps, dst, src)) return *std::move(done);
    std::vector<event> events;
    detail::record_copy_plan plan{dside, sside, &events, &deps};
    auto const n = static_cast<std::size_t>(dst.size());
    auto one_field = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      using T = typename record_traits<D>::template value_at<K>;
      for (std::size_t d = 0; d < record_traits<D>::template field_at<K>::extent; ++d) {
        auto [ds, dl] = detail::run_side<DL, D, K>(dst.data().get(), d, dst.pitch(), dst.first());
        auto [ss, sl] = detail::run_side<SL, D, K>(src.data().get(), d, src.pitch(), src.first());
        plan.run_from(ds, dl, ss, sl, n, sizeof(T));
      }
    };
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (one_field(std::integral_constant<std::size_t, K>{}), ...);
    }
    (std::make_index_sequence<record_traits<D>::field_count>{});
    return when_all(after(std::move(events)));
  }
}

template <record_viewable Dst, record_viewable Src>
event copy(Dst const& dst, Src const& src) {
  return copy(after{}, dst, src);
}

}  // namespace strata
