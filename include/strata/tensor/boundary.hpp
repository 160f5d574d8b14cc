// Filling a tensor's padding (Ripple §5.4, Figure 6): internal halos come from the
// neighbouring blocks (copies between whatever memories they are in, corners included),
// and the padding at the domain's edges from a boundary policy: constant, copy (zero
// gradient, first-order extrapolation), reflect, periodic (the opposite edge's cells), or a
// user loader. Loads are asynchronous and return events.
#pragma once

#include <strata/exec/launch.hpp>
#include <strata/exec/work_division.hpp>
#include <strata/tensor/tensor.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

namespace boundary {
/// Leave the edges' padding as it is (only internal halos are loaded).
struct none {};
/// Every padding cell at an edge holds `value`.
template <class T>
struct constant {
  T value;
};
template <class T>
constant(T) -> constant<T>;
/// The edge cell's value (zero gradient across the edge).
struct copy {};
/// Mirror image of the interior: the cell k outside the edge holds the cell k-1 inside.
struct reflect {};
/// The domain wraps around: the padding holds the opposite edge's cells.
struct periodic {};
}  // namespace boundary

namespace tensor_detail {

template <class P>
struct is_constant : std::false_type {};
template <class T>
struct is_constant<boundary::constant<T>> : std::true_type {};

/// Fills the padding on one side (`side` -1: below 0, +1: past the extent) of dimension
/// `dim`, over the whole padded range of the other dimensions.
template <class T, std::size_t N, class P>
struct edge_kernel {
  P policy;
  template <class Self>
  STRATA_FN void operator()(Self const& self, tensor_block<T, N> b, std::size_t dim, int side,
                            vec<N> region) const {
    for_each_point<N>(self.elements(region), [&](vec<N> const& p) {
      vec<N> at{};
      for (std::size_t d = 0; d < N; ++d) at[d] = p[d] - b.padding;
      index_t const k = p[dim] + 1;  // distance from the edge, 1..padding
      at[dim] = side < 0 ? -k : b.extent[dim] - 1 + k;
      if constexpr (is_constant<P>::value) {
        *b.address(at) = static_cast<typename cell_traits<T>::value_type>(policy.value);
      } else if constexpr (std::is_same_v<P, boundary::copy>) {
        vec<N> from = at;
        from[dim] = side < 0 ? 0 : b.extent[dim] - 1;
        *b.address(at) = *b.address(from);
      } else if constexpr (std::is_same_v<P, boundary::reflect>) {
        vec<N> from = at;
        from[dim] = side < 0 ? k - 1 : b.extent[dim] - k;
        *b.address(at) = *b.address(from);
      } else if constexpr (requires(tensor_iterator<T, N> & it) {
                             policy.load_front(it, dim);
                             policy.load_back(it, dim);
                           }) {
        // Ripple's loader interface: load_front before the first cell, load_back past the
        // last, the iterator at the padding cell.
        tensor_iterator<T, N> it(b, at);
        if (side < 0)
          policy.load_front(it, dim);
        else
          policy.load_back(it, dim);
      } else {
        tensor_iterator<T, N> it(b, at);
        policy(it, dim, side);
      }
    });
  }
};

/// The edge loader of policy P for the tensor of `s`: one kernel per edge side of the
/// block in the dimensions of `dims`, dimension after dimension (so corners see their
/// neighbours' filled padding).
template <class T, std::size_t N, class P>
edge_loader make_edge_loader(tensor_state<T, N>* s, P policy) {
  return [s, policy](after const& deps, std::size_t b, dim_mask dims) {
    auto const& blk = s->blocks[b];
    auto const& where = s->homes[b].where;
    auto c = s->geo.coord(b);
    event e = when_all(deps);
    for (std::size_t d = 0; d < N; ++d) {
      if (!(dims >> d & 1u)) continue;
      for (int side : {-1, 1}) {
        bool edge = side < 0 ? c[d] == 0 : c[d] == s->geo.blocks[d] - 1;
        if (!edge) continue;
        auto region = blk.padded_extent();
        region[d] = blk.padding;
        e = launch(after(e), where, divide_work(where, region), edge_kernel<T, N, P>{policy}, blk,
                   d, side, region);
      }
    }
    return e;
  };
}

}  // namespace tensor_detail

