// Ripple's partitioned tensor (Ripple §4.1): a 1-3D box of cells split over places, each
// partition in its place's memory (host NUMA memory, a sim device, a CUDA device), cut
// into blocks, every block stored with a halo of `padding` cells. Handles share their data
// (as Kokkos views): a copy of a tensor refers to the same blocks, so graph nodes and
// kernels capture tensors by value.
#pragma once

#include <strata/exec/copy.hpp>
#include <strata/memory/allocate.hpp>
#include <strata/tensor/geometry.hpp>
#include <strata/tensor/iterator.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

template <class T, std::size_t N>
class tensor;

/// A set of dimensions, bit d for dimension d: which dimensions' padding an access loads
/// (`padded_access::along`); `all_dims` for every one.
using dim_mask = std::uint32_t;
inline constexpr dim_mask all_dims = ~dim_mask{0};

namespace tensor_detail {

/// Calls fn(Space{}) for the memory space `s` names.
template <class Fn>
decltype(auto) visit_space(space_id s, Fn&& fn) {
  switch (s) {
    case space_id::host:
      return fn(host_space{});
    case space_id::pinned:
      return fn(pinned_space{});
    case space_id::mapped:
      return fn(mapped_space{});
    case space_id::sim:
      return fn(sim_space{});
    case space_id::cuda:
      return fn(cuda_space{});
    case space_id::managed:
      return fn(managed_space{});
  }
  throw error("tensor: unknown memory space");
}

/// Where one block lives and where kernels on it run.
struct block_home {
  place where;  // the processors that run kernels on the block (a device, or host PUs)
  space_id space = space_id::host;
  std::uint32_t memory = 0;  // the memory place's id
  void* data = nullptr;      // the padded box
};

/// One box of a block's halo and the dimensions in which it lies outside the block (a face
/// one, an edge two, a corner three): an access along some dimensions loads the boxes
/// that lie outside only in those.
struct halo_copy {
  dim_mask dims;
  detail::view_copy copy;
};
/// Each block's halo copies (boundary.hpp's plan_halos).
using halo_plans = std::vector<std::vector<halo_copy>>;

/// Memory for one block given by its creator (the tensor constructor taking storage).
struct block_storage {
  void* data = nullptr;        // the padded box's first cell
  std::uint32_t memory = 0;    // the memory place's id (ptr::place_id)
  std::shared_ptr<void> keep;  // holds the memory while a tensor uses it
};

/// Storage must lie inside one live allocation of the block's space.
inline void check_storage(block_storage const& st, space_id space, std::size_t bytes,
                          std::size_t b) {
  auto const info = st.data ? detail::find_allocation(st.data) : std::nullopt;
  auto const* p = static_cast<std::byte const*>(st.data);
  if (!info || info->space != space || info->place_id != st.memory ||
      p + bytes > static_cast<std::byte const*>(info->base) + info->bytes)
    throw invalid_argument("tensor: storage of block " + std::to_string(b) + " (" +
                           std::to_string(bytes) + " bytes in " + std::string(to_string(space)) +
                           " memory) is not inside one live allocation of that space and memory "
                           "place; expected memory from allocate() for the block's place");
}

/// Fills the padding of one block at the domain's edges (set by set_boundary), in the
/// dimensions of `dims` only.
using edge_loader = std::function<event(after const&, std::size_t block, dim_mask dims)>;

template <class T, std::size_t N>
struct tensor_state {
  geometry<N> geo;
  std::vector<place> places;  // one per partition slot (partitions cycle through them)
  std::vector<block_home> homes;
  std::vector<tensor_block<T, N>> blocks;
  bool periodic = false;
  edge_loader edges;  // empty: the domain edges' padding is left alone
  // The halo copies, planned at the first exchange; dropped when `periodic` changes.
  std::mutex halo_mutex;
  std::shared_ptr<halo_plans const> halo;
  // Staging stores of record box copies (record_tensor.hpp), made on first use.
  std::mutex staging_mutex;
  std::map<std::vector<index_t>, void*> staging;
  std::vector<std::function<void()>> release;
  // Operations issued on the blocks by the tensor's own calls (fill, copy, load_padding,
  // for_each_cell): the last handle's release waits for them. Host memory is freed at
  // once otherwise, under a kernel still running on it (a use-after-free found by an
  // outside probe, session 30); sim memory only fences work already queued on its device.
  // Weak, as the sim device's tracking: an operation that nobody can complete any more
  // (its dependency dropped) never runs, and must not be waited for.
  std::mutex pending_mutex;
  std::vector<std::weak_ptr<detail::event_state>> pending;
  std::size_t prune_at = 64;

