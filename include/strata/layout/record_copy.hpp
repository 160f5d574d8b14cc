// copy(dst, src) -> event between record arrays of any two layouts and memory spaces
// (Ripple §4.2: the layout is a parameter, so data must move between layouts; PARRAY §5.2:
// move maximal contiguous runs).
//
// * Same layout: one contiguous copy of the bytes.
// * Both sides host-accessible, different layouts: a conversion kernel on the processors
//   next to the destination (parallel, vectorized where the layouts allow).
// * Otherwise (a device on either side): per component, pitched 2-D/3-D copies of the
//   runs both layouts keep contiguous, on the device's copy engine (asynchronous).
//
// Like the copies of plain views, these live with the execution layer's machinery (they
// return events and run on backends) although the types are the layout layer's.
#pragma once

#include <strata/exec/copy.hpp>
#include <strata/exec/work_division.hpp>
#include <strata/layout/record_array.hpp>

#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

namespace strata {

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

  /// The partial block after `full` whole blocks, as a dense sequence.
  static record_run_side unblocked(record_run_side const& x, std::size_t full) {
    return {x.start + full * x.block_bytes, 0, x.stride, 0};
  }
};

template <class L, class D, std::size_t K>
record_run_side run_side(std::byte* base, std::size_t d, index_t pitch) {
  using M = record_map<L, D>;
  return {base + M::start(K, d, pitch), M::block, M::element_stride(K), M::block_bytes};
}

template <class D, class DL, class SL>
struct record_convert_kernel {
  template <class Self>
  void operator()(Self const& self, record_span<D, DL> dst, record_span<D, SL> src) const {
    for (auto i : self.elements(dst.size())) dst[i] = src[i];
  }
};

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
  // Overlap: one memory seen through two views whose spans intersect. The host reads every
  // record before it writes any (the source is staged: memmove semantics); a device copy
  // would race its own rows, so it is refused.
  {
    std::byte const* d0 = dst.data().get();
    std::byte const* s0 = src.data().get();
    std::size_t const dbytes = dst.required_span_bytes(), sbytes = src.required_span_bytes();
    constexpr bool host_both = DS::host_accessible && SS::host_accessible;
    if ((host_both || DS::id == SS::id) && d0 < s0 + sbytes && s0 < d0 + dbytes) {
      if (std::is_same_v<DL, SL> && d0 == s0) return when_all(deps);  // the records themselves
      if constexpr (!host_both) {
        throw invalid_argument(
            "copy: the destination and source record arrays overlap in device memory (" +
            std::to_string(dbytes) + " and " + std::to_string(sbytes) +
            " bytes); expected disjoint memory (copy through a separate array)");
      } else {
        auto staged = std::shared_ptr<std::byte>(
            static_cast<std::byte*>(::operator new (sbytes, std::align_val_t{64})),
            [](std::byte* p) { ::operator delete (p, std::align_val_t{64}); });
        detail::copy_side_desc to{staged.get(), sbytes, sbytes, space_id::host, 0};
        detail::copy_side_desc from{src.data().get(), sbytes, sbytes, SS::id,
                                    src.data().place_id()};
        event read = detail::copy_rows(deps, to, from, sbytes, 1, 1);
        record_view<D, SL, host_space> const copy_of_src(
            ptr<std::byte, host_space>(staged.get(), 0), src.size());
        event done = copy(after(read), dst, copy_of_src);
        done.then([staged] {});
        return done;
      }
    }
  }
  detail::copy_side_desc dside{dst.data().get(), 0, 0, DS::id, dst.data().place_id()};
  detail::copy_side_desc sside{src.data().get(), 0, 0, SS::id, src.data().place_id()};
  if constexpr (std::is_same_v<DL, SL>) {
    std::size_t const bytes = dst.required_span_bytes();
    dside.pitch = sside.pitch = dside.slice_pitch = sside.slice_pitch = bytes;
    return detail::copy_rows(deps, dside, sside, bytes, 1, 1);
  } else if constexpr (DS::host_accessible && SS::host_accessible) {
    auto where = detail::fill_target(dst.data().get(), dst.data().place_id());
    return launch(deps, where, divide_work(where, dst.size()),
                  detail::record_convert_kernel<D, DL, SL>{}, dst, src);
  } else {
    std::vector<event> events;
    detail::record_copy_plan plan{dside, sside, &events, &deps};
    auto const n = static_cast<std::size_t>(dst.size());
    auto one_field = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      using T = typename record_traits<D>::template value_at<K>;
      for (std::size_t d = 0; d < record_traits<D>::template field_at<K>::extent; ++d)
        plan.run(detail::run_side<DL, D, K>(dst.data().get(), d, dst.pitch()),
                 detail::run_side<SL, D, K>(src.data().get(), d, src.pitch()), n, sizeof(T));
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
