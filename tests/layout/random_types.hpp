// A generator of random array types for property tests and the fuzz target: random
// trees, and types derived from them by leaf permutations (transposes), splits of a
// dimension into sub-dimensions, windows with displacements, cyclic displacements, user
// offset functions, and references of references. Choices come from a `chooser`: a
// seeded engine for tests, the fuzzer's bytes for the fuzz target.
#pragma once

#include <strata/layout/array_type.hpp>
#include <strata/layout/detail/copy_kernel.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace strata::test {

struct rng_chooser {
  std::mt19937_64 engine;
  explicit rng_chooser(std::uint64_t seed) : engine(seed) {}
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(engine); }
};

struct byte_chooser {
  std::uint8_t const* data;
  std::size_t size;
  std::size_t at = 0;
  int pick(int lo, int hi) {
    if (at >= size || hi <= lo) return lo;
    return lo + data[at++] % (hi - lo + 1);
  }
};

inline index_t reverse_offset(index_t i, void const* context) {
  return *static_cast<index_t const*>(context) - 1 - i;
}

template <class Chooser>
class type_generator {
 public:
  explicit type_generator(Chooser& c) : c_(c) {}

  /// A random tree of at most `budget` elements.
  dim_spec tree(int depth, index_t budget) {
    if (depth == 0 || budget < 4 || c_.pick(0, 2) == 0)
      return dim_spec(c_.pick(1, static_cast<int>(std::min<index_t>(budget, 6))));
    int n = c_.pick(1, 3);
    std::vector<dim_spec> kids;
    index_t used = 1;
    for (int k = 0; k < n; ++k) {
      kids.push_back(tree(depth - 1, std::max<index_t>(1, budget / used / (n - k))));
      used *= group_size(kids.back());
    }
    dims g{kids.front()};
    g.list = kids;
    return dim_spec(g);
  }

  array_type<int> base() { return array_type<int>(std::vector<dim_spec>{tree(3, 96)}); }

  /// A type with the same size as `t`, derived from it.
  array_type<int> derive(array_type<int> const& t, int depth = 2) {
    index_t const n = t.size();
    switch (c_.pick(0, depth > 0 ? 7 : 3)) {
      case 0:
        return t;
      case 1:
      case 2:
        return permute(t);
      case 3:
        return split(t);
      case 4:
        return window_of(t);
      case 5: {
        int d = c_.pick(0, static_cast<int>(n));
        return array_type<int>(
            std::vector<dim_spec>{n | disp(d) | cyclic(n) | derive(t, depth - 1).root()});
      }
      case 6: {
        contexts_.push_back(n);
        return array_type<int>(
            std::vector<dim_spec>{n | func{reverse_offset, &contexts_.back()} | t.root()});
      }
      default:
        return derive(derive(t, depth - 1), depth - 1);  // references of references
    }
  }

 private:
  static index_t group_size(dim_spec const& s) { return s.size(); }

  std::vector<dimension> leaves(dimension const& d) {
    int ids[max_dim_nodes] = {};
    int n = 0;
    d.collect_leaves(d.node(), ids, n);
    std::vector<dimension> out;
    for (int i = 0; i < n; ++i) out.emplace_back(d.tree(), ids[i]);
    return out;
  }

  // Reorders the leaves (a transpose when there are two), sometimes splitting one leaf
  // into two sub-dimensions that refer to it.
  array_type<int> permute(array_type<int> const& t) {
    auto l = leaves(t.root());
    if (l.size() > 10) return t;  // PARRAY names at most 10 sub-dimensions per group
    for (std::size_t i = l.size(); i > 1; --i)
      std::swap(l[i - 1], l[static_cast<std::size_t>(c_.pick(0, static_cast<int>(i - 1)))]);
    std::vector<dim_spec> specs;
    for (auto const& d : l) {
      index_t s = d.size();
      index_t a = divisor(s);
      if (a > 1 && a < s && c_.pick(0, 2) == 0)
        specs.push_back(dims{a, s / a} | d);
      else
        specs.push_back(dim_spec(d));
    }
    return array_type<int>(specs);
  }

  // [[a][b] # T]: the same offsets through a regular split and a reference.
  array_type<int> split(array_type<int> const& t) {
    index_t n = t.size(), a = divisor(n);
    return array_type<int>(std::vector<dim_spec>{dims{a, n / a} | t.root()});
  }

