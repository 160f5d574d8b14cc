// Distributed array types (PARRAY §4.12-4.16, §5.5, Listings 40-41): how each dimension
// of an N-D array is dealt over a grid of a team's ranks (whole, block, cyclic,
// block-cyclic) and in which order a rank stores its elements. dist/array.hpp has the
// arrays of these types and `copy` between any two of them.
#pragma once

#include <strata/dist/runtime.hpp>
#include <strata/error.hpp>
#include <strata/vec.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace strata::dist {

/// How one dimension's indices are dealt to the processes along it.
struct distribution {
  enum class kind : std::uint8_t { whole, block, cyclic, block_cyclic };
  kind how = kind::whole;
  index_t block_size = 0;  // block_cyclic: indices per block

  static distribution whole() { return {kind::whole, 0}; }
  /// Contiguous blocks of ceil(n / P) indices (the last ones may be shorter or empty).
  static distribution block() { return {kind::block, 0}; }
  /// Index i on process i % P.
  static distribution cyclic() { return {kind::cyclic, 0}; }
  /// Blocks of b indices dealt round-robin: index i on process (i / b) % P.
  static distribution block_cyclic(index_t b) { return {kind::block_cyclic, b}; }
};

/// A distributed array type: the global extent, each dimension's distribution over
/// `grid[d]` processes (the team's first ranks form the grid row-major: rank = linear
/// index of its grid coordinates; ranks past the grid hold nothing, so a grid of one
/// process is an array on team rank 0 — what scatters start from and gathers end in),
/// and the order in which a rank stores its elements (`order[0]` outermost; identity by
/// default).
template <std::size_t N>
struct array_type {
  vec<N> extent{};
  std::array<distribution, N> dist{};
  std::array<int, N> grid = ones();
  std::array<std::size_t, N> order = identity();

  static constexpr std::array<int, N> ones() {
    std::array<int, N> a{};
    for (auto& x : a) x = 1;
    return a;
  }
  static constexpr std::array<std::size_t, N> identity() {
    std::array<std::size_t, N> a{};
    for (std::size_t d = 0; d < N; ++d) a[d] = d;
    return a;
  }

  /// The grid's size; saturates at INT_MAX (a grid that large fails `check`: no team is).
  int processes() const {
    long long p = 1;
    for (auto g : grid) {
      p *= g < 1 ? 0 : g;
      if (p > std::numeric_limits<int>::max()) return std::numeric_limits<int>::max();
    }
    return static_cast<int>(p);
  }
  /// Grid coordinates of team rank r.
  std::array<int, N> coord(int r) const {
    std::array<int, N> c{};
    for (std::size_t d = N; d-- > 0;) {
      c[d] = r % grid[d];
      r /= grid[d];
    }
    return c;
  }
  /// Indices of dimension d held by grid coordinate c, ascending.
  std::vector<index_t> owned(std::size_t d, int c) const {
    std::vector<index_t> out;
    index_t const n = extent[d], p = grid[d];
    switch (dist[d].how) {
      case distribution::kind::whole:
        for (index_t i = 0; i < n; ++i) out.push_back(i);
        break;
      case distribution::kind::block: {
        index_t const b = block_size(d), lo = std::min(n, c * b);
        for (index_t i = lo; i < lo + std::min(b, n - lo); ++i) out.push_back(i);
        break;
      }
      case distribution::kind::cyclic:
        for (index_t i = c; i<n; i = n - i> p ? i + p : n) out.push_back(i);
        break;
      case distribution::kind::block_cyclic: {
        index_t const b = cyclic_block(d);
        // Products that would overflow are past n anyway (b <= n): no wrap-around.
        index_t first = 0, step = 0;
        if (__builtin_mul_overflow(index_t{c}, b, &first)) first = n;
        if (__builtin_mul_overflow(b, p, &step)) step = n;
        for (index_t s = first; s < n; s = (n - s > step) ? s + step : n)
          for (index_t i = s; i < std::min(n, s + b); ++i) out.push_back(i);
        break;
      }
    }
    return out;
  }
  /// A block distribution's block along d: the extent over the grid, rounded up (written
  /// so that it cannot overflow: (n + p - 1) / p did for extents near INT64_MAX).
  index_t block_size(std::size_t d) const {
    index_t const n = extent[d], p = grid[d];
    return n / p + (n % p != 0);
  }
  /// A block-cyclic block, at most the extent: a larger block holds the same indices
  /// (all on grid coordinate 0) and keeps b * p within index_t.
  index_t cyclic_block(std::size_t d) const { return std::min(dist[d].block_size, extent[d]); }
  /// The process coordinate along d that holds index i, and i's local index there.
  int owner(std::size_t d, index_t i) const {
    index_t const p = grid[d];
    switch (dist[d].how) {
      case distribution::kind::whole:
        return 0;
      case distribution::kind::block:
        return static_cast<int>(i / block_size(d));
      case distribution::kind::cyclic:
        return static_cast<int>(i % p);
      case distribution::kind::block_cyclic:
        return static_cast<int>((i / cyclic_block(d)) % p);
    }
    return 0;
  }
  index_t local_index(std::size_t d, index_t i) const {
    index_t const p = grid[d];
    switch (dist[d].how) {
      case distribution::kind::whole:
        return i;
      case distribution::kind::block:
        return i - static_cast<index_t>(owner(d, i)) * block_size(d);
      case distribution::kind::cyclic:
        return i / p;
      case distribution::kind::block_cyclic: {
        index_t const b = cyclic_block(d);
        return i / b / p * b + i % b;
      }
    }
    return i;
  }
  /// The team rank holding global element i (invalid_argument outside the extent).
  int owner_rank(vec<N> const& i) const {
    for (std::size_t d = 0; d < N; ++d)
      if (i[d] < 0 || i[d] >= extent[d])
        throw invalid_argument("dist::array_type::owner_rank: index " + std::to_string(i[d]) +
                               " in dimension " + std::to_string(d) + " is outside the extent " +
                               std::to_string(extent[d]));
    int r = 0;
    for (std::size_t d = 0; d < N; ++d) r = r * grid[d] + owner(d, i[d]);
    return r;
  }
  /// Whether team rank r is part of the grid (holds elements).
  bool holds_any(int r) const { return r < processes(); }
  /// Indices of dimension d held by team rank r (empty off the grid).
  std::vector<index_t> owned_by_rank(std::size_t d, int r) const {
    if (!holds_any(r)) return {};
    return owned(d, coord(r)[d]);
  }
  /// Team rank r's local extent per dimension (in global dimension order).
  vec<N> local_extent(int r) const {
    if (!holds_any(r)) return vec<N>{};
    auto const c = coord(r);
    vec<N> e{};
    for (std::size_t d = 0; d < N; ++d) e[d] = owned_count(d, c[d]);
    return e;
  }
  /// How many indices of dimension d grid coordinate c holds: owned(d, c).size() without
  /// the list (an outside probe: summa at n = 2^31 - 1 built 16 GiB lists to count them).
  index_t owned_count(std::size_t d, int c) const {
    index_t const n = extent[d], p = grid[d];
    switch (dist[d].how) {
      case distribution::kind::whole:
        return n;
      case distribution::kind::block: {
        index_t const b = block_size(d);
        index_t const lo = std::min(n, c * b);
        return std::min(b, n - lo);
      }
      case distribution::kind::cyclic:
        return c < n ? (n - c) / p + ((n - c) % p != 0) : 0;
      case distribution::kind::block_cyclic: {
        index_t const b = cyclic_block(d);
        index_t const whole = n / b, rest = n % b;  // full blocks, cells of the last one
        index_t k = whole / p + (c < whole % p);    // full blocks on c
        index_t cells = k * b;
        if (rest > 0 && whole % p == c) cells += rest;  // the short last block is c's
        return cells;
      }
    }
    return 0;
  }
  /// Strides of rank r's local storage per global dimension (row-major in `order`).
  vec<N> local_strides(int r) const {
    auto const e = local_extent(r);
    vec<N> s{};
    index_t step = 1;
    for (std::size_t k = N; k-- > 0;) {
      s[order[k]] = step;
      step *= e[order[k]];
    }
    return s;
  }

