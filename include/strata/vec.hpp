// n-dimensional extents and indices (Alpaka §3.4.3 `Vec`), usable in kernels everywhere and
// by every layer (buffers, layouts, shapes).
//
// Dimension D-1 is the fastest-varying one (row-major, like C arrays and mdspan's
// layout_right); on CUDA it maps to x.
#pragma once

#include <strata/config.hpp>

#include <cstddef>
#include <cstdint>

namespace strata {

/// The index type of every level: signed, so that differences and bounds checks are
/// plain arithmetic, and 64-bit, so that grid x block x elements cannot overflow quietly.
using index_t = std::int64_t;

template <std::size_t D>
struct vec {
  static_assert(D >= 1 && D <= 3, "Strata shapes have 1 to 3 dimensions");
  index_t v[D];

  STRATA_FN static constexpr std::size_t size() noexcept { return D; }
  STRATA_FN constexpr index_t& operator[](std::size_t i) noexcept { return v[i]; }
  STRATA_FN constexpr index_t operator[](std::size_t i) const noexcept { return v[i]; }

  /// Number of points in the box [0, *this).
  STRATA_FN constexpr index_t product() const noexcept {
    index_t p = 1;
    for (std::size_t i = 0; i < D; ++i) p *= v[i];
    return p;
  }

  /// A 1-D index reads as a plain integer: `if (self.global_index() < n)`.
  STRATA_FN constexpr operator index_t() const noexcept requires(D == 1) { return v[0]; }

  STRATA_FN static constexpr vec fill(index_t x) noexcept {
    vec r{};
    for (std::size_t i = 0; i < D; ++i) r.v[i] = x;
    return r;
  }

  STRATA_FN friend constexpr bool operator==(vec const& a, vec const& b) noexcept {
    for (std::size_t i = 0; i < D; ++i)
      if (a.v[i] != b.v[i]) return false;
    return true;
  }
  STRATA_FN friend constexpr vec operator+(vec a, vec const& b) noexcept {
    for (std::size_t i = 0; i < D; ++i) a.v[i] += b.v[i];
    return a;
  }
  STRATA_FN friend constexpr vec operator-(vec a, vec const& b) noexcept {
    for (std::size_t i = 0; i < D; ++i) a.v[i] -= b.v[i];
    return a;
  }
  /// Element-wise product (index times extent).
  STRATA_FN friend constexpr vec operator*(vec a, vec const& b) noexcept {
    for (std::size_t i = 0; i < D; ++i) a.v[i] *= b.v[i];
    return a;
  }
};

template <class... I>
vec(I...) -> vec<sizeof...(I)>;

/// Row-major linear index of `idx` in the box [0, extent) (Alpaka's mapIdx<1>).
template <std::size_t D>
STRATA_FN constexpr index_t linearize(vec<D> const& idx, vec<D> const& extent) noexcept {
  index_t lin = idx[0];
  for (std::size_t i = 1; i < D; ++i) lin = lin * extent[i] + idx[i];
  return lin;
}

/// Inverse of `linearize`.
template <std::size_t D>
STRATA_FN constexpr vec<D> delinearize(index_t lin, vec<D> const& extent) noexcept {
  vec<D> idx{};
  for (std::size_t i = D; i-- > 1;) {
    idx[i] = lin % extent[i];
    lin /= extent[i];
  }
  idx[0] = lin;
  return idx;
}

/// The integers [first, last) as a range for `for (auto i : range)` that compilers
/// vectorize like a counted loop.
struct index_range {
  index_t first = 0;
  index_t last = 0;

  struct iterator {
    index_t i;
    STRATA_FN constexpr index_t operator*() const noexcept { return i; }
    STRATA_FN constexpr iterator& operator++() noexcept {
      ++i;
      return *this;
    }
    STRATA_FN friend constexpr bool operator!=(iterator a, iterator b) noexcept {
      return a.i != b.i;
    }
    STRATA_FN friend constexpr bool operator==(iterator a, iterator b) noexcept {
      return a.i == b.i;
    }
  };
  STRATA_FN constexpr iterator begin() const noexcept { return {first}; }
  STRATA_FN constexpr iterator end() const noexcept { return {last < first ? first : last}; }
  STRATA_FN constexpr index_t size() const noexcept { return last > first ? last - first : 0; }
};

/// The points of the box [first, first + extent) in row-major order.
template <std::size_t D>
struct box_range {
  vec<D> first;
  vec<D> extent;

  struct iterator {
    vec<D> first;
    vec<D> extent;
    index_t lin;
    STRATA_FN constexpr vec<D> operator*() const noexcept {
      return first + delinearize(lin, extent);
    }
    STRATA_FN constexpr iterator& operator++() noexcept {
      ++lin;
      return *this;
    }
    STRATA_FN friend constexpr bool operator!=(iterator const& a, iterator const& b) noexcept {
      return a.lin != b.lin;
    }
  };
  STRATA_FN constexpr iterator begin() const noexcept { return {first, extent, 0}; }
  STRATA_FN constexpr iterator end() const noexcept { return {first, extent, extent.product()}; }
  STRATA_FN constexpr index_t size() const noexcept { return extent.product(); }
};

/// `count` integers first, first + stride, ...: a GPU thread's elements in grid-stride
/// order (domain.hpp).
struct strided_range {
  index_t first = 0;
  index_t count = 0;
  index_t stride = 1;

  struct iterator {
    index_t i;
    index_t stride;
    STRATA_FN constexpr index_t operator*() const noexcept { return i; }
    STRATA_FN constexpr iterator& operator++() noexcept {
      i += stride;
      return *this;
    }
    STRATA_FN friend constexpr bool operator!=(iterator a, iterator b) noexcept {
      return a.i != b.i;
    }
    STRATA_FN friend constexpr bool operator==(iterator a, iterator b) noexcept {
      return a.i == b.i;
    }
  };
  STRATA_FN constexpr iterator begin() const noexcept { return {first, stride}; }
  STRATA_FN constexpr iterator end() const noexcept {
    return {first + (count > 0 ? count : 0) * stride, stride};
  }
  STRATA_FN constexpr index_t size() const noexcept { return count > 0 ? count : 0; }
};

/// The points first + k * stride for k in the box [0, count), k in row-major order.
template <std::size_t D>
struct strided_box_range {
  vec<D> first;
  vec<D> count;
  vec<D> stride;

  struct iterator {
    vec<D> first;
    vec<D> count;
    vec<D> stride;
    index_t lin;
    STRATA_FN constexpr vec<D> operator*() const noexcept {
      return first + delinearize(lin, count) * stride;
    }
    STRATA_FN constexpr iterator& operator++() noexcept {
      ++lin;
      return *this;
    }
    STRATA_FN friend constexpr bool operator!=(iterator const& a, iterator const& b) noexcept {
      return a.lin != b.lin;
    }
  };
  STRATA_FN constexpr iterator begin() const noexcept { return {first, count, stride, 0}; }
  STRATA_FN constexpr iterator end() const noexcept {
    return {first, count, stride, count.product()};
  }
  STRATA_FN constexpr index_t size() const noexcept { return count.product(); }
};

}  // namespace strata