  // A window with displacements in a padded regular type with t's top-level sizes.
  array_type<int> window_of(array_type<int> const& t) {
    std::vector<index_t> sizes;
    if (t.ndim() == 0)
      sizes.push_back(t.size());
    else
      for (int k = 0; k < t.ndim(); ++k) sizes.push_back(t[k].size());
    std::vector<dim_spec> big;
    std::vector<index_t> off;
    for (index_t s : sizes) {
      index_t pad = c_.pick(0, 3);
      big.push_back(dim_spec(s + pad));
      off.push_back(c_.pick(0, static_cast<int>(pad)));
    }
    array_type<int> b(big);
    std::vector<dim_spec> w;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      dimension target = sizes.size() == 1 ? b.root() : b[static_cast<int>(k)];
      w.push_back(sizes[k] | disp(off[k]) | target);
    }
    return array_type<int>(w);
  }

  index_t divisor(index_t n) {
    std::vector<index_t> d;
    for (index_t a = 1; a <= n; ++a)
      if (n % a == 0) d.push_back(a);
    return d[static_cast<std::size_t>(c_.pick(0, static_cast<int>(d.size() - 1)))];
  }

  Chooser& c_;
  std::deque<index_t> contexts_;
};

/// Offsets of `t` against its strided form and its `stp` against consecutive offsets.
inline std::optional<std::string> check_type(array_type<int> const& t) {
  auto f = linear(t.root());
  if (f.ok)
    for (index_t k = 0; k < t.size(); ++k) {
      index_t rest = k, o = f.base;
      for (int a = f.count - 1; a >= 0; --a) {
        o += rest % f.axes[a].extent * f.axes[a].stride;
        rest /= f.axes[a].extent;
      }
      if (o != t(k))
        return "strided form of " + to_string(t.root()) + " gives " + std::to_string(o) + " at " +
               std::to_string(k) + ", offset is " + std::to_string(t(k));
    }
  index_t step = t.size() > 1 ? t(1) - t(0) : 1;
  for (index_t k = 2; k < t.size(); ++k)
    if (t(k) - t(k - 1) != step) step = 0;
  if (step != stp(t.root()))
    return "stp of " + to_string(t.root()) + " is " + std::to_string(stp(t.root())) +
           ", consecutive offsets say " + std::to_string(step);
  return std::nullopt;
}

/// Checks one (dst, src) pair without a runtime: both types, and the host copy kernel
/// (the plan's runs and tiles, or the element fallback) against a naive loop. Returns a
/// description of the first mismatch, or nothing.
inline std::optional<std::string> check_pair(array_type<int> const& dst,
                                             array_type<int> const& src) {
  if (dst.size() != src.size()) return "generator: sizes differ";
  if (auto e = check_type(dst)) return e;
  if (auto e = check_type(src)) return e;
  if (!dst.is_unique()) return std::nullopt;  // the result would depend on the order
  auto [slo, shi] = src.offset_range();
  auto [dlo, dhi] = dst.offset_range();
  // Offsets may be negative (a derived type can start before its base's first element):
  // each buffer then starts at the lowest offset, and the base pointer lies inside it.
  index_t const sb = std::min<index_t>(slo, 0), db = std::min<index_t>(dlo, 0);
  std::vector<int> s(static_cast<std::size_t>(shi - sb + 1));
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<int>(i) * 7 + 1;
  std::vector<int> naive(static_cast<std::size_t>(dhi - db + 1), -1), got = naive;
  for (index_t k = 0; k < src.size(); ++k)
    naive[static_cast<std::size_t>(dst(k) - db)] = s[static_cast<std::size_t>(src(k) - sb)];
  auto plan = plan_copy(linear(dst.root()), linear(src.root()));
  auto* d = reinterpret_cast<std::byte*>(got.data() - db);
  auto const* sp = reinterpret_cast<std::byte const*>(s.data() - sb);
  if (plan.ok) {
    auto b = detail::make_byte_plan(plan, sizeof(int));
    detail::copy_items(b, d, sp, 0, b.items);
  } else {
    detail::copy_elements(dst.root(), src.root(), sizeof(int), 0, 0, d, sp, 0, dst.size());
  }
  if (got != naive)
    return "copy " + to_string(src.root()) + " -> " + to_string(dst.root()) + " differs from " +
           "the naive loop" + (plan.ok ? " (strided plan)" : " (element fallback)");
  return std::nullopt;
}

}  // namespace strata::test
