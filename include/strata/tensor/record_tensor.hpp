// Tensors of records (Ripple §4.2-4.3 on §4.1's tensors): `tensor<records<D, L>, N>` keeps
// each block's padded box as one store in layout L (AoS, SoA or AoSoA), addressed by the
// box's row-major cell index. Box copies (halos, tensor-to-tensor copies) pick the cheapest
// correct form per layout:
//   * AoS: a record is one opaque cell of record_bytes: the plain strided box copy;
//   * SoA: every component is a strided box of its own: one box copy per component;
//   * AoSoA, or layouts that differ: a pack kernel where the source lives gathers the box
//     into an AoS staging store, one linear copy moves it, and an unpack kernel where the
//     destination lives scatters it (one kernel when both are in one memory). Staging
//     stores are made on first use and kept by the destination tensor, so a halo exchange
//     allocates nothing after its first run.
// Each form writes only the cells of the box (a component copy only its component).
#pragma once

#include <strata/exec/launch.hpp>
#include <strata/exec/work_division.hpp>
#include <strata/layout/record_array.hpp>
#include <strata/tensor/tensor.hpp>

#include <cstddef>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace strata {

namespace tensor_detail {

/// An opaque AoS record: what a box copy of an AoS record tensor moves per cell.
template <std::size_t Bytes, std::size_t Align>
struct alignas(Align) record_blob {
  std::byte bytes[Bytes];
};

/// Block b's whole padded box as a view of E whose element stride is sizeof(E), starting
/// `offset` bytes into the block's store (AoS: E a blob at 0; SoA: a component's array).
template <class E, memory_space S, class T, std::size_t N>
view<E, N, S> store_view(tensor<T, N> const& t, std::size_t b, std::size_t offset) {
  auto const& s = t.state();
  auto const& h = s.homes.at(b);
  auto const& blk = s.blocks[b];
  auto pe = blk.padded_extent();
  std::size_t pitch = N >= 2 ? static_cast<std::size_t>(blk.stride[N - 2]) * sizeof(E) : 0;
  std::size_t slice = N == 3 ? static_cast<std::size_t>(blk.stride[0]) * sizeof(E) : 0;
  return view<E, N, S>(
      ptr<E, S>(reinterpret_cast<E*>(static_cast<std::byte*>(h.data) + offset), h.memory), pe,
      pitch, slice);
}

/// dst[dlo + p] = src[slo + p] for p in the box `ext` (both blocks in the launch's memory).
struct box_kernel {
  template <class Self, class TD, class TS, std::size_t N>
  STRATA_FN void operator()(Self const& self, tensor_block<TD, N> dst, vec<N> dlo,
                            tensor_block<TS, N> src, vec<N> slo, vec<N> ext) const {
    for_each_point<N>(self.elements(ext),
                      [&](vec<N> const& p) { *dst.address(dlo + p) = *src.address(slo + p); });
  }
};

/// The box `ext` at `lo` of a block, to (pack) or from (unpack) a dense AoS store.
template <bool Pack>
struct pack_kernel {
  template <class Self, class D, class L, std::size_t N>
  STRATA_FN void operator()(Self const& self, tensor_block<records<D, L>, N> blk, vec<N> lo,
                            vec<N> ext, std::byte* stage) const {
    for_each_point<N>(self.elements(ext), [&](vec<N> const& p) {
      record_ref<D, aos> packed(stage, linearize(p, ext), ext.product());
      if constexpr (Pack)
        packed = *blk.address(lo + p);
      else
        *blk.address(lo + p) = packed;
    });
  }
};

/// A staging store in the memory of `where`, kept by the state `keeper` until it goes.
template <class T, std::size_t N>
std::byte* staging(tensor_state<T, N>& keeper, std::vector<index_t> key, place const& where,
                   space_id space, std::size_t bytes) {
  std::lock_guard lock(keeper.staging_mutex);
  // (Not a structured binding: the lambda below uses `it`, which clang before 16 rejects.)
  auto const emplaced = keeper.staging.try_emplace(std::move(key), nullptr);
  auto const it = emplaced.first;
  if (!emplaced.second) return static_cast<std::byte*>(it->second);
  visit_space(space, [&](auto sp) {
    using S = decltype(sp);
    if constexpr (S::id == space_id::host || S::id == space_id::sim || S::id == space_id::cuda) {
      auto p = allocate<std::byte, S>(where, bytes);
      it->second = p.get();
      keeper.release.push_back([p] { deallocate(p); });
    }
  });
  return static_cast<std::byte*>(it->second);
}

/// Copies the local box [dlo, dlo+ext) of dst's block db from [slo, ...) of src's block sb
/// for record cells (see the header's comment for the forms).
template <class DD, class LD, class DS, class LS, std::size_t N>
event record_copy_box(after const& deps, tensor<records<DD, LD>, N> const& dst, std::size_t db,
                      vec<N> dlo, tensor<records<DS, LS>, N> const& src, std::size_t sb, vec<N> slo,
                      vec<N> const& ext) {
  static_assert(std::is_same_v<DD, DS>, "copy: tensors of records of different descriptions");
  using D = DD;
  using traits = record_traits<D>;
  auto& ds = dst.state();
  auto& ss = src.state();
  auto const& dh = ds.homes.at(db);
  auto const& sh = ss.homes.at(sb);
  vec<N> const pad_d = vec<N>::fill(dst.padding()), pad_s = vec<N>::fill(src.padding());
  if constexpr (std::is_same_v<LD, LS> && (std::is_same_v<LD, aos> || std::is_same_v<LD, soa>)) {
    return visit_space(dh.space, [&](auto dsp) {
      return visit_space(sh.space, [&](auto ssp) {
        using SD = decltype(dsp);
        using SS = decltype(ssp);
        if constexpr (std::is_same_v<LD, aos>) {
          using blob = record_blob<traits::record_bytes, traits::info::max_align>;
          return copy(deps, store_view<blob, SD>(dst, db, 0).window(dlo + pad_d, ext),
                      store_view<blob, SS>(src, sb, 0).window(slo + pad_s, ext));
        } else {  // SoA: each component array is a strided box of its own
          using map = detail::record_map<soa, D>;
          index_t const dpitch = ds.blocks[db].base.pitch(), spitch = ss.blocks[sb].base.pitch();
          std::vector<event> parts;
          [&]<std::size_t... K>(std::index_sequence<K...>) {
            auto one = [&]<std::size_t k>(std::integral_constant<std::size_t, k>) {
              using V = typename traits::template value_at<k>;
              for (std::size_t c = 0; c < traits::template field_at<k>::extent; ++c)
                parts.push_back(copy(
                    deps,
                    store_view<V, SD>(dst, db, map::start(k, c, dpitch)).window(dlo + pad_d, ext),
                    store_view<V, SS>(src, sb, map::start(k, c, spitch)).window(slo + pad_s, ext)));
            };
            (one(std::integral_constant<std::size_t, K>{}), ...);
          }
          (std::make_index_sequence<traits::field_count>{});
          return when_all(after(parts));
        }
      });
    });
  } else {
    auto const& dblk = ds.blocks[db];
    auto const& sblk = ss.blocks[sb];
    bool const one_memory =
        dh.space == sh.space && (dh.space == space_id::host || dh.memory == sh.memory);
    if (one_memory)
      return launch(deps, dh.where, divide_work(dh.where, ext), box_kernel{}, dblk, dlo, sblk, slo,
                    ext);
    // The source's identity includes where its block lives: a later tensor at a freed
    // state's address must not inherit staging made in another memory.
    std::vector<index_t> key{static_cast<index_t>(reinterpret_cast<std::uintptr_t>(&ss)),
                             static_cast<index_t>(sb), static_cast<index_t>(db),
                             static_cast<index_t>(sh.space), static_cast<index_t>(sh.memory)};
    for (std::size_t d = 0; d < N; ++d) key.insert(key.end(), {dlo[d], ext[d]});
    std::size_t const bytes = detail::record_map<aos, D>::bytes_for(ext.product());
    auto dkey = key;
    dkey.push_back(1);
    std::byte* out = staging(ds, key, sh.where, sh.space, bytes);
    std::byte* in = staging(ds, dkey, dh.where, dh.space, bytes);
    auto packed = visit_space(sh.space, [&](auto ssp) {
      using SS = decltype(ssp);
      return launch(deps, sh.where, divide_work(sh.where, ext), pack_kernel<true>{}, sblk, slo, ext,
                    ptr<std::byte, SS>(out, sh.memory));
    });
    auto moved = visit_space(dh.space, [&](auto dsp) {
      return visit_space(sh.space, [&](auto ssp) {
        using SD = decltype(dsp);
        using SS = decltype(ssp);
        return copy(after(packed), ptr<std::byte, SD>(in, dh.memory),
                    ptr<std::byte, SS>(out, sh.memory), bytes);
      });
    });
    return visit_space(dh.space, [&](auto dsp) {
      using SD = decltype(dsp);
      return launch(after(moved), dh.where, divide_work(dh.where, ext), pack_kernel<false>{}, dblk,
                    dlo, ext, ptr<std::byte, SD>(in, dh.memory));
    });
  }
}

/// Sets every cell of a block (padding included) to `v`.
struct fill_records_kernel {
  template <class Self, class D, class L, std::size_t N>
  STRATA_FN void operator()(Self const& self, tensor_block<records<D, L>, N> blk,
                            record_value<D> v) const {
    auto const ext = blk.padded_extent();
    for_each_point<N>(self.elements(ext),
                      [&](vec<N> const& p) { *blk.address(p - vec<N>::fill(blk.padding)) = v; });
  }
};

/// Copies the interior of a block to (Out) or from (in) the global record span `g` of the
/// tensor's extent, row-major.
template <bool Out>
struct exchange_records_kernel {
  template <class Self, class D, class L, class LG, std::size_t N>
  STRATA_FN void operator()(Self const& self, tensor_block<records<D, L>, N> blk,
                            record_span<D, LG> g) const {
    // `g` by value: GCC 12 at -O2 deleted this whole kernel (its loop bounds derived from
    // an assumed undefined behaviour; -fno-aggressive-loop-optimizations kept it) when the
    // lambda captured the four-word record_span by reference (docs/records.md).
    for_each_point<N>(self.elements(blk.extent), [&blk, g](vec<N> const& p) {
      auto const i = linearize(blk.origin + p, blk.global_extent);
      if constexpr (Out)
        g[i] = *blk.address(p);
      else
        *blk.address(p) = g[i];
    });
  }
};

/// Gathers (Out) or scatters one block through the host: blocks in host memory directly,
/// others through a host copy of the block's store (downloaded first, uploaded after a
/// scatter: the upload rewrites the padding with the values it had).
template <bool Out, class D, class L, std::size_t N, class LG>
event exchange_block(after const& deps, tensor<records<D, L>, N> const& t, std::size_t b,
                     record_span<D, LG> g) {
  auto& s = t.state();
  auto const& h = s.homes.at(b);
  auto const& blk = s.blocks[b];
  if (h.space == space_id::host)
    return launch(deps, h.where, divide_work(h.where, blk.extent), exchange_records_kernel<Out>{},
                  blk, g);
  auto const host = h.where.unsliced().root().slice(isa::host);  // the whole machine's CPUs
  auto const count = blk.padded_extent().product();
  std::size_t const bytes = cell_traits<records<D, L>>::bytes(count);
  std::byte* stage = staging(s, {-1, static_cast<index_t>(b)}, host, space_id::host, bytes);
  auto local = blk;
  local.base = cell_traits<records<D, L>>::at(stage, count);
  return visit_space(h.space, [&](auto sp) {
    using S = decltype(sp);
    ptr<std::byte, S> store(static_cast<std::byte*>(h.data), h.memory);
    auto down = copy(deps, ptr<std::byte, host_space>(stage, 0), store, bytes);
    auto k = launch(after(down), host, divide_work(host, blk.extent),
                    exchange_records_kernel<Out>{}, local, g);
    if constexpr (Out)
      return k;
    else
      return copy(after(k), store, ptr<std::byte, host_space>(stage, 0), bytes);
  });
}

template <class V, class T, std::size_t N>
void check_records_extent(char const* what, V const& v, tensor<T, N> const& t) {
  if (v.size() != t.extent().product())
    throw invalid_argument(std::string(what) + ": a record array of " + std::to_string(v.size()) +
                           " records and a tensor of " + detail::shape_text(t.extent()) + " (" +
                           std::to_string(t.extent().product()) +
                           " cells); expected one record per cell");
}

}  // namespace tensor_detail

