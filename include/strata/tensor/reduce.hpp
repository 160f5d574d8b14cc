// Reductions over tensors (Ripple §5.3.3, Listing 8, Figure 4): every block is folded where
// it lives (a kernel writes one partial value per thread into the block's memory, then
// the partials are copied to the host), and the partials are combined on the host. In a
// graph, each block's fold is a node after that block's writers only.
#pragma once

#include <strata/tensor/split.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace strata {

/// Reduction operators callable in kernels on every backend.
struct reduce_sum {
  template <class T>
  STRATA_FN T operator()(T const& a, T const& b) const {
    return a + b;
  }
};
struct reduce_min {
  template <class T>
  STRATA_FN T operator()(T const& a, T const& b) const {
    return b < a ? b : a;
  }
};
struct reduce_max {
  template <class T>
  STRATA_FN T operator()(T const& a, T const& b) const {
    return a < b ? b : a;
  }
};

namespace tensor_detail {

/// Whether folding with `Op` over `R` gives the same result in any order and grouping,
/// and folding a value in twice changes nothing: the minimum and maximum of integers (of
/// floating-point values not: a NaN's place in the order decides). Such a fold may keep
/// one accumulator per lane of a tile, each started from the running value
/// (reduce_cell_kernel), instead of folding each tile in order: a vector operation
/// instead of a dependent chain per cell.
template <class Op, class R>
inline constexpr bool any_order_fold = std::is_integral_v<R> && (std::is_same_v<Op, reduce_min> ||
                                                                 std::is_same_v<Op, reduce_max>);

/// The transform of a plain reduction: the cell's value.
struct cell_value {
  template <class It>
  STRATA_FN auto operator()(It const& it) const {
    return *it;
  }
};

/// Folds a kernel thread's cells: op(acc, tr(it)) with an iterator at each cell (the
/// transform may read the cell's fields or its neighbours, as a kernel over cells does),
/// in row-major order.
template <class T, std::size_t N, class R, class Op, class Tr = cell_value>
struct fold_kernel {
  Op op;
  Tr tr;
  template <class Self>
  STRATA_FN void operator()(Self const& self, tensor_block<T, N> b, R identity, R* partial) const {
    R acc = identity;
    auto const r = self.elements(b.extent);
    using range = std::remove_cv_t<decltype(r)>;
    if constexpr (std::is_same_v<range, index_range>) {
      acc = row(acc, r.last - r.first, tensor_iterator<T, N>(b, vec<N>{r.first}));
    } else if constexpr (std::is_same_v<range, box_range<N>>) {
      if constexpr (N == 2) {
        for (index_t i = 0; i < r.extent[0]; ++i)
          acc = row(acc, r.extent[1], tensor_iterator<T, N>(b, {r.first[0] + i, r.first[1]}));
      } else {
        for (index_t i = 0; i < r.extent[0]; ++i)
          for (index_t j = 0; j < r.extent[1]; ++j)
            acc = row(acc, r.extent[2],
                      tensor_iterator<T, N>(b, {r.first[0] + i, r.first[1] + j, r.first[2]}));
      }
    } else {  // a GPU thread's grid-strided cells
      for_each_point<N>(r, [&](vec<N> const& p) {
        tensor_iterator<T, N> it(b, p);
        acc = op(acc, static_cast<R>(tr(it)));
      });
    }
    partial[self.global_linear_index()] = acc;
  }
  // A row in tiles: the transform of a tile's cells into registers first (independent
  // cells, one loop the compiler vectorizes: the wave speeds' divisions and square roots
  // run 8 or 16 wide), then their fold in order, so the result is the same as one cell at
  // a time (a compare-based max or a floating-point sum does not vectorize as it stands).
  static constexpr index_t tile = 16;
  STRATA_CELL_FLATTEN STRATA_FN R row(R acc, index_t len, tensor_iterator<T, N> it) const {
    index_t k = 0;
    for (; k + tile <= len; k += tile) {
      R v[tile];
      STRATA_CELL_INDEPENDENT
      for (index_t l = 0; l < tile; ++l) {
        auto c = it;  // a transform that moves its iterator moves its own
        v[l] = static_cast<R>(tr(c));
        it.next_in_row();
      }
      for (index_t l = 0; l < tile; ++l) acc = op(acc, v[l]);
    }
    for (; k < len; ++k) {
      auto c = it;
      acc = op(acc, static_cast<R>(tr(c)));
      it.next_in_row();
    }
    return acc;
  }
};

/// The fold's work division: divide_work's, with each thread given more elements (last
/// dimension first) until at most `max_partials` threads remain. A device's division has
/// one element per thread: a partial per cell would copy the whole block to the host.
inline constexpr index_t max_partials = 16384;
template <std::size_t N>
auto fold_shape(place const& where, vec<N> const& extent) {
  auto s = divide_work(where, extent);
  auto grid = s.grid_extent();
  auto block = s.block_extent();
  auto elements = s.element_extent();
  for (std::size_t d = N; d-- > 0 && (grid * block).product() > max_partials;) {
    index_t const others = (grid * block).product() / (grid[d] * block[d]);
    index_t const want = std::max<index_t>(1, max_partials / others);  // threads along d
    index_t const per_thread = (extent[d] + want - 1) / want;
    if (per_thread <= elements[d]) continue;
    elements[d] = per_thread;
    grid[d] = (extent[d] + block[d] * elements[d] - 1) / (block[d] * elements[d]);
  }
  return decltype(s)(grid, block, elements);
}

/// What one block's fold needs, made once (at graph build) and reused by every run: the
/// shape, the partials in the block's memory and their host copy.
template <class R>
struct block_fold {
  std::vector<R> host;
  std::shared_ptr<void> device;  // the partials in the block's memory
  R* device_data = nullptr;
  std::uint32_t device_memory = 0;
  space_id space = space_id::host;
};

template <class T, std::size_t N, class R, class Op>
std::shared_ptr<block_fold<R>> make_fold(tensor<T, N> const& t, std::size_t b) {
  auto f = std::make_shared<block_fold<R>>();
  auto const& where = t.place_of(b);
  auto s = fold_shape(where, t.block(b).extent);
  auto threads = static_cast<std::size_t>(s.grid_extent().product() * s.block_extent().product());
  f->host.resize(threads);
  f->space = t.space_of(b);
  visit_space(f->space, [&](auto sp) {
    using S = decltype(sp);
    if constexpr (S::id == space_id::host || S::id == space_id::sim || S::id == space_id::cuda) {
      auto p = allocate<R, S>(where, threads);
      f->device_data = p.get();
      f->device_memory = p.place_id();
      f->device = std::shared_ptr<void>(p.get(), [p](void*) { deallocate(p); });
    }
  });
  return f;
}

/// Folds block b into f->host (complete when the event is).
template <class T, std::size_t N, class R, class Op, class Tr>
event fold_block(after const& deps, tensor<T, N> const& t, std::size_t b, block_fold<R>& f,
                 R identity, Op op, Tr tr) {
  auto const& where = t.place_of(b);
  auto s = fold_shape(where, t.block(b).extent);
  auto n = f.host.size();
  return visit_space(f.space, [&](auto sp) {
    using S = decltype(sp);
    ptr<R, S> dev(f.device_data, f.device_memory);
    auto k =
        launch(deps, where, s, fold_kernel<T, N, R, Op, Tr>{op, tr}, t.block(b), identity, dev);
    return copy(after(k), ptr<R, host_space>(f.host.data(), 0), dev, n);
  });
}

/// The kernel of a reducing split: the user's kernel over cells returns each cell's value,
/// folded per thread into partial[thread] (row tiles as fold_kernel's).
template <std::size_t N, class F, class R, class Op>
struct reduce_cell_kernel {
  F f;
  Op op;
  template <class Self, class... A>
  STRATA_FN void operator()(Self const& self, vec<N> extent, R identity, R* partial,
                            A const&... a) const {
    R acc = identity;
    auto const r = self.element_chunk(extent);
    if constexpr (N == 1) {
      acc = row(acc, r.last - r.first, a.at(vec<1>{r.first})...);
    } else if constexpr (N == 2) {
      for (index_t i = 0; i < r.extent[0]; ++i)
        acc = row(acc, r.extent[1], a.at(vec<2>{r.first[0] + i, r.first[1]})...);
    } else {
      for (index_t i = 0; i < r.extent[0]; ++i)
        for (index_t j = 0; j < r.extent[1]; ++j)
          acc = row(acc, r.extent[2], a.at(vec<3>{r.first[0] + i, r.first[1] + j, r.first[2]})...);
    }
    partial[self.global_linear_index()] = acc;
  }
  static constexpr index_t tile = 16;
  template <class... I>
  STRATA_CELL_FLATTEN STRATA_FN R row(R acc, index_t len, I... it) const {
#if !STRATA_DEVICE_CODE
    // AoSoA arguments: whole blocks as loops over their lanes, as cell_kernel's rows run
    // them (cell_rows.hpp's aosoa_row), each block's values then folded in order.
    constexpr auto bl = static_cast<index_t>(common_aosoa_block<I...>());
    if constexpr (bl != 0) {
      aosoa_row(
          len,
          [&](I const&... at) {
            R v[bl];
            STRATA_CELL_INDEPENDENT
            for (index_t l = 0; l < bl; ++l)
              v[l] = static_cast<R>(call_lvalues(f, row_tiles::along(at, l)...));
            for (index_t l = 0; l < bl; ++l) acc = op(acc, v[l]);
          },
          [&](I const&... at) { acc = op(acc, static_cast<R>(call_lvalues(f, at...))); }, it...);
      return acc;
    }
#endif
    index_t k = 0;
    if constexpr (any_order_fold<Op, R>) {
      // One accumulator per lane, folded at the row's end: the eikonal solve's active
      // flags (a maximum of uint16) took as long to fold in order as to compute, 1.1-1.2
      // ms against 0.6-0.7 for a pass without the reduction (1024^2 floats, one PU).
      if (len >= tile) {
        R lanes[tile];
        for (index_t l = 0; l < tile; ++l) lanes[l] = acc;
        for (; k + tile <= len; k += tile) {
          R v[tile];
          STRATA_CELL_INDEPENDENT
          for (index_t l = 0; l < tile; ++l) {
            v[l] = static_cast<R>(call_lvalues(f, it...));
            (next_in_row(it), ...);
          }
          for (index_t l = 0; l < tile; ++l) lanes[l] = op(lanes[l], v[l]);
        }
        acc = lanes[0];
        for (index_t l = 1; l < tile; ++l) acc = op(acc, lanes[l]);
      }
    } else {
      for (; k + tile <= len; k += tile) {
        R v[tile];
        STRATA_CELL_INDEPENDENT
        for (index_t l = 0; l < tile; ++l) {
          v[l] = static_cast<R>(call_lvalues(f, it...));
          (next_in_row(it), ...);
        }
        for (index_t l = 0; l < tile; ++l) acc = op(acc, v[l]);
      }
    }
    for (; k < len; ++k) {
      acc = op(acc, static_cast<R>(call_lvalues(f, it...)));
      (next_in_row(it), ...);
    }
    return acc;
  }
};

/// Block b of a reducing split: its padding loads, then the kernel folding into f's
/// partials where the block lives, then their copy to the host.
template <class R, class Op, class F, class... A>
event split_reduce_block(std::size_t b, block_fold<R>& f, R identity, Op op, F const& kernel,
                         std::span<bool const> wraps, A const&... args) {
  std::vector<event> loads;
  std::size_t i = 0;
  auto load = [&](auto const& x) {
    if constexpr (arg_traits<std::remove_cvref_t<decltype(x)>>::padded)
      if (loads_padding(x)) {
        check_periodic_as_built(x.t, wraps[i]);
        loads.push_back(load_padding_fn::one(after{}, x.t, b, x.dims));
      }
    ++i;
  };
  (load(args), ...);
  auto const& t0 = first_tensor(args...);
  using TT = std::remove_cvref_t<decltype(t0)>;
  constexpr std::size_t N = TT::rank;
  auto const& where = t0.place_of(b);
  auto const extent = t0.block(b).extent;
  auto const s = fold_shape(where, extent);
  auto const n = f.host.size();
  return visit_space(f.space, [&](auto sp) {
    using S = decltype(sp);
    ptr<R, S> dev(f.device_data, f.device_memory);
    auto k = launch(after(loads), where, s, reduce_cell_kernel<N, F, R, Op>{kernel, op}, extent,
                    identity, dev, bind(args, b)...);
    return copy(after(k), ptr<R, host_space>(f.host.data(), 0), dev, n);
  });
}

/// The final node of a graph reduction: after every block's node (`parts`), it combines
/// the blocks' partials with `op` and completes `result`.
template <class R, class Op>
void add_combine(graph& g, char const* name, std::vector<std::shared_ptr<block_fold<R>>> folds,
                 std::vector<node_ref>& parts, Op op, reduction_result<R> result) {
  auto fin = g.add_joined(name, [folds = std::move(folds), op, result]() mutable {
    R acc = result.identity();
    for (auto const& f : folds)
      for (auto const& x : f->host) acc = op(acc, x);
    result.set(acc);
  });
  for (auto& p : parts) p.precede(fin);
}

}  // namespace tensor_detail

