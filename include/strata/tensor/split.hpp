// Kernels over tensors (Ripple §5.3.3, §5.4): `kernel(args...)` runs once per cell, each
// tensor argument an iterator at the cell, on the place that holds the cell's block.
// `for_each_cell` launches it over every block now; `graph::split` / `then_split` make one
// node per block. Access specifiers say how a kernel uses the padding:
// `concurrent_padded_access(t)` loads t's padding first and lets each block's kernel start
// as soon as its own padding is in (Figure 7), `exclusive_padded_access(t)` also waits for
// the loads that read this block's cells (Figure 9), because the kernel writes them.
#pragma once

#include <strata/exec/phases.hpp>
#include <strata/task/graph.hpp>
#include <strata/tensor/access.hpp>
#include <strata/tensor/boundary.hpp>
#include <strata/tensor/cell_rows.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

namespace tensor_detail {

template <class A>
struct is_deferred : std::false_type {};
template <class F>
struct is_deferred<deferred_arg<F>> : std::true_type {};

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
  static constexpr bool padded = true;  // the padding is used (loaded unless `expanded`)
  static tensor<T, N> const& get(padded_access<T, N> const& a) { return a.t; }
};

template <class T, std::size_t N>
struct arg_traits<block_access_arg<T, N>> {
  static constexpr bool is_tensor = true;
  static constexpr bool padded = false;
  static tensor<T, N> const& get(block_access_arg<T, N> const& a) { return a.t; }
};

