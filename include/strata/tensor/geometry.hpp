// How a tensor is cut (Ripple §4.1, Listing 1): a global box of cells, split into
// partitions per dimension (each on one place) and each partition into sub-partitions
// (blocks); every block is stored with `padding` cells of halo around it. Splits may be
// uneven, or follow per-partition weights (the hybrid stencil splits by device speed).
#pragma once

#include <strata/error.hpp>
#include <strata/task/partitioned.hpp>
#include <strata/vec.hpp>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata {

/// What a tensor is: its global extent, partitions and sub-partitions per dimension, the
/// padding (halo) width, and optional per-partition weights per dimension (empty: an even
/// split, the first `extent % parts` parts one cell larger). Dimension N-1 is contiguous
/// in memory (row-major, as Strata's views).
template <std::size_t N>
struct tensor_spec {
  vec<N> extent{};
  std::array<std::size_t, N> partitions = ones();
  std::array<std::size_t, N> sub_partitions = ones();
  index_t padding = 0;
  std::array<std::vector<double>, N> weights{};

  static constexpr std::array<std::size_t, N> ones() {
    std::array<std::size_t, N> a{};
    for (auto& x : a) x = 1;
    return a;
  }
};

namespace tensor_detail {

/// The block grid of a tensor: where each block starts and ends in every dimension.
template <std::size_t N>
struct geometry {
  vec<N> extent{};
  index_t padding = 0;
  std::array<std::size_t, N> parts{};        // partitions per dimension
  std::array<std::size_t, N> subs{};         // blocks per partition per dimension
  vec<N> blocks{};                           // blocks per dimension
  std::array<std::vector<index_t>, N> cuts;  // blocks[d] + 1 boundaries per dimension