  tensor_state() = default;
  tensor_state(tensor_state const&) = delete;
  tensor_state& operator=(tensor_state const&) = delete;
  ~tensor_state() {
    for (auto const& w : pending)
      if (auto st = w.lock(); st && !st->ready()) try {
          event(std::move(st)).wait();
        } catch (...) {  // the operation's failure is its waiters' business
        }
    for (auto it = release.rbegin(); it != release.rend(); ++it) (*it)();
  }

  /// Records `e` (an operation on the blocks) for the release, and returns it.
  event keep(event e) {
    if (e.ready()) return e;
    std::lock_guard lock(pending_mutex);
    if (pending.size() >= prune_at) {
      std::erase_if(pending, [](std::weak_ptr<detail::event_state> const& w) {
        auto st = w.lock();
        return !st || st->ready();
      });
      prune_at = std::max<std::size_t>(64, 2 * pending.size());
    }
    pending.push_back(e.watch());
    return e;
  }
};

/// The memory space kernels on `p` use: a device's own, else the host's.
inline space_id space_for(place const& p) {
  switch (p.isa()) {
    case isa::sim:
      return space_id::sim;
    case isa::cuda:
      return space_id::cuda;
    case isa::host:
      break;
  }
  return space_id::host;
}

}  // namespace tensor_detail

template <class T, std::size_t N>
class tensor {
  static_assert(N >= 1 && N <= 3, "tensor: 1 to 3 dimensions");
  static_assert(std::is_trivially_copyable_v<T>,
                "tensor: T must be trivially copyable (cells move between memories bytewise)");

 public:
  using value_type = T;
  static constexpr std::size_t rank = N;
  using tensor_split_tag = void;  // the graph's split() treats it as a tensor (task/graph.hpp)

  tensor() = default;
  /// Partitions cycle through `places` (partition p on places[p % size]); each block is
  /// allocated in its place's memory with its padding around it.
  tensor(std::vector<place> const& places, tensor_spec<N> const& spec)
      : tensor(places, spec, nullptr) {}
  /// Blocks in memory the caller holds: `storage[b]` is block b's padded box (row-major,
  /// padding included) inside a live allocation of the block's memory space, kept alive by
  /// its `keep` while the tensor lives. The hybrid stencil's strips move rows between
  /// neighbours this way without reallocating (tensor_detail::strip_store).
  tensor(std::vector<place> const& places, tensor_spec<N> const& spec,
         std::vector<tensor_detail::block_storage> const& storage)
      : tensor(places, spec, &storage) {}
  /// One block on `where`.
  tensor(place const& where, vec<N> extent, index_t padding = 0)
      : tensor(std::vector<place>{where}, tensor_spec<N>{.extent = extent, .padding = padding}) {}