/// Reduces `transform(it)` over every cell of `t` with `op`, starting from `identity`
/// (waits for the result). The transform gets an iterator at the cell, as a kernel over
/// cells does (`*it`, record fields, `it.offset(dim, k)` into loaded padding), and runs
/// where the block lives: computing a value and its reduction in one pass saves a kernel,
/// a tensor of the values and, in a graph, a hand-off per block (Listing 12's wave speeds
/// and their maximum).
template <class T, std::size_t N, class R, class Op, class Tr>
R transform_reduce(after const& deps, tensor<T, N> const& t, R identity, Op op, Tr transform) {
  std::vector<std::shared_ptr<tensor_detail::block_fold<R>>> folds;
  std::vector<event> done;
  for (std::size_t b = 0; b < t.blocks(); ++b) {
    folds.push_back(tensor_detail::make_fold<T, N, R, Op>(t, b));
    done.push_back(tensor_detail::fold_block(deps, t, b, *folds.back(), identity, op, transform));
  }
  wait_all(done);
  R acc = identity;
  for (auto const& f : folds)
    for (auto const& x : f->host) acc = op(acc, x);
  return acc;
}
template <class T, std::size_t N, class R, class Op, class Tr>
R transform_reduce(tensor<T, N> const& t, R identity, Op op, Tr transform) {
  return transform_reduce(after{}, t, identity, op, transform);
}
/// Reduces every cell of `t` with `op`, starting from `identity` (waits for the result).
template <class T, std::size_t N, class R, class Op>
R reduce(after const& deps, tensor<T, N> const& t, R identity, Op op) {
  return transform_reduce(deps, t, identity, op, tensor_detail::cell_value{});
}
template <class T, std::size_t N, class R, class Op>
R reduce(tensor<T, N> const& t, R identity, Op op) {
  return reduce(after{}, t, identity, op);
}