  std::size_t block_count() const noexcept { return static_cast<std::size_t>(blocks.product()); }
  vec<N> coord(std::size_t b) const noexcept {
    return delinearize(static_cast<index_t>(b), blocks);
  }
  std::size_t linear(vec<N> const& c) const noexcept {
    return static_cast<std::size_t>(linearize(c, blocks));
  }
  vec<N> origin(std::size_t b) const noexcept {
    auto c = coord(b);
    vec<N> o{};
    for (std::size_t d = 0; d < N; ++d) o[d] = cuts[d][static_cast<std::size_t>(c[d])];
    return o;
  }
  vec<N> block_extent(std::size_t b) const noexcept {
    auto c = coord(b);
    vec<N> e{};
    for (std::size_t d = 0; d < N; ++d) {
      auto k = static_cast<std::size_t>(c[d]);
      e[d] = cuts[d][k + 1] - cuts[d][k];
    }
    return e;
  }
  /// The partition (place slot) a block belongs to: its partition coordinates, linearized.
  std::size_t partition_of(std::size_t b) const noexcept {
    auto c = coord(b);
    vec<N> pc{}, pe{};
    for (std::size_t d = 0; d < N; ++d) {
      pc[d] = c[d] / static_cast<index_t>(subs[d]);
      pe[d] = static_cast<index_t>(parts[d]);
    }
    return static_cast<std::size_t>(linearize(pc, pe));
  }
  std::size_t partition_count() const noexcept {
    std::size_t n = 1;
    for (auto p : parts) n *= p;
    return n;
  }
  /// The block holding global cell `i` (which must be inside the extent).
  std::size_t block_of(vec<N> const& i) const {
    vec<N> c{};
    for (std::size_t d = 0; d < N; ++d) {
      if (i[d] < 0 || i[d] >= extent[d])
        throw out_of_range("tensor: index " + std::to_string(i[d]) + " in dimension " +
                           std::to_string(d) + " is outside [0, " + std::to_string(extent[d]) +
                           ")");
      auto const& cut = cuts[d];
      std::size_t lo = 0, hi = cut.size() - 1;  // cut[lo] <= i < cut[hi]
      while (hi - lo > 1) {
        auto mid = (lo + hi) / 2;
        (cut[mid] <= i[d] ? lo : hi) = mid;
      }
      c[d] = static_cast<index_t>(lo);
    }
    return linear(c);
  }
  /// Same cells in the same blocks (padding and places may differ): split nodes over two
  /// tensors of one geometry depend block by block (Ripple §5.3.3).
  bool same_cells(geometry const& o) const noexcept {
    if (!(extent == o.extent)) return false;
    for (std::size_t d = 0; d < N; ++d)
      if (cuts[d] != o.cuts[d]) return false;
    return true;
  }
  /// The graph's identity of this block grid: no base address (tensors of one geometry
  /// touch the same block of cells), a hash of the cuts instead.
  partition_key key() const noexcept {
    std::uint64_t h = 1469598103934665603ull ^ N;
    auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
    mix(0x7e45'0000'0000'0000ull);  // tensors, apart from any hash of partitioned<T>
    for (std::size_t d = 0; d < N; ++d)
      for (auto c : cuts[d]) mix(static_cast<std::uint64_t>(c));
    return {nullptr, static_cast<std::size_t>(extent.product()), 0, block_count(), h};
  }
};

inline std::vector<index_t> even_cuts(index_t first, index_t length, std::size_t parts) {
  std::vector<index_t> cut(parts + 1);
  auto const p = static_cast<index_t>(parts);
  auto const base = length / p, extra = length % p;
  cut[0] = first;
  for (index_t k = 0; k < p; ++k)
    cut[static_cast<std::size_t>(k) + 1] = cut[k] + base + (k < extra);
  return cut;
}

inline std::vector<index_t> weighted_cuts(index_t length, std::vector<double> const& w,
                                          std::size_t dim) {
  double top = 0;
  for (auto x : w) {
    if (!(x > 0) || !std::isfinite(x))
      throw invalid_argument("tensor: weight " + std::to_string(x) + " in dimension " +
                             std::to_string(dim) + "; expected positive finite weights");
    top = std::max(top, x);
  }
  // Summed relative to the largest: weights near DBL_MAX would sum to infinity.
  double total = 0;
  for (auto x : w) total += x / top;
  auto const parts = w.size();
  std::vector<index_t> cut(parts + 1, 0);
  double acc = 0;
  for (std::size_t k = 1; k < parts; ++k) {
    acc += w[k - 1] / top;
    auto c = static_cast<index_t>(std::llround(static_cast<double>(length) * acc / total));
    // Every part keeps at least one cell.
    auto lo = cut[k - 1] + 1, hi = length - static_cast<index_t>(parts - k);
    cut[k] = c < lo ? lo : (c > hi ? hi : c);
  }
  cut[parts] = length;
  return cut;
}

template <std::size_t N>
geometry<N> make_geometry(tensor_spec<N> const& s) {
  static_assert(N >= 1 && N <= 3, "tensor: 1 to 3 dimensions");
  geometry<N> g;
  g.extent = s.extent;
  g.padding = s.padding;
  g.parts = s.partitions;
  g.subs = s.sub_partitions;
  if (s.padding < 0)
    throw invalid_argument("tensor: padding " + std::to_string(s.padding) +
                           "; expected 0 or more cells");
  // The cells with their padding must be countable: a product that wrapped made a tensor
  // of 0 cells that `fill` reported done (an outside probe).
  index_t count = 1;
  for (std::size_t d = 0; d < N; ++d) {
    index_t side = 0;
    if (s.extent[d] > 0 && (__builtin_add_overflow(s.extent[d], 2 * s.padding, &side) ||
                            __builtin_mul_overflow(count, side, &count)))
      throw invalid_argument(
          "tensor: the extent with its padding has more cells than a 64-bit "
          "index counts; expected fewer");
  }
  for (std::size_t d = 0; d < N; ++d) {
    auto const dim = std::to_string(d);
    if (s.extent[d] <= 0)
      throw invalid_argument("tensor: extent " + std::to_string(s.extent[d]) + " in dimension " +
                             dim + "; expected at least 1 cell");
    if (s.partitions[d] == 0 || s.sub_partitions[d] == 0)
      throw invalid_argument("tensor: 0 partitions or sub-partitions in dimension " + dim +
                             "; expected at least 1");
    // Compared without wrapping: counts near SIZE_MAX (an `n - 1` of 0) turned negative
    // or multiplied to 0 and passed (an outside probe: a crash in even_cuts).
    auto const cells = static_cast<std::size_t>(s.extent[d]);
    std::size_t blocks = 0;
    if (s.partitions[d] > cells || s.sub_partitions[d] > cells ||
        __builtin_mul_overflow(s.partitions[d], s.sub_partitions[d], &blocks) || blocks > cells)
      throw invalid_argument("tensor: " + std::to_string(s.partitions[d]) + " x " +
                             std::to_string(s.sub_partitions[d]) + " blocks in dimension " + dim +
                             " of " + std::to_string(s.extent[d]) +
                             " cells; expected at most one block per cell");
    if (static_cast<index_t>(blocks) > s.extent[d])
      throw invalid_argument("tensor: " + std::to_string(blocks) + " blocks in dimension " + dim +
                             " of " + std::to_string(s.extent[d]) +
                             " cells; expected at most one block per cell");
    std::vector<index_t> part_cuts;
    if (s.weights[d].empty()) {
      part_cuts = even_cuts(0, s.extent[d], s.partitions[d]);
    } else {
      if (s.weights[d].size() != s.partitions[d])
        throw invalid_argument("tensor: " + std::to_string(s.weights[d].size()) +
                               " weights in dimension " + dim + "; expected one per partition (" +
                               std::to_string(s.partitions[d]) + ")");
      part_cuts = weighted_cuts(s.extent[d], s.weights[d], d);
    }
    auto& cut = g.cuts[d];
    cut.assign(1, 0);
    for (std::size_t p = 0; p < s.partitions[d]; ++p) {
      auto len = part_cuts[p + 1] - part_cuts[p];
      if (len < static_cast<index_t>(s.sub_partitions[d]))
        throw invalid_argument("tensor: partition " + std::to_string(p) + " of dimension " + dim +
                               " has " + std::to_string(len) + " cells for " +
                               std::to_string(s.sub_partitions[d]) + " sub-partitions");
      auto sub = even_cuts(part_cuts[p], len, s.sub_partitions[d]);
      cut.insert(cut.end(), sub.begin() + 1, sub.end());
    }
    g.blocks[d] = static_cast<index_t>(blocks);
    for (std::size_t k = 0; k + 1 < cut.size(); ++k)
      if (cut[k + 1] - cut[k] < s.padding)
        throw invalid_argument("tensor: block " + std::to_string(k) + " of dimension " + dim +
                               " has " + std::to_string(cut[k + 1] - cut[k]) +
                               " cells, less than the padding (" + std::to_string(s.padding) +
                               "); expected padding <= every block's extent");
  }
  return g;
}

}  // namespace tensor_detail
}  // namespace strata