 private:
  tensor(std::vector<place> const& places, tensor_spec<N> const& spec,
         std::vector<tensor_detail::block_storage> const* storage)
      : s_(std::make_shared<tensor_detail::tensor_state<T, N>>()) {
    if (places.empty())
      throw invalid_argument("tensor: no places given; expected at least one place to hold it");
    s_->geo = tensor_detail::make_geometry(spec);
    s_->places = places;
    auto const& g = s_->geo;
    auto const nb = g.block_count();
    s_->homes.resize(nb);
    s_->blocks.resize(nb);
    for (std::size_t b = 0; b < nb; ++b) {
      auto& h = s_->homes[b];
      h.where = places[g.partition_of(b) % places.size()];
      h.space = tensor_detail::space_for(h.where);
      auto& blk = s_->blocks[b];
      blk.extent = g.block_extent(b);
      blk.origin = g.origin(b);
      blk.global_extent = g.extent;
      blk.padding = g.padding;
      auto padded = blk.padded_extent();
      index_t step = 1;
      for (std::size_t d = N; d-- > 0;) {
        blk.stride[d] = step;
        step *= padded[d];
      }
      auto const count = padded.product();
      if (storage) {
        if (b == 0 && storage->size() != nb)
          throw invalid_argument("tensor: storage for " + std::to_string(storage->size()) +
                                 " blocks; expected one per block (" + std::to_string(nb) + ")");
        auto const& st = (*storage)[b];
        tensor_detail::check_storage(st, h.space, cell_traits<T>::bytes(count), b);
        h.data = st.data;
        h.memory = st.memory;
        s_->release.push_back([keep = st.keep] {});
        blk.base = cell_traits<T>::at(h.data, count);
        continue;
      }
      tensor_detail::visit_space(h.space, [&](auto sp) {
        using S = decltype(sp);
        if constexpr (S::id == space_id::host || S::id == space_id::sim ||
                      S::id == space_id::cuda) {
          // Record cells: one store of the layout's bytes (cells.hpp), else an array of T.
          using unit = std::conditional_t<cell_traits<T>::is_record, std::byte, T>;
          auto const n = cell_traits<T>::is_record ? cell_traits<T>::bytes(count)
                                                   : static_cast<std::size_t>(count);
          auto p = allocate<unit, S>(h.where, n);
          h.data = p.get();
          h.memory = p.place_id();
          s_->release.push_back([p] { deallocate(p); });
        }
      });
      blk.base = cell_traits<T>::at(h.data, count);
    }
  }

 public:
  explicit operator bool() const noexcept { return s_ != nullptr; }
  vec<N> extent() const { return state().geo.extent; }
  index_t padding() const { return state().geo.padding; }
  std::size_t size() const { return static_cast<std::size_t>(extent().product()); }
  /// Blocks (partitions times sub-partitions): graph splits make one node per block.
  std::size_t blocks() const { return state().blocks.size(); }
  std::size_t partitions() const { return state().geo.partition_count(); }
  /// The block holding global cell `i`, and where block `b` is.
  std::size_t block_of(vec<N> const& i) const { return state().geo.block_of(i); }
  tensor_block<T, N> const& block(std::size_t b) const {
    return state().blocks[checked_block(b, "block")];
  }
  place const& place_of(std::size_t b) const {
    return state().homes[checked_block(b, "place_of")].where;
  }
  space_id space_of(std::size_t b) const {
    return state().homes[checked_block(b, "space_of")].space;
  }
  /// The block boundaries of dimension d (blocks + 1 values, from 0 to the extent).
  std::vector<index_t> const& cuts(std::size_t d) const {
    if (d >= N)
      throw out_of_range("tensor::cuts: dimension " + std::to_string(d) + "; expected below " +
                         std::to_string(N));
    return state().geo.cuts[d];
  }
  /// The graph's identity of the block grid (task/partitioned.hpp).
  partition_key partitioning() const { return state().geo.key(); }
  /// Same extent and blocks; cell types may differ (a kernel over records and a plain
  /// tensor of per-cell values, Ripple's Listing 12 `set_wavespeeds(in, wavespeeds)`).
  template <class U>
  bool same_cells(tensor<U, N> const& o) const {
    return state().geo.same_cells(o.state().geo);
  }
  /// Whether the padding at the domain's edges wraps around (periodic boundaries): halo
  /// exchanges then treat the first and last blocks of each dimension as neighbours.
  bool periodic() const { return state().periodic; }

