// Declaring dimension trees (PARRAY §2.3, §2.9-2.11): the C++ spelling of PARRAY's
// bracket notation.
//
//   PARRAY                         Strata
//   [[n][n]][m]                    dims{n, n}, m          (array_type's arguments)
//   [A_0_1][A_0_0]                 A[0][1], A[0][0]
//   [7 # A_0]                      7 | A[0]
//   [[2][2] # A_0]                 dims{2, 2} | A[0]
//   [80 # disp(10) # DATA_0]       80 | disp(10) | DATA[0]
//   [10 # disp(3) # dim(10)]       10 | disp(3) | cyclic(10)
//   [1000 # func(i) access(i)]     1000 | func{access}
//
// Building happens on the host; the result is a flat dim_tree (dims.hpp).
#pragma once

#include <strata/layout/dims.hpp>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace strata {

/// PARRAY `disp(k)`: adds k to the offset (any index is allowed, PARRAY §2.10).
struct disp {
  index_t value;
  constexpr explicit disp(index_t v) : value(v) {}
};
/// PARRAY's `dim(n)` at the end of a chain: the offset modulo n, a cyclic displacement.
struct cyclic {
  index_t n;
  constexpr explicit cyclic(index_t m) : n(m) {}
};
/// PARRAY `func` (§2.11): a user offset function of the index.
struct func {
  offset_function fn;
  void const* context = nullptr;
};

struct dims;

/// One dimension of a declaration: a size, a group of sub-dimensions, or a reference,
/// optionally followed by a chain of steps (`|` is PARRAY's `#`).
class dim_spec {
 public:
  struct step {
    dim_step::kind_t kind;
    index_t value = 0;
    offset_function fn = nullptr;
    void const* context = nullptr;
    dimension target{};  // for references
  };

  template <std::integral I>
  dim_spec(I n) : size_(static_cast<index_t>(n)) {  // NOLINT: [n]
    if (size_ < 1)
      detail::layout_error("array type: dimension size " + std::to_string(size_) +
                           " is invalid; expected at least 1");
  }
  /// A pure reference (PARRAY `[A_0]`): the referred size, offsets and sub-dimensions.
  dim_spec(dimension const& r) : size_(0) { chain_.push_back({dim_step::ref, 0, {}, {}, r}); }
  dim_spec(dims const& group);  // NOLINT: [[..][..]]

  index_t size() const { return size_; }
  std::vector<dim_spec> const& children() const { return children_; }
  std::vector<step> const& chain() const { return chain_; }
  bool pure() const { return size_ == 0; }

  /// Appends a step to the chain (operator| below).
  dim_spec then(step s) {
    if (chain_.size() >= static_cast<std::size_t>(max_dim_chain))
      detail::layout_error("array type: more than " + std::to_string(max_dim_chain) +
                           " steps in one reference chain");
    chain_.push_back(s);
    return std::move(*this);
  }

 private:
  index_t size_ = 0;
  std::vector<dim_spec> children_;
  std::vector<step> chain_;
};

/// A group of sub-dimensions: `dims{n, n}` is PARRAY's `[[n][n]]`.
struct dims {
  std::vector<dim_spec> list;
  dims(std::initializer_list<dim_spec> l) : list(l) {
    if (list.empty()) detail::layout_error("array type: an empty dims{}; expected dimensions");
  }
};

inline dim_spec::dim_spec(dims const& group) : size_(1), children_(group.list) {
  for (auto const& c : children_) {
    index_t n = c.pure() ? c.chain_.front().target.size() : c.size_;
    if (size_ > (index_t{1} << 62) / n) detail::layout_error("array type: size overflows");
    size_ *= n;
  }
}

// PARRAY's `#`: a dimension followed by a reference, displacement, modulo or function.
inline dim_spec operator|(dim_spec s, dimension const& r) {
  return s.then({dim_step::ref, 0, {}, {}, r});
}
inline dim_spec operator|(dim_spec s, disp d) {
  return s.then({dim_step::disp, d.value});
}
inline dim_spec operator|(dim_spec s, cyclic c) {
  if (c.n < 1)
    detail::layout_error("array type: cyclic(" + std::to_string(c.n) +
                         ") is invalid; expected a modulus of at least 1");
  return s.then({dim_step::mod, c.n});
}
inline dim_spec operator|(dim_spec s, func f) {
  if (!f.fn) detail::layout_error("array type: func with a null offset function");
  return s.then({dim_step::func, 0, f.fn, f.context});
}