/// graph::reduce / then_reduce over a tensor (found by argument-dependent lookup from
/// task/graph.hpp): a fold node per block after that block's writers, and a final node
/// that combines the partials and completes `result`. With a transform, each block's fold
/// reduces transform(it) (transform_reduce above).
template <class T, std::size_t N, class R, class Op, class Tr = tensor_detail::cell_value>
graph& tensor_reduce(graph& g, bool then, tensor<T, N> const& t, reduction_result<R> result, Op op,
                     Tr tr = {}) {
  auto const blocks = t.blocks();
  auto const key = t.partitioning();
  if (then) g.next_level();
  g.at_each_pass([result]() mutable { result.begin(); });
  std::vector<std::shared_ptr<tensor_detail::block_fold<R>>> folds;
  std::vector<node_ref> parts;
  for (std::size_t b = 0; b < blocks; ++b) {
    auto f = tensor_detail::make_fold<T, N, R, Op>(t, b);
    folds.push_back(f);
    std::vector<std::size_t> after_parts{b};
    if (!then)
      for (std::size_t k = 0; k < blocks; ++k)
        if (k != b) after_parts.push_back(k);
    node_options o("reduce[" + std::to_string(b) + "]");
    if (t.space_of(b) != space_id::host) o.kind = execution_kind::device;
    parts.push_back(g.add_part(std::move(o),
                               [t, b, f, op, tr, identity = result.identity()] {
                                 return tensor_detail::fold_block(after{}, t, b, *f, identity, op,
                                                                  tr);
                               },
                               key, b, blocks, after_parts, {}));
  }
  tensor_detail::add_combine(g, "reduce", std::move(folds), parts, op, std::move(result));
  return g;
}