template <class T, std::size_t N>
struct block_cell_arg {
  tensor_block<T, N> b;
  STRATA_FN block_iterator<T, N> at(vec<N> const& p) const { return {b, p}; }
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
/// A tensor block staged in block scratch: `pad` cells of padding staged with it.
template <class T, std::size_t N>
struct shared_cell_arg {
  tensor_block<T, N> b;
  bool staged;  // false: an argument of the same kernel read in place
  index_t pad;
  STRATA_FN vec<N> staged_extent() const {
    vec<N> e = b.extent;
    for (std::size_t d = 0; d < N; ++d) e[d] += 2 * pad;
    return e;
  }
  /// Bytes of the staged copy (cells.hpp: records take their layout's bytes).
  STRATA_FN std::size_t staged_bytes() const {
    return cell_traits<T>::bytes(staged_extent().product());
  }
  /// The staged copy as a block whose cells have the original's local indices.
  STRATA_FN tensor_block<T, N> in(void* scratch) const {
    tensor_block<T, N> s = b;
    auto const e = staged_extent();
    s.base = cell_traits<T>::at(scratch, e.product());
    s.padding = pad;
    index_t step = 1;
    for (std::size_t d = N; d-- > 0;) {
      s.stride[d] = step;
      step *= e[d];
    }
    return s;
  }
};

template <class A>
auto bind(A const& a, std::size_t b) {
  using D = std::remove_cvref_t<A>;
  if constexpr (requires { block_cell_arg{a.t.block(b)}; } && !arg_traits<D>::padded) {
    auto const blk = a.t.block(b);
    if (blk.padded_extent().product() > index_t{0x7fffffff})
      throw invalid_argument("block_access: block " + std::to_string(b) + " has " +
                             std::to_string(blk.padded_extent().product()) +
                             " cells with its padding; expected fewer than 2^31 (the block " +
                             "iterator keeps 32-bit strides): use more sub-partitions");
    return block_cell_arg{blk};
  } else if constexpr (arg_traits<D>::is_tensor) {
    auto const& t = arg_traits<D>::get(a);
    using TT = std::remove_cvref_t<decltype(t)>;
    return cell_arg<typename TT::value_type, TT::rank>{t.block(b)};
  } else if constexpr (is_deferred<D>::value) {
    return value_arg<std::remove_cvref_t<decltype(a.f())>>{a.f()};
  } else {
    return value_arg<D>{a};
  }
}

/// Block b's argument for a kernel with staged (in_shared) tensors.
template <class A>
auto bind_shared(A const& a, std::size_t b) {
  using D = std::remove_cvref_t<A>;
  if constexpr (arg_traits<D>::padded) {
    using TT = std::remove_cvref_t<decltype(a.t)>;
    bool const padded = a.mode != padded_access_mode::unpadded;
    return shared_cell_arg<typename TT::value_type, TT::rank>{
        a.t.block(b), a.shared, a.shared && padded ? a.t.padding() : 0};
  } else {
    return bind(a, b);
  }
}

/// The scratch piece of a staged argument: every phase takes the pieces in argument order,
/// so the k-th call returns the same storage in each (docs/exec.md).
template <class Self, class T, std::size_t N>
STRATA_FN void* scratch_of(Self const& self, shared_cell_arg<T, N> const& a) {
  // Cache-line units: a record store's arrays start on lines (cells.hpp).
  struct alignas(cell_traits<T>::alignment) unit {
    unsigned char bytes[cell_traits<T>::alignment];
  };
  auto const n = (a.staged_bytes() + sizeof(unit) - 1) / sizeof(unit);
  return self.block().template scratchpad<unit>(n);
}
template <class Self, class T, std::size_t N>
STRATA_FN cell_arg<T, N> rebind(Self const& self, shared_cell_arg<T, N> const& a) {
  if (!a.staged) return {a.b};
  return {a.in(scratch_of(self, a))};
}
template <class Self, class V>
STRATA_FN V const& rebind(Self const&, V const& v) {
  return v;
}

struct no_state {};

// The three phases of a kernel over staged blocks (one parallel block per tensor block;
// thread t takes every nt-th cell): copy in, compute, copy the interior back.
struct stage_phase {
  template <class Self, std::size_t N, class... A>
  STRATA_FN void operator()(Self const& self, no_state&, vec<N> const&, A const&... a) const {
    (stage(self, a), ...);
  }
  template <class Self, class T, std::size_t N>
  STRATA_FN static void stage(Self const& self, shared_cell_arg<T, N> const& a) {
    if (!a.staged) return;
    auto const s = cell_traits<T>::at(scratch_of(self, a), a.staged_extent().product());
    auto const e = a.staged_extent();
    index_t const count = e.product();
    auto const blk = self.block();
    for (index_t k = blk.linear_index(); k < count; k += blk.linear_size()) {
      auto q = delinearize(k, e);
      for (std::size_t d = 0; d < N; ++d) q[d] -= a.pad;
      *(s + k) = *a.b.address(q);
    }
  }
  template <class Self, class V>
  STRATA_FN static void stage(Self const&, V const&) {}
};

template <std::size_t N, class F>
struct shared_compute_phase {
  F f;
  template <class Self, class... A>
  STRATA_FN void operator()(Self const& self, no_state&, vec<N> const& extent,
                            A const&... a) const {
    // Braces: the arguments' scratch pieces are taken left to right, as in the other phases.
    std::tuple<std::remove_cvref_t<decltype(rebind(self, a))>...> bound{rebind(self, a)...};
    index_t const count = extent.product();
    auto const blk = self.block();
    for (index_t k = blk.linear_index(); k < count; k += blk.linear_size()) {
      auto const p = delinearize(k, extent);
      std::apply([&](auto const&... x) { call_lvalues(f, x.at(p)...); }, bound);
    }
  }
};

/// Stores `from` into `to` only if their bytes differ. Write-back must not write cells the
/// kernel left alone: a staged tensor the kernel only reads (a concurrent padded access)
/// is read meanwhile by its neighbours' padding loads, which a rewrite of the same values
/// would race with.
template <class V>
STRATA_FN void store_if_changed(V* to, V const* from) {
  auto const* f = reinterpret_cast<unsigned char const*>(from);
  auto const* t = reinterpret_cast<unsigned char const*>(to);
  for (std::size_t i = 0; i < sizeof(V); ++i)
    if (f[i] != t[i]) {
      *to = *from;
      return;
    }
}

struct write_back_phase {
  template <class Self, std::size_t N, class... A>
  STRATA_FN void operator()(Self const& self, no_state&, vec<N> const& extent,
                            A const&... a) const {
    (back(self, extent, a), ...);
  }
  template <class Self, class T, std::size_t N>
  STRATA_FN static void back(Self const& self, vec<N> const& extent,
                             shared_cell_arg<T, N> const& a) {
    if (!a.staged) return;
    auto const staged = a.in(scratch_of(self, a));
    index_t const count = extent.product();
    auto const blk = self.block();
    for (index_t k = blk.linear_index(); k < count; k += blk.linear_size()) {
      auto const p = delinearize(k, extent);
      if constexpr (cell_traits<T>::is_record) {
        auto to = *a.b.address(p);
        auto from = *staged.address(p);
        decltype(to)::each_component(to, from,
                                     [](auto* t, auto const* f) { store_if_changed(t, f); });
      } else {
        store_if_changed(a.b.address(p), staged.address(p));
      }
    }
  }
  template <class Self, std::size_t N, class V>
  STRATA_FN static void back(Self const&, vec<N> const&, V const&) {}
};

template <class A>
bool staged_in_shared(A const& a) {
  if constexpr (arg_traits<std::remove_cvref_t<A>>::padded)
    return a.shared;
  else
    return false;
}

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
      if (a.t.padding() == 0 && a.mode != padded_access_mode::unpadded)
        throw invalid_argument("split: tensor argument " + std::to_string(k) +
                               " has a padded access specifier but no padding; expected a " +
                               "tensor created with padding > 0");
      if (a.expand < 0)
        throw invalid_argument("split: tensor argument " + std::to_string(k) + " expanded by " +
                               std::to_string(a.expand) + " cells; expected 0 or more");
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

/// The blocks next to block b (26 in 3-D, fewer at non-periodic edges), without b; with
/// `dims`, those next to it in those dimensions only (the halo boxes an access along them
/// loads).
template <class T, std::size_t N>
std::vector<std::size_t> neighbours(tensor<T, N> const& t, std::size_t b,
                                    dim_mask dims = all_dims) {
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
      if (step[d] != 1 && !(dims >> d & 1u)) {
        skip = true;
        break;
      }
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

/// How many cells into the padding the kernel runs: the largest `expand` of the padded
/// arguments; every tensor argument needs at least that much padding.
template <class... A>
index_t expansion(A const&... args) {
  index_t n = 0;
  auto widest = [&](auto const& a) {
    using D = std::remove_cvref_t<decltype(a)>;
    if constexpr (arg_traits<D>::padded) n = std::max(n, a.expand);
  };
  (widest(args), ...);
  if (n == 0) return 0;
  if ((staged_in_shared(args) || ...))
    throw invalid_argument("split: a kernel with in_shared arguments runs " + std::to_string(n) +
                           " cells into the padding; expected no expansion with shared access");
  std::size_t k = 0;
  auto check = [&](auto const& a) {
    using D = std::remove_cvref_t<decltype(a)>;
    ++k;
    if constexpr (arg_traits<D>::is_tensor) {
      auto const pad = arg_traits<D>::get(a).padding();
      if (pad < n)
        throw invalid_argument("split: the kernel runs " + std::to_string(n) +
                               " cells into the padding, but tensor argument " + std::to_string(k) +
                               " has padding " + std::to_string(pad) +
                               "; expected padding >= the expansion on every tensor");
    }
  };
  (check(args), ...);
  return n;
}

/// Launches the kernel on block b of the split's tensors (expanded `n` cells into the
/// padding).
template <class F, class... A>
event launch_block(after const& deps, F const& kernel, std::size_t b, index_t n, A const&... args) {
  auto const& t0 = first_tensor(args...);
  using TT = std::remove_cvref_t<decltype(t0)>;
  constexpr std::size_t N = TT::rank;
  auto const& where = t0.place_of(b);
  if ((staged_in_shared(args) || ...)) {
    // One parallel block per tensor block, its staged blocks in the block's scratch.
    std::size_t bytes = 0;
    auto add = [&](auto const& a) {
      auto const x = bind_shared(a, b);
      if constexpr (requires { x.staged; })
        if (x.staged)  // each piece aligned and rounded to whole units: two lines of slack
          bytes += x.staged_bytes() + 128;
    };
    (add(args), ...);
    auto const cells = t0.block(b).extent.product();
    index_t const want = where.isa() == isa::host ? 64 : 256;
    auto const shape = grid(1).block(parallel, want < cells ? want : cells).scratchpad(bytes);
    return launch(
        deps, where, shape,
        phases<no_state>(stage_phase{}, shared_compute_phase<N, F>{kernel}, write_back_phase{}),
        t0.block(b).extent, bind_shared(args, b)...);
  }
  auto extent = t0.block(b).extent;
  for (std::size_t d = 0; d < N; ++d) extent[d] += 2 * n;
  return launch(deps, where, divide_work(where, extent), cell_kernel<N, F>{kernel}, extent, -n,
                bind(args, b)...);
}

/// Whether argument `a` has its padding loaded before the kernel, and exclusively.
template <class A>
bool loads_padding(A const& a) {
  if constexpr (arg_traits<std::remove_cvref_t<A>>::padded)
    return a.mode == padded_access_mode::concurrent || a.mode == padded_access_mode::exclusive;
  else
    return false;
}
template <class A>
bool exclusive_access(A const& a) {
  if constexpr (arg_traits<std::remove_cvref_t<A>>::padded)
    return a.mode == padded_access_mode::exclusive;
  else
    return false;
}

/// A graph's padding-load nodes got their neighbours when the graph was built: a tensor
/// made periodic afterwards needs the wrap-around ones too (an outside probe saw wrong
/// halos, silently), so a node whose tensor changed since fails instead.
template <class T, std::size_t N>
void check_periodic_as_built(tensor<T, N> const& t, bool built) {
  if (t.periodic() != built)
    throw invalid_argument(std::string("graph: a padding-load node's tensor is ") +
                           (built ? "no longer" : "now") +
                           " periodic (set_boundary after the graph was built), so its "
                           "dependencies do not match the halo; expected set_boundary before "
                           "building the graph");
}

/// The blocks whose cells block b's padding loads read, over every argument whose padding
/// is loaded: each tensor's own neighbours (a periodic tensor wraps around even when the
/// first argument does not; taking the first's missed those dependencies, session 30).
template <class... A>
std::vector<std::size_t> padded_neighbours(std::size_t b, A const&... args) {
  std::set<std::size_t> out;
  auto add = [&](auto const& a) {
    if constexpr (arg_traits<std::remove_cvref_t<decltype(a)>>::padded)
      if (loads_padding(a))
        for (auto nb : neighbours(a.t, b, a.dims)) out.insert(nb);
  };
  (add(args), ...);
  return {out.begin(), out.end()};
}

/// Records `e` with every tensor argument, so that dropping the last handle of one while
/// the kernel runs waits for it (tensor_state::keep).
template <class... A>
event keep_tensors(event e, A const&... args) {
  auto one = [&](auto const& a) {
    using D = std::remove_cvref_t<decltype(a)>;
    if constexpr (arg_traits<D>::is_tensor) e = arg_traits<D>::get(a).state().keep(std::move(e));
  };
  (one(args), ...);
  return e;
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
  auto const n = tensor_detail::expansion(args...);
  // Padding loads of every padded tensor, per block.
  std::vector<std::vector<event>> loads(blocks);
  bool exclusive = false;
  auto load = [&](auto const& a) {
    if (tensor_detail::exclusive_access(a)) exclusive = true;
    if constexpr (tensor_detail::arg_traits<std::remove_cvref_t<decltype(a)>>::padded)
      if (tensor_detail::loads_padding(a))
        for (std::size_t b = 0; b < blocks; ++b)
          loads[b].push_back(load_padding_fn::one(deps, a.t, b, a.dims));
  };
  (load(args), ...);
  std::vector<event> done;
  for (std::size_t b = 0; b < blocks; ++b) {
    std::vector<event> before = loads[b];
    if (exclusive)
      for (auto nb : tensor_detail::padded_neighbours(b, args...))
        before.insert(before.end(), loads[nb].begin(), loads[nb].end());
    if (before.empty()) before.push_back(when_all(deps));
    done.push_back(tensor_detail::launch_block(after(before), kernel, b, n, args...));
  }
  return tensor_detail::keep_tensors(when_all(after(std::move(done))), args...);
}
template <class F, class... A>
requires(tensor_argument<A> || ...) event for_each_cell(F const& kernel, A const&... args) {
  return for_each_cell(after{}, kernel, args...);
}

/// for_each_cell, then wait: returns when every block has run, rethrowing a kernel's
/// exception (what `for_each_cell(...).wait()` does, minus a wake-up; launch_and_wait's
/// form for tensors). The calling thread runs the first host PU's share itself, so a
/// tensor on that PU alone is updated without waking the pool's reserve worker: 10^5
/// particles on one PU, 82-88 us a step with `.wait()`, 54-60 us this way, on the 2-core
/// VM (a parked thread's wake-up costs more there than a small kernel; docs/tensor.md).
template <class F, class... A>
requires(tensor_argument<A> || ...) void for_each_cell_and_wait(after const& deps, F const& kernel,
                                                                A const&... args) {
  auto const& t0 = tensor_detail::first_tensor(args...);
  // Not while a block's kernel runs inside the launch (serial, OpenMP): the caller then
  // helps nobody, and first-PU work another thread waits for would wait for a reserve
  // that is never woken (launch_and_wait).
  bool inline_block = false;
  for (std::size_t b = 0; b < t0.blocks() && !inline_block; ++b)
    inline_block = detail::runs_inline(t0.place_of(b));
  std::optional<detail::caller_waits> helping;
  if (!inline_block) helping.emplace();
  for_each_cell(deps, kernel, args...).wait();
}
template <class F, class... A>
requires(tensor_argument<A> || ...) void for_each_cell_and_wait(F const& kernel, A const&... args) {
  for_each_cell_and_wait(after{}, kernel, args...);
}

namespace tensor_detail {

/// `g.split(load_padding, t [, loader])`: one node per block that fills the block's padding
/// (Ripple's loader nodes). Each comes after the nodes that wrote the cells it reads (its
/// neighbours') or read the padding it overwrites (its own block's), and the nodes of later
/// levels that write those neighbours come after it.
template <class T, std::size_t N, class... L>
graph& padding_split(graph& g, node_options o, bool then, tensor<T, N> const& t,
                     L const&... loader) {
  static_assert(sizeof...(L) <= 1, "split(load_padding, tensor[, loader]): one loader at most");
  if (t.padding() == 0)
    throw invalid_argument("split(load_padding, ...): the tensor has no padding; expected a " +
                           std::string("tensor created with padding > 0"));
  auto const key = t.partitioning();
  auto const blocks = t.blocks();
  std::string const base = o.name.empty() ? "load_padding" : o.name;
  if (then) g.next_level();
  for (std::size_t b = 0; b < blocks; ++b) {
    auto reach = neighbours(t, b);
    std::vector<std::size_t> after_parts;
    if (then) {
      after_parts = reach;
      after_parts.push_back(b);
    } else {  // split: after the whole previous level, as any node of this level
      for (std::size_t k = 0; k < blocks; ++k) after_parts.push_back(k);
    }
    node_options lo = o;
    lo.name = base + "[" + std::to_string(b) + "]";
    if (!lo.kind && t.space_of(b) != space_id::host) lo.kind = execution_kind::device;
    g.add_part(
        std::move(lo),
        [t, b, wraps = t.periodic(), loader...] {
          check_periodic_as_built(t, wraps);
          return load_padding(after{}, t, b, loader...);
        },
        key, b, blocks, after_parts, reach);
  }
  return g;
}

}  // namespace tensor_detail

/// graph::split / then_split over tensors (found by argument-dependent lookup from
/// task/graph.hpp): one node per block, after padding-load nodes for padded arguments.
template <class F, class... A>
graph& tensor_split_kernel(graph& g, node_options o, bool then, F&& kernel_in, A&&... args_in);

template <class F, class... A>
graph& tensor_split(graph& g, node_options o, bool then, F&& kernel_in, A&&... args_in) {
  using kernel_t = std::decay_t<F>;
  if constexpr (std::is_same_v<kernel_t, load_padding_fn>)
    return tensor_detail::padding_split(g, std::move(o), then, args_in...);
  else
    return tensor_split_kernel(g, std::move(o), then, std::forward<F>(kernel_in),
                               std::forward<A>(args_in)...);
}

/// tensor_split for a kernel over cells.
template <class F, class... A>
graph& tensor_split_kernel(graph& g, node_options o, bool then, F&& kernel_in, A&&... args_in) {
  using kernel_t = std::decay_t<F>;
  auto const t0 = tensor_detail::first_tensor(args_in...);  // a handle: args_in are moved below
  tensor_detail::check_split(t0, args_in...);
  auto const key = t0.partitioning();
  auto const blocks = t0.blocks();
  std::string const base = o.name.empty() ? "split" : o.name;
  auto const n = tensor_detail::expansion(args_in...);
  bool padded = false, exclusive = false;
  auto scan = [&](auto const& a) {
    if (tensor_detail::loads_padding(a)) padded = true;
    if (tensor_detail::exclusive_access(a)) exclusive = true;
  };
  (scan(args_in), ...);
  std::vector<std::vector<std::size_t>> nbrs(blocks);
  if (padded)
    for (std::size_t b = 0; b < blocks; ++b)
      nbrs[b] = tensor_detail::padded_neighbours(b, args_in...);
  auto with_self = [&](std::size_t b) {
    auto v = nbrs[b];
    v.push_back(b);
    return v;
  };
  if (then) g.next_level();
  kernel_t kernel(std::forward<F>(kernel_in));
  auto args = std::make_tuple(std::decay_t<A>(std::forward<A>(args_in))...);
  if (padded && !exclusive) {
    // Concurrent padded access: one node per block issues its padding loads and launches
    // its kernel after them (stream order on the block's place), after whatever wrote
    // the cells the loads read (its neighbours') or the padding they overwrite (its own
    // block's readers). Ripple's Figure 7 has a loader node and a kernel node per block;
    // here only exclusive access, whose kernel waits for its neighbours' loads too, needs
    // two: one node spares a host hand-off between the loads and the kernel on every
    // block of every split (ripple-scaling's steps have two such splits).
    // Whether each argument's tensor was periodic when the graph was built (the loads'
    // dependencies were found from it).
    std::array<bool, sizeof...(A)> wraps{};
    std::apply(
        [&](auto const&... a) {
          std::size_t i = 0;
          auto note = [&](auto const& x) {
            if constexpr (tensor_detail::arg_traits<std::remove_cvref_t<decltype(x)>>::padded)
              wraps[i] = x.t.periodic();
            ++i;
          };
          (note(a), ...);
        },
        args);
    for (std::size_t b = 0; b < blocks; ++b) {
      node_options ko = o;
      ko.name = base + "[" + std::to_string(b) + "]";
      if (!ko.kind && t0.space_of(b) != space_id::host) ko.kind = execution_kind::device;
      auto after_parts = with_self(b);
      if (!then) {  // split: after the whole previous level, as any node of this level
        after_parts.clear();
        for (std::size_t k = 0; k < blocks; ++k) after_parts.push_back(k);
      }
      g.add_part(
          std::move(ko),
          [kernel, args, b, n, wraps] {
            return std::apply(
                [&](auto const&... a) {
                  std::vector<event> loads;
                  std::size_t i = 0;
                  auto load = [&](auto const& x) {
                    using D = std::remove_cvref_t<decltype(x)>;
                    if constexpr (tensor_detail::arg_traits<D>::padded)
                      if (tensor_detail::loads_padding(x)) {
                        tensor_detail::check_periodic_as_built(x.t, wraps[i]);
                        loads.push_back(load_padding_fn::one(after{}, x.t, b, x.dims));
                      }
                    ++i;
                  };
                  (load(a), ...);
                  return tensor_detail::launch_block(after(loads), kernel, b, n, a...);
                },
                args);
          },
          key, b, blocks, after_parts, nbrs[b]);
    }
    return g;
  }
  if (padded) {
    // Ripple Figure 7: a node per block loads its padding, after whatever wrote the cells
    // it reads (its neighbours') or the padding it overwrites (its own block's readers).
    auto add_loads = [&](auto const& a) {
      using D = std::remove_cvref_t<decltype(a)>;
      if constexpr (tensor_detail::arg_traits<D>::padded) {
        if (!tensor_detail::loads_padding(a)) return;
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
          g.add_part(std::move(lo),
                     [t = a.t, b, wraps = a.t.periodic(), dims = a.dims] {
                       tensor_detail::check_periodic_as_built(t, wraps);
                       return load_padding_fn::one(after{}, t, b, dims);
                     },
                     key, b, blocks, all, {});
        }
      }
    };
    std::apply([&](auto const&... a) { (add_loads(a), ...); }, args);
    g.next_level();
  }
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
        [kernel, args, b, n] {
          return std::apply(
              [&](auto const&... a) {
                return tensor_detail::launch_block(after{}, kernel, b, n, a...);
              },
              args);
        },
        key, b, blocks, after_parts, reach);
  }
  return g;
}

}  // namespace strata