namespace detail {

inline bool same_node(dim_node const& a, dim_node const& b) {
  if (a.size != b.size || a.stride != b.stride || a.parent != b.parent ||
      a.first_child != b.first_child || a.children != b.children || a.scope != b.scope ||
      a.chain_len != b.chain_len || a.pure != b.pure || a.lead != b.lead)
    return false;
  for (int s = 0; s < a.chain_len; ++s)
    if (a.chain[s].kind != b.chain[s].kind || a.chain[s].value != b.chain[s].value ||
        a.chain[s].fn != b.chain[s].fn || a.chain[s].context != b.chain[s].context)
      return false;
  return true;
}

class tree_builder {
 public:
  dim_tree build(dim_spec const& root) {
    int id = reserve(1);
    emit(root, id, -1);
    assign(id, -1, 1);
    return t_;
  }

 private:
  int reserve(int n) {
    if (t_.count + n > max_dim_nodes)
      layout_error("array type: more than " + std::to_string(max_dim_nodes) +
                   " dimension nodes (own and referred types' together)");
    int first = t_.count;
    t_.count += n;
    return first;
  }

  /// Copies a referred type's tree into the pool once; returns the node's new id.
  int embed(dimension const& r) {
    dim_tree const& src = r.tree();
    for (auto const& [at, n] : embedded_) {
      bool same = n == src.count;
      for (int i = 0; same && i < n; ++i) {
        dim_node x = src.nodes[i];
        shift(x, at);
        same = same_node(x, t_.nodes[at + i]);
      }
      if (same) return at + r.node();
    }
    int at = reserve(src.count);
    for (int i = 0; i < src.count; ++i) {
      t_.nodes[at + i] = src.nodes[i];
      shift(t_.nodes[at + i], at);
    }
    embedded_.push_back({at, src.count});
    return at + r.node();
  }

  static void shift(dim_node& x, int by) {
    if (x.parent >= 0) x.parent = static_cast<std::int16_t>(x.parent + by);
    if (x.first_child >= 0) x.first_child = static_cast<std::int16_t>(x.first_child + by);
    if (x.scope >= 0) x.scope = static_cast<std::int16_t>(x.scope + by);
    for (int s = 0; s < x.chain_len; ++s)
      if (x.chain[s].kind == dim_step::ref) x.chain[s].value += by;
  }

  void emit_chain(dim_spec const& s, int id) {
    dim_node& d = t_.nodes[id];
    d.chain_len = static_cast<std::uint8_t>(s.chain().size());
    for (std::size_t k = 0; k < s.chain().size(); ++k) {
      auto const& st = s.chain()[k];
      int target = st.kind == dim_step::ref ? embed(st.target) : 0;
      dim_step& out = t_.nodes[id].chain[k];  // embed may not move the pool, but re-index
      out.kind = st.kind;
      out.value = st.kind == dim_step::ref ? target : st.value;
      out.fn = st.fn;
      out.context = st.context;
    }
  }

  /// A pure reference to node `target` (already in the pool): its size and offsets, and
  /// its sub-dimensions as pure references (PARRAY §2.9: F_0 is A_0_0).
  void emit_pure(int id, int parent, int target) {
    dim_node& d = t_.nodes[id];
    d = dim_node{};
    d.parent = static_cast<std::int16_t>(parent);
    d.size = t_.nodes[target].size;
    d.pure = true;
    d.chain_len = 1;
    d.chain[0] = dim_step{dim_step::ref, target, nullptr, nullptr};
    // The referred sub-dimensions are this one's (shared: F_0 is the node A_0_0 itself).
    d.first_child = t_.nodes[target].first_child;
    d.children = t_.nodes[target].children;
  }

  void emit(dim_spec const& s, int id, int parent) {
    if (s.pure()) {
      int target = embed(s.chain().front().target);
      emit_pure(id, parent, target);
      // Steps after the first reference transform its offsets further.
      if (s.chain().size() > 1) {
        dim_spec rest = s;
        emit_chain(rest, id);
        t_.nodes[id].chain[0].value = target;
      }
      return;
    }
    t_.nodes[id] = dim_node{};
    t_.nodes[id].parent = static_cast<std::int16_t>(parent);
    t_.nodes[id].size = s.size();
    emit_chain(s, id);
    int n = static_cast<int>(s.children().size());
    if (n == 0) return;
    if (n > 10)
      layout_error("array type: " + std::to_string(n) +
                   " sub-dimensions in one group; PARRAY allows at most 10 (names A_0..A_9)");
    int first = reserve(n);
    t_.nodes[id].first_child = static_cast<std::int16_t>(first);
    t_.nodes[id].children = static_cast<std::int16_t>(n);
    for (int c = 0; c < n; ++c) emit(s.children()[c], first + c, id);
  }

  /// Regular strides: row-major gaps inside each scope (PARRAY §1.3, §5.1).
  /// `lead`: n is on the first-child path from its scope (see dim_node::lead).
  void assign(int n, int scope, index_t stride, bool lead = true) {
    dim_node& d = t_.nodes[n];
    if (d.pure) return;  // offsets come from the referred dimension
    index_t inner = stride;
    int inner_scope = scope;
    d.lead = lead;
    if (d.chain_len > 0) {
      d.stride = 1;
      d.scope = static_cast<std::int16_t>(scope);
      inner = 1;
      inner_scope = n;
      lead = true;  // a scope starts its own path
    } else {
      d.stride = stride;
      d.scope = static_cast<std::int16_t>(scope);
    }
    for (int c = d.first_child + d.children - 1; d.children > 0 && c >= d.first_child; --c) {
      assign(c, inner_scope, inner, lead && c == d.first_child);
      inner *= t_.nodes[c].size;
    }
  }