/// graph::split_reduce / then_split_reduce (found by argument-dependent lookup from
/// task/graph.hpp): a split whose kernel returns each cell's value, folded with `op` into
/// `result` in the same pass (Kokkos' parallel_reduce with a functor that also writes).
/// One node per block issues its padding loads (concurrent access) and launches the
/// folding kernel after them; a final node combines the partials.
template <class R, class Op, class F, class... A>
graph& tensor_split_reduce(graph& g, bool then, reduction_result<R> result, Op op, F&& kernel_in,
                           A&&... args_in) {
  using kernel_t = std::decay_t<F>;
  auto const t0 = tensor_detail::first_tensor(args_in...);
  tensor_detail::check_split(t0, args_in...);
  if (tensor_detail::expansion(args_in...) != 0)
    throw invalid_argument(
        "split_reduce: an expanded or overlapped argument would fold padding cells; expected "
        "tensors, concurrent_padded_access or values");
  if ((tensor_detail::exclusive_access(args_in) || ...) ||
      (tensor_detail::staged_in_shared(args_in) || ...))
    throw invalid_argument(
        "split_reduce: exclusive or in_shared padded access is not supported; expected "
        "concurrent_padded_access (or a then_split before the reduction)");
  auto const key = t0.partitioning();
  auto const blocks = t0.blocks();
  kernel_t kernel(std::forward<F>(kernel_in));
  auto args = std::make_tuple(std::decay_t<A>(std::forward<A>(args_in))...);
  std::array<bool, sizeof...(A)> wraps{};
  bool padded = false;
  std::apply(
      [&](auto const&... a) {
        std::size_t i = 0;
        auto note = [&](auto const& x) {
          if constexpr (tensor_detail::arg_traits<std::remove_cvref_t<decltype(x)>>::padded) {
            wraps[i] = x.t.periodic();
            padded = padded || tensor_detail::loads_padding(x);
          }
          ++i;
        };
        (note(a), ...);
      },
      args);
  if (then) g.next_level();
  g.at_each_pass([result]() mutable { result.begin(); });
  using T0 = typename std::remove_cvref_t<decltype(t0)>::value_type;
  constexpr std::size_t N = std::remove_cvref_t<decltype(t0)>::rank;
  std::vector<std::shared_ptr<tensor_detail::block_fold<R>>> folds;
  std::vector<node_ref> parts;
  for (std::size_t b = 0; b < blocks; ++b) {
    auto f = tensor_detail::make_fold<T0, N, R, Op>(t0, b);
    folds.push_back(f);
    std::vector<std::size_t> after_parts{b}, reach;
    if (padded) {
      reach = std::apply(
          [&](auto const&... a) { return tensor_detail::padded_neighbours(b, a...); }, args);
      if (then) after_parts.insert(after_parts.end(), reach.begin(), reach.end());
    }
    if (!then) {  // split: after the whole previous level, as any node of this level
      after_parts.clear();
      for (std::size_t k = 0; k < blocks; ++k) after_parts.push_back(k);
    }
    node_options o("split_reduce[" + std::to_string(b) + "]");
    if (t0.space_of(b) != space_id::host) o.kind = execution_kind::device;
    parts.push_back(g.add_part(
        std::move(o),
        [kernel, op, args, b, f, wraps, identity = result.identity()] {
          return std::apply(
              [&](auto const&... a) {
                return tensor_detail::split_reduce_block(b, *f, identity, op, kernel,
                                                         std::span<bool const>(wraps), a...);
              },
              args);
        },
        key, b, blocks, after_parts, reach));
  }
  tensor_detail::add_combine(g, "split_reduce", std::move(folds), parts, op, std::move(result));
  return g;
}

}  // namespace strata
