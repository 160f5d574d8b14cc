// Dimension trees and their offset functions (PARRAY §1.3, §2.3-2.4, §2.9-2.11, §5.1).
//
// A dimension tree is stored flat: a fixed-capacity pool of nodes with no heap memory, so
// a type is a trivially copyable value that a kernel receives by value on every backend
// and that constant-folds when it is `constexpr`. A node is
//   * regular: a leaf's offset is `index * stride`, where the stride is its row-major gap
//     inside its scope (the nearest enclosing node with a reference chain, or the root);
//     an inner node splits its index row-major over its children and sums their parts;
//   * a scope: a node with a chain of steps (PARRAY `#`): references to dimensions of
//     other types, displacements (`disp`), modulo (`dim(n)` of a cyclic type) and user
//     offset functions (`func`). The chain transforms the node's regular offset, left to
//     right; the node's offset is then "fixed": nothing above it changes it (§5.1).
//   * a pure reference (`[A_0]` without a size): it has the referred dimension's size and
//     offset function, and its sub-dimensions are the referred dimension's own (§2.9, F_0
//     is A_0_0): the node's children are shared, not copied.
// Referred trees are copied into the pool (once per type), so a type never points at
// another object.
#pragma once

#include <strata/config.hpp>
#include <strata/error.hpp>
#include <strata/vec.hpp>

#include <cstdint>
#include <string>

namespace strata {

/// Nodes one type may hold, its own and those of the types it refers to.
/// (Referred trees are embedded once per type and pure references share the referred
/// sub-trees, so a type of depth d costs about its own nodes plus its referred types'.)
inline constexpr int max_dim_nodes = 64;
/// Steps in one reference chain (`[80 # disp(10) # DATA_0]` has two).
inline constexpr int max_dim_chain = 3;

/// A user offset function (PARRAY §2.11 `func`): offset of index i, with a context. Plain
/// function pointers run on the CPU backends (serial, threads, openmp, sim).
using offset_function = index_t (*)(index_t i, void const* context);

/// One link of a reference chain.
struct dim_step {
  enum kind_t : std::uint8_t { ref, disp, mod, func };
  kind_t kind = disp;
  index_t value = 0;  // node id (ref), displacement (disp), modulus (mod)
  offset_function fn = nullptr;
  void const* context = nullptr;
};

struct dim_node {
  index_t size = 1;
  index_t stride = 1;  // regular stride inside the node's scope
  std::int16_t parent = -1;
  std::int16_t first_child = -1;
  std::int16_t children = 0;
  std::int16_t scope = -1;  // nearest ancestor-or-self with a chain; -1: the root's scope
  std::uint8_t chain_len = 0;
  bool pure = false;  // pure reference: offset comes from chain[0] alone
  // On the first-child path from its scope: a node that is not carries its scope chain's
  // offset relative to the chain's offset of 0, so that a displaced dimension's offset is
  // the sum of its sub-dimensions' (PARRAY §2.4, §2.10: W(i, j) == W_0(i) + W_1(j)).
  bool lead = true;
  dim_step chain[max_dim_chain];
};

struct dim_tree {
  dim_node nodes[max_dim_nodes];
  int count = 0;
};

namespace detail {

[[noreturn]] inline void layout_error(std::string const& what) {
  throw invalid_argument(what);
}

/// Device code cannot throw: a failed check there traps.
STRATA_FN constexpr void layout_check(bool ok, char const* what, index_t value = 0,
                                      index_t limit = 0) {
  if (ok) return;
#if STRATA_DEVICE_CODE
  (void)what;
  (void)value;
  (void)limit;
  __trap();
#else
  layout_error(std::string(what) + ": " + std::to_string(value) + " is outside [0, " +
               std::to_string(limit) + ")");
#endif
}

/// A check whose valid values are not a range from 0: the error says what was given and
/// what was expected (`expected`, or `alternative` too when it is not negative).
STRATA_FN constexpr void layout_check_equal(bool ok, char const* what, index_t value,
                                            index_t expected, index_t alternative = -1) {
  if (ok) return;
#if STRATA_DEVICE_CODE
  (void)what;
  (void)value;
  (void)expected;
  (void)alternative;
  __trap();
#else
  layout_error(std::string(what) + ": " + std::to_string(value) + " given, expected " +
               std::to_string(expected) +
               (alternative >= 0 && alternative != expected ? " or " + std::to_string(alternative)
                                                            : std::string()));
#endif
}

/// A check of a value that must be at least `least`.
STRATA_FN constexpr void layout_check_least(bool ok, char const* what, index_t value,
                                            index_t least) {
  if (ok) return;
#if STRATA_DEVICE_CODE
  (void)what;
  (void)value;
  (void)least;
  __trap();
#else
  layout_error(std::string(what) + ": " + std::to_string(value) + " given, expected " +
               std::to_string(least) + " or more");
#endif
}

STRATA_FN constexpr index_t positive_mod(index_t x, index_t m) {
  index_t r = x % m;
  return r < 0 ? r + m : r;
}

STRATA_RECURSIVE_FN constexpr index_t node_offset(dim_tree const& t, int n, index_t i);

/// The offset a scope node (chain or pure) gives index i.
STRATA_FN constexpr index_t apply_chain(dim_tree const& t, dim_node const& d, index_t x) {
  for (int s = 0; s < d.chain_len; ++s) {
    dim_step const& st = d.chain[s];
    switch (st.kind) {
      case dim_step::ref: {
        int r = static_cast<int>(st.value);
        // PARRAY §5.1: a referred dimension sees its index modulo its size ("in scope").
        x = node_offset(t, r, positive_mod(x, t.nodes[r].size));
        break;
      }
      case dim_step::disp:
        x += st.value;
        break;
      case dim_step::mod:
        x = positive_mod(x, st.value);
        break;
      case dim_step::func:
        x = st.fn(x, st.context);
        break;
    }
  }
  return x;
}

STRATA_RECURSIVE_FN constexpr index_t scope_offset(dim_tree const& t, int n, index_t i);

/// Adds node n's part of index i to `reg` (regular, before its scope's chain) or `fix`.
STRATA_RECURSIVE_FN constexpr void contribute(dim_tree const& t, int n, index_t i, index_t& reg,
                                              index_t& fix) {
  dim_node const& d = t.nodes[n];
  if (d.chain_len > 0) {
    fix += scope_offset(t, n, i);
    return;
  }
  if (d.children == 0) {
    reg += i * d.stride;
    return;
  }
  for (int c = d.first_child + d.children - 1; c >= d.first_child; --c) {
    index_t s = t.nodes[c].size;
    contribute(t, c, i % s, reg, fix);
    i /= s;
  }
}

STRATA_RECURSIVE_FN constexpr index_t scope_offset(dim_tree const& t, int n, index_t i) {
  dim_node const& d = t.nodes[n];
  if (d.pure || d.children == 0) return apply_chain(t, d, i);
  index_t reg = 0, fix = 0;
  for (int c = d.first_child + d.children - 1; c >= d.first_child; --c) {
    index_t s = t.nodes[c].size;
    contribute(t, c, i % s, reg, fix);
    i /= s;
  }
  return apply_chain(t, d, reg) + fix;
}

/// PARRAY's `T_k(i)`: the offset of dimension n at index i.
STRATA_RECURSIVE_FN constexpr index_t node_offset(dim_tree const& t, int n, index_t i) {
  dim_node const& d = t.nodes[n];
  if (d.chain_len > 0) return scope_offset(t, n, i);
  index_t reg = 0, fix = 0;
  contribute(t, n, i, reg, fix);
  if (d.scope < 0) return reg + fix;
  dim_node const& s = t.nodes[d.scope];
  return apply_chain(t, s, reg) + fix - (d.lead ? 0 : apply_chain(t, s, 0));
}

}  // namespace detail

/// A dimension of an array type (PARRAY's `A`, `A_0`, `A_0_1`): the type's tree and the
/// node's id. Calling it gives offsets; `[k]` names its k-th sub-dimension.
class dimension {
 public:
  constexpr dimension() = default;
  STRATA_FN constexpr dimension(dim_tree const& t, int node) : tree_(t), node_(node) {}