  dim_tree t_{};
  std::vector<std::pair<int, int>> embedded_;
};

inline void describe(dim_tree const& t, int n, bool top, std::string& out);

/// A referred dimension as its whole type and its path, e.g. "[5][7]_1" for A_1.
inline std::string referred(dim_tree const& t, int n) {
  // The steps from n up to its root, appended root-first below (not prepended to a
  // string: GCC 12 at -O3 reports a false -Wstringop-overflow for `"_" + s + path`).
  std::vector<int> steps;
  int root = n;
  while (t.nodes[root].parent >= 0) {
    int p = t.nodes[root].parent;
    steps.push_back(root - t.nodes[p].first_child);
    root = p;
  }
  std::string out;
  describe(t, root, true, out);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    out += '_';
    out += std::to_string(*it);
  }
  return out;
}

inline void describe(dim_tree const& t, int n, bool top, std::string& out) {
  dim_node const& d = t.nodes[n];
  std::string body;
  if (d.pure)
    body = "ref(" + referred(t, static_cast<int>(d.chain[0].value)) + ")";
  else if (d.children == 0)
    body = std::to_string(d.size);
  else
    for (int c = d.first_child; c < d.first_child + d.children; ++c) describe(t, c, false, body);
  for (int s = d.pure ? 1 : 0; s < d.chain_len; ++s) {
    auto const& st = d.chain[s];
    if (st.kind == dim_step::ref)
      body += " # ref(" + referred(t, static_cast<int>(st.value)) + ")";
    else if (st.kind == dim_step::disp)
      body += " # disp(" + std::to_string(st.value) + ")";
    else if (st.kind == dim_step::mod)
      body += " # dim(" + std::to_string(st.value) + ")";
    else
      body += " # func";
  }
  out += top && d.children > 0 && d.chain_len == 0 ? body : "[" + body + "]";
}

}  // namespace detail

/// PARRAY notation for a dimension's shape, e.g. "[[3][3]][2]", or "[7 # ref([[3][3]][2]_0)]"
/// for a reference (the referred type and the referred dimension's path in it).
inline std::string to_string(dimension const& d) {
  std::string out;
  detail::describe(d.tree(), d.node(), true, out);
  return out;
}

/// A regular row-major type `[n0][n1]...` built at compile time when its sizes are
/// constants: `constexpr array_type<float> a(static_dims(4, 3));` folds every offset.
template <std::integral... N>
constexpr dimension static_dims(N... n) {
  dim_tree t;
  index_t sizes[] = {static_cast<index_t>(n)...};
  constexpr int k = static_cast<int>(sizeof...(N));
  if (k == 1) {
    // The one-size form skips the loop below, so it needs its own check: a size-0 type
    // reached the copies' `% e` (SIGFPE).
    if (sizes[0] < 1)
      detail::layout_error("static_dims: size " + std::to_string(sizes[0]) +
                           "; expected a size of at least 1");
    t.count = 1;
    t.nodes[0].size = sizes[0];
    return dimension(t, 0);
  }
  t.count = k + 1;
  t.nodes[0].first_child = 1;
  t.nodes[0].children = static_cast<std::int16_t>(k);
  index_t stride = 1;
  for (int c = k - 1; c >= 0; --c) {
    if (sizes[c] < 1)
      detail::layout_error("static_dims: size " + std::to_string(sizes[c]) +
                           "; expected sizes of at least 1");
    // The same bound as dim_spec(dims): a wrapped product is a size-0 (or negative) type.
    if (stride > (index_t{1} << 62) / sizes[c])
      detail::layout_error("static_dims: the product of the sizes overflows (over 2^62)");
    t.nodes[c + 1].size = sizes[c];
    t.nodes[c + 1].stride = stride;
    t.nodes[c + 1].parent = 0;
    stride *= sizes[c];
  }
  t.nodes[0].size = stride;
  return dimension(t, 0);
}

/// Builds a dimension tree from PARRAY-style arguments: one argument is the root itself
/// (`[7 # A_0]`), several are the root's sub-dimensions (`[[n][n]][m]`).
inline dimension make_dimension(std::vector<dim_spec> const& specs) {
  if (specs.empty()) detail::layout_error("array type: no dimensions; expected at least one");
  detail::tree_builder b;
  if (specs.size() == 1) return dimension(b.build(specs.front()), 0);
  dims group{specs.front()};
  group.list = specs;
  return dimension(b.build(dim_spec(group)), 0);
}

}  // namespace strata
