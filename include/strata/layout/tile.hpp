// Tiling (PARRAY §4.1 itile / otile / iotile): inside a kernel, a tile of an array in
// outer memory (a box of its top-level dimensions, PARRAY's displaced window type of
// §2.10) is loaded into inner memory — a parallel block's scratchpad or a thread's
// private array — laid out by an inner array type, and stored back.
//
// The block forms split the tile's elements over the block's threads and meet at a
// barrier, so every thread sees the whole tile (`itile`) or the whole tile has been
// written back (`otile`); `iotile` does both around the threads' work. The plain forms
// run in one thread (private memory). A tile is a box of the outer type's top-level
// dimensions or, with one origin and extent per leaf, of its leaf sub-dimensions.
#pragma once

#include <strata/layout/array_type.hpp>

namespace strata {

namespace detail {

/// The sizes of the dimensions a tile of rank D spans: the top-level dimensions when D is
/// the type's rank, else its leaves in tree order (PARRAY §4.1 tiles over sub-dimensions:
/// in `[[4][6]][12]` a 3-rank tile is a box of A_0_0 x A_0_1 x A_1).
template <std::size_t D, class T, class S>
STRATA_FN constexpr vec<D> tile_space(array_type<T, S> const& outer) {
  vec<D> n = vec<D>::fill(1);
  if (static_cast<int>(D) == outer.rank()) {
    for (std::size_t d = 0; d < D; ++d) n[d] = outer.extent(static_cast<int>(d));
    return n;
  }
  dimension const& r = outer.root();
  int parts[max_dim_nodes] = {};
  int np = 0;
  r.collect_leaves(r.node(), parts, np);
  layout_check_equal(np == static_cast<int>(D),
                     "tile rank (one per top-level dimension or one per leaf dimension)",
                     static_cast<index_t>(D), outer.rank(), np);
  for (std::size_t d = 0; d < D; ++d) n[d] = r.tree().nodes[parts[d]].size;
  return n;
}

/// The outer offset of tile element k: the box's row-major element k, moved to `origin`
/// in the space of the tile's dimensions (sizes `space`).
template <std::size_t D, class T, class S>
STRATA_FN constexpr index_t tile_offset(array_type<T, S> const& outer, vec<D> const& space,
                                        vec<D> const& origin, vec<D> const& extent, index_t k) {
  index_t flat = 0, rest = k, scale = 1;
  for (std::size_t d = D; d-- > 0;) {
    index_t e = rest % extent[d];
    rest /= extent[d];
    flat += (origin[d] + e) * scale;
    scale *= space[d];
  }
  return detail::node_offset(outer.root().tree(), outer.root().node(), flat);
}

/// Checks the tile against the outer type and returns the sizes of its dimensions.
template <std::size_t D, class T, class S>
STRATA_FN constexpr vec<D> check_tile(array_type<T, S> const& outer, index_t inner_size,
                                      vec<D> const& origin, vec<D> const& extent) {
  vec<D> const space = tile_space<D>(outer);
  for (std::size_t d = 0; d < D; ++d) {
    index_t n = space[d];
    layout_check_least(extent[d] >= 1, "tile extent in its dimension", extent[d], 1);
    layout_check(extent[d] <= n, "tile extent in its dimension", extent[d], n + 1);
    // origin <= n - extent rather than origin + extent <= n: the sum wraps for an origin
    // near INT64_MAX and passed.
    layout_check(origin[d] >= 0 && origin[d] <= n - extent[d],
                 "tile origin in its dimension (the tile must end inside it)", origin[d],
                 n - extent[d] + 1);
  }
  layout_check_equal(inner_size == extent.product(), "inner type size (the tile's element count)",
                     inner_size, extent.product());
  return space;
}

/// A thread's share of a tile: elements first, first + step, ... (step 0 would never end).
STRATA_FN constexpr void check_tile_stride(index_t first, index_t step) {
  layout_check_least(first >= 0, "tile first element", first, 0);
  layout_check_least(step >= 1, "tile step", step, 1);
}

}  // namespace detail

/// Copies the tile of `outer_data` (laid out by `outer`) at `origin` with `extent` into
/// `inner` (laid out by `inner_type`): elements first, first + step, ... of the tile.
template <std::size_t D, class T, class S1, class S2>
STRATA_FN void load_tile(T* inner, array_type<T, S1> const& inner_type, T const* outer_data,
                         array_type<T, S2> const& outer, vec<D> origin, vec<D> extent,
                         index_t first = 0, index_t step = 1) {
  vec<D> const space = detail::check_tile(outer, inner_type.size(), origin, extent);
  detail::check_tile_stride(first, step);
  for (index_t k = first; k < inner_type.size(); k += step)
    inner[inner_type(k)] = outer_data[detail::tile_offset(outer, space, origin, extent, k)];
}

/// The reverse of load_tile: the tile goes back to outer memory.
template <std::size_t D, class T, class S1, class S2>
STRATA_FN void store_tile(T const* inner, array_type<T, S1> const& inner_type, T* outer_data,
                          array_type<T, S2> const& outer, vec<D> origin, vec<D> extent,
                          index_t first = 0, index_t step = 1) {
  vec<D> const space = detail::check_tile(outer, inner_type.size(), origin, extent);
  detail::check_tile_stride(first, step);
  for (index_t k = first; k < inner_type.size(); k += step)
    outer_data[detail::tile_offset(outer, space, origin, extent, k)] = inner[inner_type(k)];
}

/// PARRAY `itile`: the block's threads load the tile together, then meet at a barrier.
template <class Block, std::size_t D, class T, class S1, class S2>
STRATA_FN void itile(Block const& block, T* inner, array_type<T, S1> const& inner_type,
                     T const* outer_data, array_type<T, S2> const& outer, vec<D> origin,
                     vec<D> extent) {
  load_tile(inner, inner_type, outer_data, outer, origin, extent, block.linear_index(),
            block.linear_size());
  block.barrier();
}

/// PARRAY `otile`: after a barrier (the tile is complete) the block's threads store it
/// together, and meet again so the inner memory may be reused.
template <class Block, std::size_t D, class T, class S1, class S2>
STRATA_FN void otile(Block const& block, T const* inner, array_type<T, S1> const& inner_type,
                     T* outer_data, array_type<T, S2> const& outer, vec<D> origin, vec<D> extent) {
  block.barrier();
  store_tile(inner, inner_type, outer_data, outer, origin, extent, block.linear_index(),
             block.linear_size());
  block.barrier();
}

/// PARRAY `iotile`: the block loads the tile (itile), every thread runs `work()` on the
/// inner memory, and the block stores the tile back (otile).
template <class Block, std::size_t D, class T, class S1, class S2, class Work>
STRATA_FN void iotile(Block const& block, T* inner, array_type<T, S1> const& inner_type,
                      T* outer_data, array_type<T, S2> const& outer, vec<D> origin, vec<D> extent,
                      Work&& work) {
  itile(block, inner, inner_type, static_cast<T const*>(outer_data), outer, origin, extent);
  work();
  otile(block, static_cast<T const*>(inner), inner_type, outer_data, outer, origin, extent);
}

}  // namespace strata