  STRATA_FN constexpr index_t size() const { return d().size; }
  /// Sub-dimensions (0 for a leaf), PARRAY `ndim`.
  STRATA_FN constexpr int ndim() const { return d().children; }
  STRATA_FN constexpr dim_tree const& tree() const { return tree_; }
  STRATA_FN constexpr int node() const { return node_; }

  /// The k-th sub-dimension (PARRAY `A_k`).
  STRATA_FN constexpr dimension operator[](int k) const {
    detail::layout_check(k >= 0 && k < d().children, "sub-dimension index", k, d().children);
    return dimension(tree_, d().first_child + k);
  }

  /// Offset of flattened index i (PARRAY `A_0(i)`).
  STRATA_FN constexpr index_t operator()(index_t i) const {
#if !defined(NDEBUG) || defined(STRATA_DEBUG)
    detail::layout_check(i >= 0 && i < size(), "dimension index", i, size());
#endif
    return detail::node_offset(tree_, node_, i);
  }

  /// Offset of a multi-index: one index per sub-dimension (`A(i, j)` = A_0(i) + A_1(j)), or
  /// one per leaf in tree order (`A(i, j, k)` for [[n][n]][m]).
  template <class... I>
  requires(sizeof...(I) >= 2) STRATA_FN constexpr index_t operator()(I... i) const {
    index_t idx[] = {static_cast<index_t>(i)...};
    constexpr int k = static_cast<int>(sizeof...(I));
    int parts[max_dim_nodes] = {};
    int np = 0;
    if (k == d().children)
      for (int c = 0; c < k; ++c) parts[np++] = d().first_child + c;
    else
      collect_leaves(node_, parts, np);
    detail::layout_check_equal(np == k, "index count (one per sub-dimension or per leaf)", k,
                               d().children, np);
    // The indices combine row-major into this dimension's flat index, so a chain above
    // them transforms their regular parts together (PARRAY §5.1).
    index_t flat = 0;
    for (int c = 0; c < k; ++c) {
      index_t s = tree_.nodes[parts[c]].size;
#if !defined(NDEBUG) || defined(STRATA_DEBUG)
      detail::layout_check(idx[c] >= 0 && idx[c] < s, "index", idx[c], s);
#endif
      flat = flat * s + idx[c];
    }
    return detail::node_offset(tree_, node_, flat);
  }

  /// Leaves under this dimension in tree order (itself when it has no sub-dimensions);
  /// `out` holds max_dim_nodes. Pure references share the referred sub-trees, so a type
  /// can have more leaves than nodes: beyond max_dim_nodes it is an error, not an overrun.
  STRATA_FN constexpr void collect_leaves(int n, int* out, int& count) const {
    dim_node const& x = tree_.nodes[n];
    if (x.children == 0) {
      detail::layout_check(count < max_dim_nodes, "leaves under one dimension", count,
                           max_dim_nodes);
      out[count++] = n;
      return;
    }
    for (int c = x.first_child; c < x.first_child + x.children; ++c) collect_leaves(c, out, count);
  }

 private:
  STRATA_FN constexpr dim_node const& d() const {
    return tree_.nodes[node_];
  }

  dim_tree tree_{};
  int node_ = 0;
};

}  // namespace strata