/// Sets how `load_padding` fills the padding at the domain's edges: a policy of
/// strata::boundary, or a user loader `f(iterator, dim, side)` called for every padding
/// cell at an edge (`side` -1 below the first cell, +1 past the last; the iterator is at
/// the padding cell and may read the interior with `offset`). Runs where the block lives.
template <class T, std::size_t N, class B>
void set_boundary(tensor<T, N>& t, B policy) {
  auto& s = t.state();
  {
    std::lock_guard lock(s.halo_mutex);  // the halo copies depend on whether they wrap
    s.periodic = std::is_same_v<B, boundary::periodic>;
    s.halo.reset();
  }
  if constexpr (std::is_same_v<B, boundary::none> || std::is_same_v<B, boundary::periodic>)
    s.edges = nullptr;
  else
    s.edges = tensor_detail::make_edge_loader<T, N, B>(&s, policy);
}

namespace tensor_detail {

/// Calls fn(dlo, nb, slo, ext, dims) for each box of block b's halo: the box at dlo (local
/// to b) filled from the box at slo of block nb, a neighbour (or the opposite edge's block
/// when periodic); `dims` are the dimensions in which the box lies outside the block.
template <class T, std::size_t N, class Fn>
void for_each_halo_box(tensor_state<T, N> const& s, std::size_t b, Fn&& fn) {
  index_t const pad = s.geo.padding;
  auto const c = s.geo.coord(b);
  auto const& blk = s.blocks[b];
  index_t const offsets = [] {
    index_t n = 1;
    for (std::size_t d = 0; d < N; ++d) n *= 3;
    return n;
  }();
  for (index_t o = 0; o < offsets; ++o) {
    auto step = delinearize(o, vec<N>::fill(3));
    bool self = true, skip = false;
    vec<N> nc{}, dlo{}, slo{}, ext{};
    for (std::size_t d = 0; d < N; ++d) {
      index_t const dir = step[d] - 1;
      if (dir != 0) self = false;
      nc[d] = c[d] + dir;
      if (nc[d] < 0 || nc[d] >= s.geo.blocks[d]) {
        if (!s.periodic) {
          skip = true;
          break;
        }
        nc[d] = (nc[d] + s.geo.blocks[d]) % s.geo.blocks[d];
      }
    }
    if (self || skip) continue;
    auto const nb = s.geo.linear(nc);
    auto const& nblk = s.blocks[nb];
    dim_mask outside = 0;
    for (std::size_t d = 0; d < N; ++d) {
      index_t const dir = step[d] - 1;
      if (dir != 0) outside |= dim_mask{1} << d;
      if (dir < 0) {
        dlo[d] = -pad;
        slo[d] = nblk.extent[d] - pad;
        ext[d] = pad;
      } else if (dir > 0) {
        dlo[d] = blk.extent[d];
        slo[d] = 0;
        ext[d] = pad;
      } else {
        dlo[d] = 0;
        slo[d] = 0;
        ext[d] = blk.extent[d];
      }
    }
    fn(dlo, nb, slo, ext, outside);
  }
}

/// Every block's halo copies, planned (checked, shaped) once per tensor and boundary: a
/// halo exchange repeats the same copies every step, and planning them each time was
/// most of its issue cost, which delays the later copies' start (tensor-halo, session 31).
template <class T, std::size_t N>
std::shared_ptr<halo_plans const> plan_halos(tensor<T, N> const& t) {
  auto& s = t.state();
  std::lock_guard lock(s.halo_mutex);
  if (s.halo) return s.halo;
  auto plans = std::make_shared<halo_plans>(t.blocks());
  for (std::size_t b = 0; b < t.blocks(); ++b) {
    auto plan = [&](vec<N> const& dlo, std::size_t nb, vec<N> const& slo, vec<N> const& ext) {
      return visit_space(t.space_of(b), [&](auto ds) {
        return visit_space(t.space_of(nb), [&](auto ss) {
          return detail::plan_view_copy(t.template local_view<decltype(ds)>(b, dlo, ext),
                                        t.template local_view<decltype(ss)>(nb, slo, ext));
        });
      });
    };
    for_each_halo_box(s, b,
                      [&](vec<N> const& dlo, std::size_t nb, vec<N> const& slo, vec<N> const& ext,
                          dim_mask outside) {
                        (*plans)[b].push_back({outside, plan(dlo, nb, slo, ext)});
                      });
  }
  s.halo = plans;
  return plans;
}

/// Whether a halo box outside the block in `outside` is loaded by an access along `dims`.
inline bool loads_box(dim_mask outside, dim_mask dims) {
  return (outside & ~dims) == 0;
}

/// Block b's halo from its neighbouring blocks (and the opposite edge when periodic): the
/// boxes that lie outside the block only in dimensions of `dims`.
template <class T, std::size_t N>
event load_halo(after const& deps, tensor<T, N> const& t, std::size_t b, dim_mask dims) {
  if constexpr (!cell_traits<T>::is_record) {
    // Planned copies between the tensor's own live blocks: no range checks to repeat.
    auto const plans = plan_halos(t);
    auto const& mine = (*plans)[b];
    if (mine.size() == 1 && loads_box(mine.front().dims, dims))
      return detail::start_view_copy(deps, mine.front().copy);
    std::vector<event> copies;
    copies.reserve(mine.size());
    for (auto const& p : mine)
      if (loads_box(p.dims, dims)) copies.push_back(detail::start_view_copy(deps, p.copy));
    return copies.empty() ? when_all(deps) : when_all(after(std::move(copies)));
  } else {
    std::vector<event> copies;
    for_each_halo_box(t.state(), b,
                      [&](vec<N> const& dlo, std::size_t nb, vec<N> const& slo, vec<N> const& ext,
                          dim_mask outside) {
                        if (loads_box(outside, dims))
                          copies.push_back(copy_box(deps, t, b, dlo, t, nb, slo, ext));
                      });
    return copies.empty() ? when_all(deps) : when_all(after(std::move(copies)));
  }
}

}  // namespace tensor_detail

