// Kernels over tensors (Ripple §5.3.3, §5.4): `kernel(args...)` runs once per cell, each
// tensor argument an iterator at the cell, on the place that holds the cell's block.
// `for_each_cell` launches it over every block now; `graph::split` / `then_split` make one
// node per block. Access specifiers say how a kernel uses the padding:
// `concurrent_padded_access(t)` loads t's padding first and lets each block's kernel start
// as soon as its own padding is in (Figure 7), `exclusive_padded_access(t)` also waits for
// the loads that read this block's cells (Figure 9), because the kernel writes them.
#pragma once

#include <strata/task/graph.hpp>
#include <strata/tensor/boundary.hpp>

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

enum class padded_access_mode { concurrent, exclusive };

/// A tensor argument whose padding the kernel reads (Ripple §5.4).
template <class T, std::size_t N>
struct padded_access {
  using tensor_split_tag = void;
  tensor<T, N> t;
  padded_access_mode mode;
};

template <class T, std::size_t N>
padded_access<T, N> concurrent_padded_access(tensor<T, N> const& t) {
  return {t, padded_access_mode::concurrent};
}
template <class T, std::size_t N>
padded_access<T, N> exclusive_padded_access(tensor<T, N> const& t) {
  return {t, padded_access_mode::exclusive};
}