  /// A hash of everything that places elements (extent, distributions, grid, order), for
  /// checking that the members of a collective passed the same type.
  std::uint64_t fingerprint() const noexcept {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields' values
    auto mix = [&h](std::uint64_t v) {
      for (int k = 0; k < 8; ++k) {
        h ^= (v >> (8 * k)) & 0xff;
        h *= 1099511628211ull;
      }
    };
    mix(N);
    for (std::size_t d = 0; d < N; ++d) {
      mix(static_cast<std::uint64_t>(extent[d]));
      mix(static_cast<std::uint64_t>(dist[d].how));
      mix(static_cast<std::uint64_t>(dist[d].block_size));
      mix(static_cast<std::uint64_t>(grid[d]));
      mix(order[d]);
    }
    return h;
  }

  /// Throws invalid_argument unless the type is well formed for a team of `size` ranks.
  void check(int size, char const* operation) const {
    auto fail = [&](std::string const& what) {
      throw invalid_argument(std::string(operation) + ": " + what);
    };
    index_t cells = 1;
    for (std::size_t d = 0; d < N; ++d)
      if (extent[d] >= 1 && __builtin_mul_overflow(cells, extent[d], &cells))
        fail("the extent's product overflows a 64-bit index; expected fewer elements");
    if (processes() > size)
      fail("the process grid has " +
           (processes() == std::numeric_limits<int>::max() ? std::string("too many")
                                                           : std::to_string(processes())) +
           " processes; expected at most the team size " + std::to_string(size));
    std::array<bool, N> seen{};
    for (std::size_t d = 0; d < N; ++d) {
      if (extent[d] < 1)
        fail("extent " + std::to_string(extent[d]) + " in dimension " + std::to_string(d) +
             "; expected at least 1");
      if (grid[d] < 1)
        fail("grid " + std::to_string(grid[d]) + " in dimension " + std::to_string(d));
      if (dist[d].how == distribution::kind::whole && grid[d] != 1)
        fail("dimension " + std::to_string(d) + " is whole but spread over " +
             std::to_string(grid[d]) + " processes; expected grid 1 for a whole dimension");
      if (dist[d].how == distribution::kind::block_cyclic && dist[d].block_size < 1)
        fail("block-cyclic block of " + std::to_string(dist[d].block_size) + " in dimension " +
             std::to_string(d) + "; expected at least 1");
      if (order[d] >= N || seen[order[d]])
        fail("the storage order is not a permutation of the dimensions");
      seen[order[d]] = true;
    }
  }
};

}  // namespace strata::dist