/// `load_padding(...)` fills padding; it is a function object so that a graph can take it
/// as a node's operation: `g.then_split(load_padding, t)` or `g.then_split(load_padding, t,
/// loader)` adds one padding-loading node per block (Ripple §5.4's loader nodes).
struct load_padding_fn {
  /// Fills block b's padding: its halo from the neighbouring blocks (and the opposite edge
  /// when periodic), then the domain edges by the tensor's boundary policy.
  template <class T, std::size_t N>
  event operator()(after const& deps, tensor<T, N> const& t, std::size_t b) const {
    check_block(t, b);
    return t.state().keep(one(deps, t, b));
  }
  /// As above, with `loader` for the domain edges instead of the tensor's policy: a
  /// strata::boundary policy, a Ripple-style loader (`load_front(it, dim)` /
  /// `load_back(it, dim)`) or `f(it, dim, side)`, run on the block's place.
  template <class T, std::size_t N, class L>
  event operator()(after const& deps, tensor<T, N> const& t, std::size_t b, L loader) const {
    static_assert(!std::is_same_v<L, boundary::periodic>,
                  "load_padding: periodic edges are a property of the tensor (its halo "
                  "exchange wraps around); call set_boundary(t, boundary::periodic{})");
    check_block(t, b);
    auto& s = t.state();
    if (s.geo.padding == 0) return when_all(deps);
    event halo = tensor_detail::load_halo(deps, t, b, all_dims);
    if constexpr (std::is_same_v<L, boundary::none>) {
      return s.keep(halo);
    } else {
      return s.keep(tensor_detail::make_edge_loader<T, N, L>(&s, std::move(loader))(after(halo), b,
                                                                                    all_dims));
    }
  }
  /// Fills the padding of every block (all halos, then edges).
  template <class T, std::size_t N>
  event operator()(after const& deps, tensor<T, N> const& t) const {
    std::vector<event> done;
    done.reserve(t.blocks());
    for (std::size_t b = 0; b < t.blocks(); ++b) done.push_back(one(deps, t, b));
    return t.state().keep(when_all(after(std::move(done))));
  }
  template <class T, std::size_t N>
  event operator()(tensor<T, N> const& t) const {
    return (*this)(after{}, t);
  }

  // For graph nodes (which hold the tensor) and the whole-tensor call: block b's padding
  // in the dimensions of `dims` (an access `along` them), not recorded for the release.
  template <class T, std::size_t N>
  static event one(after const& deps, tensor<T, N> const& t, std::size_t b,
                   dim_mask dims = all_dims);

 private:
  template <class T, std::size_t N>
  static void check_block(tensor<T, N> const& t, std::size_t b);
};
inline constexpr load_padding_fn load_padding{};

template <class T, std::size_t N>
void load_padding_fn::check_block(tensor<T, N> const& t, std::size_t b) {
  if (b >= t.blocks())
    throw out_of_range("load_padding: block " + std::to_string(b) + " of a tensor of " +
                       std::to_string(t.blocks()) + " blocks; expected a block below " +
                       std::to_string(t.blocks()));
}

template <class T, std::size_t N>
event load_padding_fn::one(after const& deps, tensor<T, N> const& t, std::size_t b, dim_mask dims) {
  auto& s = t.state();
  if (s.geo.padding == 0) return when_all(deps);
  event halo = tensor_detail::load_halo(deps, t, b, dims);
  if (!s.edges) return halo;
  return s.edges(after(halo), b, dims);
}

}  // namespace strata