namespace tensor_detail {

template <class A>
struct arg_traits {  // a plain value, passed to every cell as is
  static constexpr bool is_tensor = false;
  static constexpr bool padded = false;
};
template <class T, std::size_t N>
struct arg_traits<tensor<T, N>> {
  static constexpr bool is_tensor = true;
  static constexpr bool padded = false;
  static tensor<T, N> const& get(tensor<T, N> const& t) { return t; }
};
template <class T, std::size_t N>
struct arg_traits<padded_access<T, N>> {
  static constexpr bool is_tensor = true;
  static constexpr bool padded = true;
  static tensor<T, N> const& get(padded_access<T, N> const& a) { return a.t; }
};

template <class T, std::size_t N>
struct cell_arg {
  tensor_block<T, N> b;
  STRATA_FN tensor_iterator<T, N> at(vec<N> const& p) const { return {b, p}; }
};
template <class V>
struct value_arg {
  V v;
  template <std::size_t N>
  STRATA_FN V const& at(vec<N> const&) const {
    return v;
  }
};

/// Block b's kernel argument for `a`: the block of a tensor, or the value itself.
template <class A>
auto bind(A const& a, std::size_t b) {
  using D = std::remove_cvref_t<A>;
  if constexpr (arg_traits<D>::is_tensor) {
    auto const& t = arg_traits<D>::get(a);
    using TT = std::remove_cvref_t<decltype(t)>;
    return cell_arg<typename TT::value_type, TT::rank>{t.block(b)};
  } else {
    return value_arg<D>{a};
  }
}

/// Calls f with every argument as an lvalue (Ripple kernels take `auto& it`).
template <class F, class... A>
STRATA_FN void call_lvalues(F const& f, A... a) {
  f(a...);
}

/// Moves a kernel argument to the next cell of its row (values stay as they are).
template <class T, std::size_t N>
STRATA_FN void next_in_row(tensor_iterator<T, N>& it) {
  it.next_in_row();
}
template <class V>
STRATA_FN void next_in_row(V&) {}

template <std::size_t N, class F>
struct cell_kernel {
  F f;
  // Rows of the thread's element box: the iterators are made once per row and stepped
  // along it, so the inner loop is as plain as a raw-index loop (the callgrind check in
  // tests/CMakeLists.txt holds it to that).
  template <class Self, class... A>
  STRATA_FN void operator()(Self const& self, vec<N> extent, A const&... a) const {
    auto r = self.elements(extent);
    if constexpr (N == 1) {
      row(r.last - r.first, a.at(vec<1>{r.first})...);
    } else if constexpr (N == 2) {
      for (index_t i = 0; i < r.extent[0]; ++i)
        row(r.extent[1], a.at(vec<2>{r.first[0] + i, r.first[1]})...);
    } else {
      for (index_t i = 0; i < r.extent[0]; ++i)
        for (index_t j = 0; j < r.extent[1]; ++j)
          row(r.extent[2], a.at(vec<3>{r.first[0] + i, r.first[1] + j, r.first[2]})...);
    }
  }
  template <class... I>
  STRATA_FN void row(index_t len, I... it) const {
    for (index_t k = 0; k < len; ++k) {
      call_lvalues(f, it...);  // copies: a kernel that moves its iterator moves its own
      (next_in_row(it), ...);
    }
  }
};

/// The first tensor among the arguments: it decides the block grid and the places.
template <class A, class... R>
auto const& first_tensor(A const& a, R const&... r) {
  if constexpr (arg_traits<std::remove_cvref_t<A>>::is_tensor)
    return arg_traits<std::remove_cvref_t<A>>::get(a);
  else
    return first_tensor(r...);
}

/// Every tensor argument has the first's cells and blocks, each block in the same memory.
template <class T0, std::size_t N0, class... A>
void check_split(tensor<T0, N0> const& t0, A const&... args) {
  std::size_t k = 0;
  auto check = [&](auto const& a) {
    using D = std::remove_cvref_t<decltype(a)>;
    ++k;
    if constexpr (arg_traits<D>::padded) {
      if (a.t.padding() == 0)
        throw invalid_argument("split: tensor argument " + std::to_string(k) +
                               " has a padded access specifier but no padding; expected a " +
                               "tensor created with padding > 0");
    }
    if constexpr (arg_traits<D>::is_tensor) {
      auto const& t = arg_traits<D>::get(a);
      using TT = std::remove_cvref_t<decltype(t)>;
      if constexpr (TT::rank != N0) {
        throw invalid_argument("split: tensor argument " + std::to_string(k) + " has " +
                               std::to_string(TT::rank) + " dimensions, the first " +
                               std::to_string(N0) + "; expected tensors of one rank");
      } else {
        if (!t.same_cells(t0))
          throw invalid_argument(
              "split: tensor argument " + std::to_string(k) + " of extent " +
              detail::shape_text(t.extent()) + " is cut into other blocks than the first (" +
              detail::shape_text(t0.extent()) +
              "); expected tensors of one extent, partitioning and sub-partitioning");
        for (std::size_t b = 0; b < t.blocks(); ++b)
          if (t.space_of(b) != t0.space_of(b) || t.place_of(b).id() != t0.place_of(b).id())
            throw invalid_argument("split: block " + std::to_string(b) + " of tensor argument " +
                                   std::to_string(k) + " is on another place than the first's;" +
                                   " expected tensors of one split on the same places");
      }
    }
  };
  (check(args), ...);
}

/// The blocks next to block b (26 in 3-D, fewer at non-periodic edges), without b.
template <class T, std::size_t N>
std::vector<std::size_t> neighbours(tensor<T, N> const& t, std::size_t b) {
  auto const& s = t.state();
  auto const c = s.geo.coord(b);
  index_t offsets = 1;
  for (std::size_t d = 0; d < N; ++d) offsets *= 3;
  std::set<std::size_t> out;
  for (index_t o = 0; o < offsets; ++o) {
    auto step = delinearize(o, vec<N>::fill(3));
    vec<N> nc{};
    bool skip = false;
    for (std::size_t d = 0; d < N && !skip; ++d) {
      nc[d] = c[d] + step[d] - 1;
      if (nc[d] < 0 || nc[d] >= s.geo.blocks[d]) {
        if (!s.periodic) skip = true;
        nc[d] = (nc[d] + s.geo.blocks[d]) % s.geo.blocks[d];
      }
    }
    if (!skip) out.insert(s.geo.linear(nc));
  }
  out.erase(b);
  return {out.begin(), out.end()};
}

/// Launches the kernel on block b of the split's tensors.
template <class F, class... A>
event launch_block(after const& deps, F const& kernel, std::size_t b, A const&... args) {
  auto const& t0 = first_tensor(args...);
  using TT = std::remove_cvref_t<decltype(t0)>;
  constexpr std::size_t N = TT::rank;
  auto const& where = t0.place_of(b);
  auto const extent = t0.block(b).extent;
  return launch(deps, where, divide_work(where, extent), cell_kernel<N, F>{kernel}, extent,
                bind(args, b)...);
}

}  // namespace tensor_detail