/// Sets every cell (padding included) of every block to the record `value`.
template <class D, class L, std::size_t N>
event fill(after const& deps, tensor<records<D, L>, N> const& t, record_value<D> const& value) {
  std::vector<event> done;
  for (std::size_t b = 0; b < t.blocks(); ++b) {
    auto const& where = t.place_of(b);
    done.push_back(launch(deps, where, divide_work(where, t.block(b).padded_extent()),
                          tensor_detail::fill_records_kernel{}, t.block(b), value));
  }
  return t.state().keep(when_all(after(std::move(done))));
}
template <class D, class L, std::size_t N>
event fill(tensor<records<D, L>, N> const& t, record_value<D> const& value) {
  return fill(after{}, t, value);
}

/// Gathers every cell of `t` into the host record array `out` (any layout; one record per
/// cell, row-major over the tensor's extent).
template <class D, class L, std::size_t N, class LG>
event copy(after const& deps, record_view<D, LG, host_space> const& out,
           tensor<records<D, L>, N> const& t) {
  tensor_detail::check_records_extent("copy", out, t);
  std::vector<event> done;
  for (std::size_t b = 0; b < t.blocks(); ++b)
    done.push_back(tensor_detail::exchange_block<true>(deps, t, b, out.span()));
  return t.state().keep(when_all(after(std::move(done))));
}
/// Scatters the host record array `in` into the cells of `t`.
template <class D, class L, std::size_t N, class LG>
event copy(after const& deps, tensor<records<D, L>, N> const& t,
           record_view<D, LG, host_space> const& in) {
  tensor_detail::check_records_extent("copy", in, t);
  std::vector<event> done;
  for (std::size_t b = 0; b < t.blocks(); ++b)
    done.push_back(tensor_detail::exchange_block<false>(deps, t, b, in.span()));
  return t.state().keep(when_all(after(std::move(done))));
}
template <class D, class L, std::size_t N, class LG>
event copy(record_view<D, LG, host_space> const& out, tensor<records<D, L>, N> const& t) {
  return copy(after{}, out, t);
}
template <class D, class L, std::size_t N, class LG>
event copy(tensor<records<D, L>, N> const& t, record_view<D, LG, host_space> const& in) {
  return copy(after{}, t, in);
}

}  // namespace strata