  /// A view of block b's whole padded box in space S (which must be the block's space).
  /// Plain cells only: record tensors have no single element type (record_tensor.hpp).
  template <memory_space S>
  requires(!cell_traits<T>::is_record) view<T, N, S> padded_view(std::size_t b)
  const {
    auto const& h = state().homes[checked_block(b, "padded_view")];
    if (h.space != S::id)
      throw invalid_argument("tensor::padded_view: block " + std::to_string(b) + " is in " +
                             std::string(to_string(h.space)) + " memory, not " +
                             std::string(to_string(S::id)));
    auto const& blk = state().blocks[b];
    auto pe = blk.padded_extent();
    std::size_t pitch = N >= 2 ? static_cast<std::size_t>(blk.stride[N - 2]) * sizeof(T) : 0;
    std::size_t slice = N == 3 ? static_cast<std::size_t>(blk.stride[0]) * sizeof(T) : 0;
    return view<T, N, S>(ptr<T, S>(static_cast<T*>(h.data), h.memory), pe, pitch, slice);
  }
  /// A view of the box [lo, lo + ext) of block b, in local indices (the interior starts at
  /// 0; the padding is at negative indices and past the extent).
  template <memory_space S>
  requires(!cell_traits<T>::is_record) view<T, N, S> local_view(std::size_t b, vec<N> lo,
                                                                vec<N> const& ext)
  const {
    for (std::size_t d = 0; d < N; ++d) lo[d] += padding();
    return padded_view<S>(b).window(lo, ext);
  }

  tensor_detail::tensor_state<T, N>& state() const {
    if (!s_) throw invalid_argument("tensor: an empty tensor handle; expected a created tensor");
    return *s_;
  }

 private:
  // strata::out_of_range, not std::out_of_range from vector::at: users catch strata::error.
  std::size_t checked_block(std::size_t b, char const* what) const {
    if (b >= state().blocks.size())
      throw out_of_range("tensor::" + std::string(what) + ": block " + std::to_string(b) +
                         "; the tensor has " + std::to_string(state().blocks.size()) + " blocks");
    return b;
  }
  template <class, std::size_t>
  friend class tensor;
  template <class U, std::size_t M, class B>
  friend void set_boundary(tensor<U, M>& t, B policy);
  std::shared_ptr<tensor_detail::tensor_state<T, N>> s_;
};

namespace tensor_detail {

template <class DD, class LD, class DS, class LS, std::size_t N>
event record_copy_box(after const& deps, tensor<records<DD, LD>, N> const& dst, std::size_t db,
                      vec<N> dlo, tensor<records<DS, LS>, N> const& src, std::size_t sb, vec<N> slo,
                      vec<N> const& ext);  // record_tensor.hpp

/// Copies the local box [dlo, dlo+ext) of dst's block db from the local box [slo, ...) of
/// src's block sb, in whatever memories they are.
template <class T, std::size_t N>
event copy_box(after const& deps, tensor<T, N> const& dst, std::size_t db, vec<N> dlo,
               tensor<T, N> const& src, std::size_t sb, vec<N> slo, vec<N> const& ext) {
  if constexpr (cell_traits<T>::is_record)
    return record_copy_box(deps, dst, db, dlo, src, sb, slo, ext);
  else
    return visit_space(dst.space_of(db), [&](auto ds) {
      return visit_space(src.space_of(sb), [&](auto ss) {
        using DS = decltype(ds);
        using SS = decltype(ss);
        return copy(deps, dst.template local_view<DS>(db, dlo, ext),
                    src.template local_view<SS>(sb, slo, ext));
      });
    });
}

/// The intersection of two global boxes; false if empty.
template <std::size_t N>
bool intersect(vec<N> alo, vec<N> const& aext, vec<N> const& blo, vec<N> const& bext, vec<N>& lo,
               vec<N>& ext) {
  for (std::size_t d = 0; d < N; ++d) {
    auto l = alo[d] > blo[d] ? alo[d] : blo[d];
    auto ha = alo[d] + aext[d], hb = blo[d] + bext[d];
    auto h = ha < hb ? ha : hb;
    if (h <= l) return false;
    lo[d] = l;
    ext[d] = h - l;
  }
  return true;
}

}  // namespace tensor_detail

/// Sets every cell (padding included) of every block to `value`.
template <class T, std::size_t N>
requires(!is_record_cell_v<T>) event
    fill(after const& deps, tensor<T, N> const& t, T const& value) {
  std::vector<event> done;
  for (std::size_t b = 0; b < t.blocks(); ++b)
    done.push_back(tensor_detail::visit_space(t.space_of(b), [&](auto sp) {
      return fill(deps, t.template padded_view<decltype(sp)>(b), value);
    }));
  return t.state().keep(when_all(after(std::move(done))));
}
template <class T, std::size_t N>
requires(!is_record_cell_v<T>) event fill(tensor<T, N> const& t, T const& value) {
  return fill(after{}, t, value);
}