/// Runs `kernel(args...)` for every cell of the tensor arguments now (one launch per block
/// on the block's place); padded access specifiers load the padding first. The event
/// completes when every block is done.
template <class F, class... A>
requires(tensor_argument<A> || ...) event
    for_each_cell(after const& deps, F const& kernel, A const&... args) {
  auto const& t0 = tensor_detail::first_tensor(args...);
  tensor_detail::check_split(t0, args...);
  auto const blocks = t0.blocks();
  // Padding loads of every padded tensor, per block.
  std::vector<std::vector<event>> loads(blocks);
  bool exclusive = false;
  auto load = [&](auto const& a) {
    using D = std::remove_cvref_t<decltype(a)>;
    if constexpr (tensor_detail::arg_traits<D>::padded) {
      if (a.mode == padded_access_mode::exclusive) exclusive = true;
      for (std::size_t b = 0; b < blocks; ++b) loads[b].push_back(load_padding(deps, a.t, b));
    }
  };
  (load(args), ...);
  std::vector<event> done;
  for (std::size_t b = 0; b < blocks; ++b) {
    std::vector<event> before = loads[b];
    if (exclusive)
      for (auto nb : tensor_detail::neighbours(t0, b))
        before.insert(before.end(), loads[nb].begin(), loads[nb].end());
    if (before.empty()) before.push_back(when_all(deps));
    done.push_back(tensor_detail::launch_block(after(before), kernel, b, args...));
  }
  return when_all(after(done));
}
template <class F, class... A>
requires(tensor_argument<A> || ...) event for_each_cell(F const& kernel, A const&... args) {
  return for_each_cell(after{}, kernel, args...);
}

/// graph::split / then_split over tensors (found by argument-dependent lookup from
/// task/graph.hpp): one node per block, after padding-load nodes for padded arguments.
template <class F, class... A>
graph& tensor_split(graph& g, node_options o, bool then, F&& kernel_in, A&&... args_in) {
  using kernel_t = std::decay_t<F>;
  auto const t0 = tensor_detail::first_tensor(args_in...);  // a handle: args_in are moved below
  tensor_detail::check_split(t0, args_in...);
  auto const key = t0.partitioning();
  auto const blocks = t0.blocks();
  std::string const base = o.name.empty() ? "split" : o.name;
  bool padded = false, exclusive = false;
  auto scan = [&](auto const& a) {
    using D = std::remove_cvref_t<decltype(a)>;
    if constexpr (tensor_detail::arg_traits<D>::padded) {
      padded = true;
      if (a.mode == padded_access_mode::exclusive) exclusive = true;
    }
  };
  (scan(args_in), ...);
  std::vector<std::vector<std::size_t>> nbrs(blocks);
  if (padded)
    for (std::size_t b = 0; b < blocks; ++b) nbrs[b] = tensor_detail::neighbours(t0, b);
  auto with_self = [&](std::size_t b) {
    auto v = nbrs[b];
    v.push_back(b);
    return v;
  };
  if (then) g.next_level();
  if (padded) {
    // Ripple Figure 7: a node per block loads its padding, after whatever wrote the cells
    // it reads (its neighbours') or the padding it overwrites (its own block's readers).
    auto add_loads = [&](auto const& a) {
      using D = std::remove_cvref_t<decltype(a)>;
      if constexpr (tensor_detail::arg_traits<D>::padded) {
        for (std::size_t b = 0; b < blocks; ++b) {
          auto after_parts = with_self(b);
          node_options lo(base + ".padding[" + std::to_string(b) + "]");
          if (a.t.space_of(b) != space_id::host) lo.kind = execution_kind::device;
          std::span<std::size_t const> all(after_parts);
          std::vector<std::size_t> everything;
          if (!then) {  // split: after the whole previous level, as any node of this level
            for (std::size_t k = 0; k < blocks; ++k) everything.push_back(k);
            all = everything;
          }
          g.add_part(std::move(lo), [t = a.t, b] { return load_padding(after{}, t, b); }, key, b,
                     blocks, all, {});
        }
      }
    };
    (add_loads(args_in), ...);
    g.next_level();
  }
  kernel_t kernel(std::forward<F>(kernel_in));
  auto args = std::make_tuple(std::decay_t<A>(std::forward<A>(args_in))...);
  for (std::size_t b = 0; b < blocks; ++b) {
    node_options ko = o;
    ko.name = base + "[" + std::to_string(b) + "]";
    if (!ko.kind && t0.space_of(b) != space_id::host) ko.kind = execution_kind::device;
    std::vector<std::size_t> after_parts{b}, reach;
    if (padded) {
      reach = nbrs[b];
      if (exclusive) after_parts = with_self(b);
    } else if (!then) {
      for (std::size_t k = 0; k < blocks; ++k)
        if (k != b) after_parts.push_back(k);
    }
    g.add_part(
        std::move(ko),
        [kernel, args, b] {
          return std::apply(
              [&](auto const&... a) {
                return tensor_detail::launch_block(after{}, kernel, b, a...);
              },
              args);
        },
        key, b, blocks, after_parts, reach);
  }
  return g;
}

}  // namespace strata
