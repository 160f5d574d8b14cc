// Array types (PARRAY §1.3, §2): element type + memory space + dimension tree, and views
// = pointer + array type. `array_type<float, pinned_space>{dims{n, n}, m}` is PARRAY's
// `parray pinned float [[n][n]][m] A`; `A[0][1]` is `A_0_1`; `A(i)` and `A[0](i)` are the
// offsets `$A[i]` and `$A_0[i]`.
//
// The type is also an mdspan-style mapping: `operator()` maps indices to offsets, and
// `required_span_size`, `is_unique`, `is_exhaustive`, `is_strided`, `stride` describe it.
// Extents are values; a `constexpr` type folds its offsets at compile time.
#pragma once

#include <strata/layout/contiguity.hpp>
#include <strata/layout/spec.hpp>
#include <strata/memory/allocate.hpp>
#include <strata/memory/ptr.hpp>
#include <strata/memory/space.hpp>

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace strata {

namespace detail {

/// Whether a strided form gives every index its own offset: sorted by stride, each axis
/// must step over everything the smaller ones reach.
inline bool unique_by_strides(linear_form f) {
  std::sort(f.axes, f.axes + f.count,
            [](axis const& a, axis const& b) { return a.stride < b.stride; });
  index_t reach = 0;
  for (int a = 0; a < f.count; ++a) {
    if (f.axes[a].stride <= reach) return false;
    reach += (f.axes[a].extent - 1) * f.axes[a].stride;
  }
  return true;
}

/// Whether the n offsets at(0) .. at(n - 1), all in [lo, hi], are distinct: marked in a
/// bitmap over [lo, hi] when that span is dense (under 8 slots per offset), else sorted. A
/// sparse type (4 offsets 2^40 apart) would otherwise need a bitmap of its whole span.
template <class At>
bool distinct_offsets(index_t lo, index_t hi, index_t n, At const& at) {
  // Unsigned: hi - lo may not fit index_t (offsets of a func can be anywhere).
  auto const last = static_cast<std::size_t>(hi) - static_cast<std::size_t>(lo);
  if (last / 8 < static_cast<std::size_t>(n)) {
    std::vector<unsigned char> seen(last + 1, 0);
    for (index_t k = 0; k < n; ++k) {
      auto& s = seen[static_cast<std::size_t>(at(k)) - static_cast<std::size_t>(lo)];
      if (s) return false;
      s = 1;
    }
    return true;
  }
  std::vector<index_t> offs(static_cast<std::size_t>(n));
  for (index_t k = 0; k < n; ++k) offs[static_cast<std::size_t>(k)] = at(k);
  std::sort(offs.begin(), offs.end());
  return std::adjacent_find(offs.begin(), offs.end()) == offs.end();
}

/// Whether every index of d has its own offset (by strides, else by its offsets).
inline bool unique_offsets(dimension const& d) {
  auto f = linear(d);
  if (f.ok && unique_by_strides(f)) return true;
  auto [lo, hi] = offset_range(d);
  return distinct_offsets(lo, hi, d.size(), [&](index_t i) { return d(i); });
}

}  // namespace detail

template <class T, memory_space Space>
class array_view;

template <class T, memory_space Space = host_space>
class array_type {
 public:
  using element_type = T;  // PARRAY `elm`
  using elm = T;
  using space = Space;  // PARRAY's memory type (`mtt`)
  using index_type = index_t;

  /// PARRAY's bracket notation as arguments (see spec.hpp).
  array_type(std::initializer_list<dim_spec> specs)
      : root_(make_dimension(std::vector<dim_spec>(specs))) {}
  /// The same from a list built at run time.
  explicit array_type(std::vector<dim_spec> const& specs) : root_(make_dimension(specs)) {}
  STRATA_FN constexpr explicit array_type(dimension root) : root_(root) {}
  /// The same dimension tree in another space or element type.
  template <class U, memory_space S>
  STRATA_FN constexpr explicit array_type(array_type<U, S> const& other) : root_(other.root()) {}

  STRATA_FN constexpr dimension const& root() const { return root_; }
  STRATA_FN constexpr operator dimension const&() const { return root_; }  // NOLINT
  STRATA_FN constexpr index_t size() const { return root_.size(); }
  STRATA_FN constexpr int ndim() const { return root_.ndim(); }
  STRATA_FN constexpr dimension operator[](int k) const { return root_[k]; }
  template <class... I>
  STRATA_FN constexpr index_t operator()(I... i) const {
    return root_(static_cast<index_t>(i)...);
  }

  // mdspan vocabulary ([mdspan.layout.reqmts]): the rank is the number of top-level
  // dimensions (1 for a type without sub-dimensions).
  STRATA_FN constexpr int rank() const { return ndim() == 0 ? 1 : ndim(); }
  STRATA_FN constexpr index_t extent(int r) const { return ndim() == 0 ? size() : root_[r].size(); }
  /// One past the largest offset (offsets of a type with displacements may not start at 0).
  constexpr index_t required_span_size() const {
    auto [lo, hi] = offset_range();
    (void)lo;
    return hi + 1;
  }
  /// Whether every index has its own offset.
  bool is_unique() const { return detail::unique_offsets(root_); }
  /// Whether the offsets are exactly [0, size): unique and without holes.
  bool is_exhaustive() const {
    auto [lo, hi] = offset_range();
    return lo == 0 && hi + 1 == size() && is_unique();
  }
  /// Whether the whole mapping is strided: for every rank r one step s_r such that
  /// `(*this)(i + e_r) - (*this)(i) == s_r` for every index i (mdspan's is_strided). A
  /// chain on the root (`[[3][2] # dim(5)]`) can make each sub-dimension regular on its own
  /// while the mapping is not; the whole mapping is what decides.
  constexpr bool is_strided() const { return whole_strides().ok; }
  /// The step of rank r (see is_strided); 0 when the mapping is not strided.
  constexpr index_t stride(int r) const {
    auto w = whole_strides();
    return w.ok ? w.form.axes[r].stride : 0;
  }

  /// The mapping as base + sum of i_r * s_r over the ranks, each s_r taken from the
  /// mapping itself (m(e_r) - m(0)), and whether that reproduces every offset: checked
  /// against the root's strided form axis by axis where it has one, else offset by offset.
  struct rank_form {
    bool ok = false;
    linear_form form;  // one axis per rank, in rank order, even when not ok
  };
  constexpr rank_form whole_strides() const {
    rank_form w;
    int const n = rank();
    index_t const m0 = root_(index_t{0});
    w.form.ok = true;
    w.form.base = m0;
    w.form.count = n;
    index_t weight = size();
    for (int r = 0; r < n; ++r) {
      index_t const e = extent(r);
      weight /= e;
      w.form.axes[r] = {e, e > 1 ? root_(weight) - m0 : 0};
    }
    if (size() == 1) {
      w.ok = true;
      return w;
    }
    linear_form const f = linear(root_);
    linear_form g = w.form;  // without ranks of extent 1 (any stride fits them)
    g.count = 0;
    for (int r = 0; r < n; ++r)
      if (w.form.axes[r].extent > 1) g.axes[g.count++] = w.form.axes[r];
    if (f.ok) {
      copy_plan const p = plan_copy(f, g);
      if (p.ok) {
        w.ok = p.src_base == p.dst_base;
        for (int a = 0; a < p.count && w.ok; ++a) w.ok = p.axes[a].src == p.axes[a].dst;
        return w;
      }
    }
    for (index_t k = 0; k < size(); ++k) {
      index_t rest = k, expect = m0;
      for (int r = n - 1; r >= 0; --r) {
        expect += rest % w.form.axes[r].extent * w.form.axes[r].stride;
        rest /= w.form.axes[r].extent;
      }
      if (root_(k) != expect) return w;
    }
    w.ok = true;
    return w;
  }

  /// Smallest and largest offset.
  constexpr std::pair<index_t, index_t> offset_range() const { return strata::offset_range(root_); }

  /// A view of the data at `p` laid out by this type (PARRAY's `A(x)` in copy commands).
  array_view<T, Space> on(ptr<T, Space> p) const { return array_view<T, Space>(p, *this); }
  array_view<T const, Space> on(ptr<T const, Space> p) const {
    return array_view<T const, Space>(p, *this);
  }
  /// Host memory Strata did not allocate (a vector, the stack).
  array_view<T, Space> on(T* p) const requires(Space::host_accessible) {
    return on(ptr<T, Space>(p, 0));
  }
  array_view<T const, Space> on(T const* p) const requires(Space::host_accessible) {
    return on(ptr<T const, Space>(p, 0));
  }

 private:
  dimension root_;
};

/// A pointer and the array type of the data it points at. Element access is checked in
/// builds without NDEBUG (or with STRATA_DEBUG), like `view`.
template <class T, memory_space Space>
class array_view {
 public:
  using element_type = T;
  using space = Space;
  using type = array_type<std::remove_const_t<T>, Space>;

  constexpr array_view() = default;
  STRATA_FN constexpr array_view(ptr<T, Space> p, type const& t) : data_(p), type_(t) {}

  STRATA_FN constexpr ptr<T, Space> data() const { return data_; }
  STRATA_FN constexpr type const& layout() const { return type_; }
  STRATA_FN constexpr index_t size() const { return type_.size(); }

  /// The element at an index (flat, per sub-dimension, or per leaf).
  template <class... I>
  requires(sizeof...(I) >= 1 && accessible_here_v<Space>) STRATA_FN constexpr T& operator()(
      I... i) const {
    index_t o = type_(i...);
    return data_.get()[o];
  }

 private:
  ptr<T, Space> data_;
  type type_{dimension{}};
};

/// PARRAY `create A a` (§3.1): memory in A's space at `where` for every offset of A (its
/// required span, which a window or transposed type may make larger than its size), so
/// the user need not compute it. Release it with deallocate.
template <class T, memory_space Space>
ptr<T, Space> allocate(place const& where, array_type<T, Space> const& type) {
  auto const [lo, hi] = type.offset_range();
  if (lo < 0)
    throw invalid_argument("allocate: the array type has offsets from " + std::to_string(lo) +
                           "; expected offsets from 0 (a displacement below 0 refers to memory "
                           "before the allocation)");
  return allocate<T, Space>(where, static_cast<std::size_t>(hi + 1));
}

}  // namespace strata