/// Copies the cells of `src` into `dst` (same extent; any partitioning, places, padding;
/// for records any layouts): every pair of overlapping blocks copies its intersection.
template <class TD, class TS, std::size_t N>
requires(std::is_same_v<TD, TS> || (is_record_cell_v<TD> && is_record_cell_v<TS>)) event
    copy(after const& deps, tensor<TD, N> const& dst, tensor<TS, N> const& src) {
  if (!(dst.extent() == src.extent()))
    throw invalid_argument("copy: tensors of extents " + detail::shape_text(dst.extent()) +
                           " and " + detail::shape_text(src.extent()) + "; expected equal extents");
  std::vector<event> done;
  for (std::size_t db = 0; db < dst.blocks(); ++db)
    for (std::size_t sb = 0; sb < src.blocks(); ++sb) {
      auto const& d = dst.block(db);
      auto const& s = src.block(sb);
      vec<N> lo{}, ext{};
      if (!tensor_detail::intersect(d.origin, d.extent, s.origin, s.extent, lo, ext)) continue;
      if constexpr (std::is_same_v<TD, TS>)
        done.push_back(
            tensor_detail::copy_box(deps, dst, db, lo - d.origin, src, sb, lo - s.origin, ext));
      else
        done.push_back(tensor_detail::record_copy_box(deps, dst, db, lo - d.origin, src, sb,
                                                      lo - s.origin, ext));
    }
  return src.state().keep(dst.state().keep(when_all(after(std::move(done)))));
}
template <class TD, class TS, std::size_t N>
requires(std::is_same_v<TD, TS> || (is_record_cell_v<TD> && is_record_cell_v<TS>)) event
    copy(tensor<TD, N> const& dst, tensor<TS, N> const& src) {
  return copy(after{}, dst, src);
}

/// Gathers every cell of `t` into `out` (a view of the tensor's extent in any space).
template <class T, std::size_t N, memory_space S>
requires(!is_record_cell_v<T>) event
    copy(after const& deps, view<T, N, S> const& out, tensor<T, N> const& t) {
  if (!(out.extent() == t.extent()))
    throw invalid_argument("copy: a view of " + detail::shape_text(out.extent()) +
                           " and a tensor of " + detail::shape_text(t.extent()) +
                           "; expected equal extents");
  std::vector<event> done;
  for (std::size_t b = 0; b < t.blocks(); ++b) {
    auto const& blk = t.block(b);
    done.push_back(tensor_detail::visit_space(t.space_of(b), [&](auto sp) {
      return copy(deps, out.window(blk.origin, blk.extent),
                  t.template local_view<decltype(sp)>(b, vec<N>{}, blk.extent));
    }));
  }
  return t.state().keep(when_all(after(std::move(done))));
}
/// Scatters `in` (a view of the tensor's extent) into the blocks of `t`.
template <class T, std::size_t N, memory_space S>
requires(!is_record_cell_v<T>) event
    copy(after const& deps, tensor<T, N> const& t, view<T, N, S> const& in) {
  if (!(in.extent() == t.extent()))
    throw invalid_argument("copy: a tensor of " + detail::shape_text(t.extent()) +
                           " and a view of " + detail::shape_text(in.extent()) +
                           "; expected equal extents");
  std::vector<event> done;
  for (std::size_t b = 0; b < t.blocks(); ++b) {
    auto const& blk = t.block(b);
    done.push_back(tensor_detail::visit_space(t.space_of(b), [&](auto sp) {
      return copy(deps, t.template local_view<decltype(sp)>(b, vec<N>{}, blk.extent),
                  in.window(blk.origin, blk.extent));
    }));
  }
  return t.state().keep(when_all(after(std::move(done))));
}
template <class T, std::size_t N, memory_space S>
event copy(view<T, N, S> const& out, tensor<T, N> const& t) {
  return copy(after{}, out, t);
}
template <class T, std::size_t N, memory_space S>
event copy(tensor<T, N> const& t, view<T, N, S> const& in) {
  return copy(after{}, t, in);
}

}  // namespace strata

#include <strata/tensor/record_tensor.hpp>  // tensors of records (cells.hpp)
