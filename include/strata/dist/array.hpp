// Distributed array types (PARRAY §4.12-4.16, §5.5, Listings 40-41; issue 18 item 5): an
// N-D array whose dimensions are distributed over a grid of a team's ranks — each
// dimension whole, in blocks, cyclic or block-cyclic (ScaLAPACK's 2-D block-cyclic for
// SUMMA) — with each rank's elements stored row-major in a chosen order of the dimensions
// (PARRAY's dimension trees: storing the dimensions swapped is how a distributed type
// describes a transposed array). `copy` between two distributed types over the same
// global index space is the one redistribution operation: scatter, gather, all-to-all and
// mix-to-mix are all copies between types (§4.13-4.16), done as one all-to-all-v of the
// per-pair element sets, packed and unpacked in tiles so that a transpose's strided side
// stays in cache (no separate local transpose: Listing 46's "local adjustment").
//
//   using dist::distribution;
//   dist::array_type<2> rows{.extent = {n, n}, .dist = {distribution::block(),
//   distribution::whole()},
//                            .grid = {p, 1}};
//   auto cols = rows;  // the same elements, distributed by column and stored transposed
//   cols.dist = {distribution::whole(), distribution::block()};
//   cols.grid = {1, p};
//   cols.order = {1, 0};
//   dist::array<double, 2> a(team, rows), t(team, cols);
//   dist::copy(t, a).wait();  // t's local memory: a's rows of the transpose
#pragma once

#include <strata/dist/collectives.hpp>
#include <strata/dist/direct.hpp>
#include <strata/dist/runtime.hpp>
#include <strata/error.hpp>
#include <strata/exec.hpp>
#include <strata/runtime.hpp>
#include <strata/vec.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
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

  int processes() const {
    int p = 1;
    for (auto g : grid) p *= g;
    return p;
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
        index_t const b = (n + p - 1) / p;
        for (index_t i = c * b; i < std::min(n, (c + 1) * b); ++i) out.push_back(i);
        break;
      }
      case distribution::kind::cyclic:
        for (index_t i = c; i < n; i += p) out.push_back(i);
        break;
      case distribution::kind::block_cyclic: {
        index_t const b = dist[d].block_size;
        for (index_t s = c * b; s < n; s += b * p)
          for (index_t i = s; i < std::min(n, s + b); ++i) out.push_back(i);
        break;
      }
    }
    return out;
  }
  /// The process coordinate along d that holds index i, and i's local index there.
  int owner(std::size_t d, index_t i) const {
    index_t const p = grid[d];
    switch (dist[d].how) {
      case distribution::kind::whole:
        return 0;
      case distribution::kind::block:
        return static_cast<int>(i / ((extent[d] + p - 1) / p));
      case distribution::kind::cyclic:
        return static_cast<int>(i % p);
      case distribution::kind::block_cyclic:
        return static_cast<int>((i / dist[d].block_size) % p);
    }
    return 0;
  }
  index_t local_index(std::size_t d, index_t i) const {
    index_t const p = grid[d];
    switch (dist[d].how) {
      case distribution::kind::whole:
        return i;
      case distribution::kind::block:
        return i - static_cast<index_t>(owner(d, i)) * ((extent[d] + p - 1) / p);
      case distribution::kind::cyclic:
        return i / p;
      case distribution::kind::block_cyclic: {
        index_t const b = dist[d].block_size;
        return i / (b * p) * b + i % b;
      }
    }
    return i;
  }
  /// The team rank holding global element i.
  int owner_rank(vec<N> const& i) const {
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
    for (std::size_t d = 0; d < N; ++d)
      e[d] = static_cast<index_t>(owned(d, c[d]).size());  // small types; a count would do
    return e;
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

  /// Throws invalid_argument unless the type is well formed for a team of `size` ranks.
  void check(int size, char const* operation) const {
    auto fail = [&](std::string const& what) {
      throw invalid_argument(std::string(operation) + ": " + what);
    };
    if (processes() > size)
      fail("the process grid has " + std::to_string(processes()) + " processes; expected at " +
           "most the team size " + std::to_string(size));
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

template <class T, std::size_t N>
class array;

namespace detail {

/// A copy's send and receive buffers.
template <class T>
struct copy_staging {
  std::vector<T> out, in;
};

template <std::size_t N>
struct pair_set;

/// One copy between two distributed arrays on this rank: per peer the elements sent and
/// received, where they sit in the staging buffers, and the three moves.
template <class T, std::size_t N>
struct copy_plan {
  std::vector<pair_set<N>> sends, recvs;
  std::vector<std::size_t> sdispl, rdispl;
  std::shared_ptr<copy_staging<T>> staging;
  T const* from;
  T* to;
  int me;
  // The direct protocol (every member on this node, dist/direct.hpp): per peer the
  // elements this rank takes, as offsets in that peer's storage, the source type (its
  // strides per rank), the team, and the peers' source blocks once gathered (three
  // words each: block_handle's address, fd, serial).
  std::vector<pair_set<N>> remote;
  array_type<N> const* src_type = nullptr;
  team members;
  std::vector<std::uint64_t> handles;
  // Per peer, its block as mapped by pull() (null where it was read with
  // process_vm_readv); each pull task writes its own slot.
  mutable std::vector<std::shared_ptr<void const>> mapped;

  block_handle handle_of(index_t q) const {
    auto const uq = static_cast<std::size_t>(q);
    return {handles[3 * uq], static_cast<std::int64_t>(handles[3 * uq + 1]), handles[3 * uq + 2]};
  }
  void move_own() const;
  void pack(index_t q) const;
  void unpack(index_t q) const;
  void pull(index_t q) const;
};

/// Ascending intersection of two ascending index lists.
inline std::vector<index_t> intersect(std::vector<index_t> const& a,
                                      std::vector<index_t> const& b) {
  std::vector<index_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

/// The elements one rank sends another in a copy: per dimension the global indices both
/// hold, and each one's offset contribution in the rank's local storage. The staging
/// buffer holds a pair's elements row-major in the product of the lists (packed_like), so
/// what one packs the other unpacks, whatever order each side visits them in.
template <std::size_t N>
struct pair_set {
  std::array<std::vector<index_t>, N> offsets;  // local offset contribution per position
  std::size_t count() const {
    std::size_t c = 1;
    for (auto const& o : offsets) c *= o.size();
    return c;
  }
};

template <std::size_t N>
pair_set<N> make_pair_set(std::array<std::vector<index_t>, N> const& indices,
                          array_type<N> const& type, int rank) {
  pair_set<N> s;
  auto const stride = type.local_strides(rank);
  for (std::size_t d = 0; d < N; ++d) {
    s.offsets[d].reserve(indices[d].size());
    for (auto i : indices[d]) s.offsets[d].push_back(type.local_index(d, i) * stride[d]);
  }
  return s;
}

/// The constant step of a list of offsets, or 0 when the steps differ (block-cyclic
/// lists jump between blocks; block and cyclic ones are arithmetic).
inline index_t common_step(std::vector<index_t> const& o) {
  if (o.size() < 2) return 1;
  index_t const step = o[1] - o[0];
  for (std::size_t k = 2; k < o.size(); ++k)
    if (o[k] - o[k - 1] != step) return 0;
  return step;
}

/// One plane of a copy_set (below): the last two dimensions, in tiles.
template <class T>
struct plane_copy {
  std::vector<index_t> const &ar, &ac, &br, &bc;  // offsets of the rows and columns
  index_t sar, sac, sbr, sbc;                     // their steps (0: not arithmetic)

  // A tile is at most tile x tile elements: a buffer of 16 KiB for elements of up to 64
  // bytes (32 x 32 complex doubles), which stays in L1 next to the runs it is filled from.
  static constexpr index_t tile = sizeof(T) <= 16 ? 32 : sizeof(T) <= 64 ? 16 : 8;

  void operator()(T const* from, T* to, T* buffer) const {
    auto const nr = static_cast<index_t>(ar.size()), nc = static_cast<index_t>(ac.size());
    auto at = [](std::vector<index_t> const& o, index_t k) {
      return o[static_cast<std::size_t>(k)];
    };
    bool const runs = sar != 0 && sac != 0 && sbr != 0 && sbc != 0;
    // Contiguous along rows on one side and along columns on the other: a transpose.
    bool const a_by_column = runs && sac == 1 && sbr == 1 && sbc != 1 && nr > 1;
    bool const a_by_row = runs && sar == 1 && sbc == 1 && sac != 1 && nc > 1;
    for (index_t r0 = 0; r0 < nr; r0 += tile)
      for (index_t c0 = 0; c0 < nc; c0 += tile) {
        index_t const nrt = std::min(tile, nr - r0), nct = std::min(tile, nc - c0);
        T const* src = from + at(ar, r0) + at(ac, c0);  // element (r0, c0) on each side
        T* dst = to + at(br, r0) + at(bc, c0);
        if (a_by_column && buffer) {
          // Rows of the tile in (contiguous in a), columns out (contiguous in b).
          for (index_t r = 0; r < nrt; ++r)
            std::memcpy(buffer + r * tile, src + r * sar,
                        static_cast<std::size_t>(nct) * sizeof(T));
          for (index_t c = 0; c < nct; ++c)
            for (index_t r = 0; r < nrt; ++r)
              std::memcpy(dst + c * sbc + r, buffer + r * tile + c, sizeof(T));
        } else if (a_by_row && buffer) {
          for (index_t c = 0; c < nct; ++c)
            std::memcpy(buffer + c * tile, src + c * sac,
                        static_cast<std::size_t>(nrt) * sizeof(T));
          for (index_t r = 0; r < nrt; ++r)
            for (index_t c = 0; c < nct; ++c)
              std::memcpy(dst + r * sbr + c, buffer + c * tile + r, sizeof(T));
        } else if (runs && sbr == 1 && sbc != 1 && nr > 1) {
          // The destination is contiguous along rows: runs down the columns.
          for (index_t c = 0; c < nct; ++c) copy_run(src + c * sac, dst + c * sbc, nrt, sar, sbr);
        } else if (runs) {
          for (index_t r = 0; r < nrt; ++r) copy_run(src + r * sar, dst + r * sbr, nct, sac, sbc);
        } else {
          for (index_t r = r0; r < r0 + nrt; ++r)
            for (index_t c = c0; c < c0 + nct; ++c)
              std::memcpy(to + at(br, r) + at(bc, c), from + at(ar, r) + at(ac, c), sizeof(T));
        }
      }
  }

  /// Copies a run of `len` elements with steps sa and sb (a memcpy when both are 1).
  static void copy_run(T const* a, T* b, index_t len, index_t sa, index_t sb) {
    if (sa == 1 && sb == 1) {
      std::memcpy(b, a, static_cast<std::size_t>(len) * sizeof(T));
      return;
    }
    for (index_t k = 0; k < len; ++k) std::memcpy(b + k * sb, a + k * sa, sizeof(T));
  }
};

/// Copies the elements of set `a` of `from` to the same elements' places, set `b`, in `to`
/// (a sender's and its receiver's view, or a set and its packed buffer). The last two
/// dimensions go in tiles. Where both sets' offsets are arithmetic (block and cyclic
/// are; block-cyclic lists jump) a tile is copied as strided runs along the dimension in
/// which the destination is contiguous, and a transpose — each side contiguous along a
/// different dimension — goes through a small buffer: the tile's runs are read
/// contiguously into it and written contiguously out of it, so neither side walks with
/// a large stride. (Strided access over many rows at a power-of-two stride maps them to
/// one cache set; measured on a 1024 x 1024 complex transpose, 32 x 32 tiles with strided
/// writes took 5.4 ms and buffered tiles 2.2 ms against 0.6 ms for memcpy, in a standalone loop.)
/// Elsewhere the tiles go element by element. The leading dimensions (N > 2) are walked in order.
template <class T, std::size_t N>
void copy_set(T const* from, pair_set<N> const& a, T* to, pair_set<N> const& b) {
  for (auto const& o : a.offsets)
    if (o.empty()) return;
  if constexpr (N == 1) {
    // One dimension: a plane of one row.
    static std::vector<index_t> const zero{0};
    plane_copy<T>{zero, a.offsets[0],
                  zero, b.offsets[0],
                  1,    common_step(a.offsets[0]),
                  1,    common_step(b.offsets[0])}(from, to, nullptr);
  } else {
    auto const& ar = a.offsets[N - 2];
    auto const& br = b.offsets[N - 2];
    plane_copy<T> const plane{ar,
                              a.offsets[N - 1],
                              br,
                              b.offsets[N - 1],
                              common_step(ar),
                              common_step(a.offsets[N - 1]),
                              common_step(br),
                              common_step(b.offsets[N - 1])};
    // The tile buffer: storage for elements that are only ever memcpy'd in and out.
    constexpr auto cap = static_cast<std::size_t>(plane_copy<T>::tile * plane_copy<T>::tile);
    std::allocator<T> alloc;
    T* buffer = alloc.allocate(cap);
    std::array<std::size_t, N - 2> pos{};  // position in each leading dimension
    for (;;) {
      index_t ao = 0, bo = 0;
      for (std::size_t d = 0; d + 2 < N; ++d) {
        ao += a.offsets[d][pos[d]];
        bo += b.offsets[d][pos[d]];
      }
      plane(from + ao, to + bo, buffer);
      bool done = true;
      for (std::size_t d = N - 2; d-- > 0;) {
        if (++pos[d] < a.offsets[d].size()) {
          done = false;
          break;
        }
        pos[d] = 0;
      }
      if (done) break;
    }
    alloc.deallocate(buffer, cap);
  }
}

/// The same set as a packed buffer: row-major in the product of the lists.
template <std::size_t N>
pair_set<N> packed_like(pair_set<N> const& s) {
  pair_set<N> p;
  index_t step = 1;
  for (std::size_t d = N; d-- > 0;) {
    p.offsets[d].resize(s.offsets[d].size());
    for (std::size_t k = 0; k < p.offsets[d].size(); ++k)
      p.offsets[d][k] = static_cast<index_t>(k) * step;
    step *= static_cast<index_t>(s.offsets[d].size());
  }
  return p;
}

template <class T, std::size_t N>
void copy_plan<T, N>::move_own() const {
  auto const m = static_cast<std::size_t>(me);
  copy_set(from, sends[m], to, recvs[m]);
}
template <class T, std::size_t N>
void copy_plan<T, N>::pack(index_t q) const {
  if (q == me) return;
  auto const& a = sends[static_cast<std::size_t>(q)];
  copy_set(from, a, staging->out.data() + sdispl[static_cast<std::size_t>(q)], packed_like(a));
}
template <class T, std::size_t N>
void copy_plan<T, N>::unpack(index_t q) const {
  if (q == me) return;
  auto const& b = recvs[static_cast<std::size_t>(q)];
  copy_set(staging->in.data() + rdispl[static_cast<std::size_t>(q)], packed_like(b), to, b);
}

/// Takes this rank's elements held by peer q straight from q's source array (direct
/// access on one node: no pack at q, no message). Mapped (q's block is a memory file this
/// process maps, dist/direct.hpp): one tiled copy from q's storage into place, as for
/// this rank's own elements. Otherwise read with process_vm_readv in chunks of about
/// 256 KiB, each span by span along q's innermost storage dimension into a buffer, then
/// copied (or transposed, in tiles) into place while it is in cache. A span runs from the
/// first to the last element wanted along that dimension, so a cyclic source reads up to
/// P times what it needs in long runs rather than one read per element.
template <class T, std::size_t N>
void copy_plan<T, N>::pull(index_t q) const {
  if (q == me) return;
  auto const uq = static_cast<std::size_t>(q);
  auto const& a = remote[uq];
  auto const& b = recvs[uq];
  // Mapped even with nothing to take: the closing wait reads q's count there, and q's
  // block is sure to live only until this rank has counted its pulls.
  auto const h = handle_of(q);
  auto const m = map_peer_block(members, static_cast<int>(q), h);
  mapped[uq] = m;
  if (a.count() == 0) return;
  if (m) {
    copy_set(static_cast<T const*>(m.get()), a, to, b);
    return;
  }
  auto const strides = src_type->local_strides(static_cast<int>(q));
  // Dimensions by falling stride: the last one is contiguous in q's storage.
  std::array<std::size_t, N> dims{};
  for (std::size_t d = 0; d < N; ++d) dims[d] = d;
  std::stable_sort(dims.begin(), dims.end(),
                   [&](std::size_t x, std::size_t y) { return strides[x] > strides[y]; });
  std::size_t const inner = dims[N - 1];
  auto const [lo_it, hi_it] = std::minmax_element(a.offsets[inner].begin(), a.offsets[inner].end());
  index_t const lo = *lo_it, span = *hi_it - lo + 1;
  // The buffer: the spans one after another, the other dimensions in q's storage order.
  pair_set<N> buf;
  for (auto o : a.offsets[inner]) buf.offsets[inner].push_back(o - lo);
  std::array<index_t, N> step{};
  step[inner] = 1;
  index_t run_elems = span;  // elements per position of the outermost dimension
  for (std::size_t k = N - 1; k-- > 0;) {
    auto const d = dims[k];
    step[d] = run_elems;
    for (std::size_t j = 0; j < a.offsets[d].size(); ++j)
      buf.offsets[d].push_back(static_cast<index_t>(j) * run_elems);
    run_elems *= static_cast<index_t>(a.offsets[d].size());
  }
  std::size_t const outer = dims[0];
  index_t const outer_n = N == 1 ? 1 : static_cast<index_t>(a.offsets[outer].size());
  index_t const per_outer = N == 1 ? span : step[outer];
  index_t const chunk =
      std::max<index_t>(1, static_cast<index_t>((std::size_t{256} << 10) / sizeof(T)) /
                               std::max<index_t>(1, per_outer));
  std::vector<T> buffer(static_cast<std::size_t>(std::min(chunk, outer_n) * per_outer));
  std::vector<remote_run> runs;
  auto const base = h.address;
  for (index_t j0 = 0; j0 < outer_n; j0 += chunk) {
    index_t const j1 = std::min(outer_n, j0 + chunk);
    runs.clear();
    if constexpr (N == 1) {
      runs.push_back(
          {static_cast<std::uintptr_t>(base + static_cast<std::uint64_t>(lo) * sizeof(T)),
           static_cast<std::size_t>(span) * sizeof(T)});
    } else {
      // Every position of the dimensions outside `inner` with the outermost in [j0, j1),
      // in q's storage order: one span each.
      std::array<std::size_t, N> pos{};
      pos[outer] = static_cast<std::size_t>(j0);
      for (;;) {
        index_t o = lo;
        for (std::size_t k = 0; k + 1 < N; ++k) o += a.offsets[dims[k]][pos[dims[k]]];
        runs.push_back(
            {static_cast<std::uintptr_t>(base + static_cast<std::uint64_t>(o) * sizeof(T)),
             static_cast<std::size_t>(span) * sizeof(T)});
        std::size_t k = N - 1;
        bool more = false;
        while (k-- > 0) {
          auto const d = dims[k];
          auto const end = d == outer ? static_cast<std::size_t>(j1) : a.offsets[d].size();
          if (++pos[d] < end) {
            more = true;
            break;
          }
          pos[d] = d == outer ? static_cast<std::size_t>(j0) : 0;
        }
        if (!more) break;
      }
    }
    read_direct(members, static_cast<int>(q), runs, buffer.data());
    // This chunk's part of both sets: the outermost dimension's positions [j0, j1).
    pair_set<N> from_chunk = buf, to_chunk = b;
    if constexpr (N > 1) {
      auto slice = [&](std::vector<index_t>& o, index_t shift) {
        o = std::vector<index_t>(o.begin() + j0, o.begin() + j1);
        for (auto& x : o) x -= shift;
      };
      slice(from_chunk.offsets[outer], j0 * step[outer]);
      slice(to_chunk.offsets[outer], 0);
    }
    copy_set(buffer.data(), from_chunk, to, to_chunk);
  }
}

}  // namespace detail

/// The local part of a distributed array on this rank (host memory), and its type.
template <class T, std::size_t N>
class array {
  static_assert(std::is_trivially_copyable_v<T>, "dist::array: T must be trivially copyable");

 public:
  using value_type = T;
  /// Collective in spirit (every member makes its part of the same type); checks the
  /// type against the team.
  array(team const& members, array_type<N> const& type) : team_(members), type_(type) {
    detail::check_member(members, "dist::array");
    type_.check(members.size(), "dist::array");
    auto const n = static_cast<std::size_t>(type_.local_extent(members.rank()).product());
    // Memory the peers on this node can map (dist/direct.hpp), so copies read it in place.
    block_ = detail::shared_block(members, n * sizeof(T));
    data_ = std::span<T>(static_cast<T*>(block_.data()), n);
    std::uninitialized_fill(data_.begin(), data_.end(), T{});
    strides_ = type_.local_strides(members.rank());
  }
  /// A copy has its own memory (and the same team and type); a move keeps the memory.
  array(array const& o) : array(o.team_, o.type_) {
    std::copy(o.data_.begin(), o.data_.end(), data_.begin());
  }
  array& operator=(array const& o) {
    if (this != &o) *this = array(o);
    return *this;
  }
  array(array&& o) noexcept
      : team_(std::move(o.team_)),
        type_(std::move(o.type_)),
        block_(std::move(o.block_)),
        data_(std::exchange(o.data_, {})),
        strides_(o.strides_),
        staging_(std::move(o.staging_)) {}
  array& operator=(array&& o) noexcept {
    team_ = std::move(o.team_);
    type_ = std::move(o.type_);
    block_ = std::move(o.block_);
    data_ = std::exchange(o.data_, {});
    strides_ = o.strides_;
    staging_ = std::move(o.staging_);
    return *this;
  }
  ~array() = default;

  array_type<N> const& type() const noexcept { return type_; }
  team const& members() const noexcept { return team_; }
  /// This rank's elements, in its storage order.
  std::span<T> local() noexcept { return data_; }
  std::span<T const> local() const noexcept { return data_; }
  /// This rank's local extent per global dimension.
  vec<N> local_extent() const { return type_.local_extent(team_.rank()); }
  /// Whether this rank holds global element i, and a reference to it (PARRAY's global
  /// view of the local part; throws invalid_argument for an element held elsewhere).
  bool holds(vec<N> const& i) const { return type_.owner_rank(i) == team_.rank(); }
  T& at(vec<N> const& i) { return data_[offset_of(i)]; }
  T const& at(vec<N> const& i) const { return data_[offset_of(i)]; }
  /// This rank's memory (dist/direct.hpp): what dist::copy tells the peers to map.
  detail::shared_block const& block() const noexcept { return block_; }
  /// Buffers for a copy into this array: the kept ones when no copy holds them.
  std::shared_ptr<detail::copy_staging<T>> staging() const {
    if (staging_.use_count() == 1) return staging_;
    return std::make_shared<detail::copy_staging<T>>();
  }
  /// Calls f(global index, element) for every element held here.
  template <class F>
  void for_each(F&& f) {
    std::array<std::vector<index_t>, N> lists;
    for (std::size_t d = 0; d < N; ++d) lists[d] = type_.owned_by_rank(d, team_.rank());
    vec<N> i{};
    std::array<std::size_t, N> pos{};
    if (data_.empty()) return;
    for (;;) {
      // The pos-th index a rank holds along d is its local index pos (the lists ascend).
      index_t o = 0;
      for (std::size_t d = 0; d < N; ++d) {
        i[d] = lists[d][pos[d]];
        o += static_cast<index_t>(pos[d]) * strides_[d];
      }
      f(i, data_[static_cast<std::size_t>(o)]);
      std::size_t d = N;
      while (d-- > 0) {
        if (++pos[d] < lists[d].size()) break;
        pos[d] = 0;
        if (d == 0) return;
      }
    }
  }

 private:
  std::size_t offset_of(vec<N> const& i) const {
    for (std::size_t d = 0; d < N; ++d)
      if (i[d] < 0 || i[d] >= type_.extent[d])
        throw invalid_argument("dist::array::at: index " + std::to_string(i[d]) + " in dimension " +
                               std::to_string(d) + " is outside the extent " +
                               std::to_string(type_.extent[d]));
    if (!holds(i))
      throw invalid_argument("dist::array::at: the element is held by team rank " +
                             std::to_string(type_.owner_rank(i)) + ", not this rank (" +
                             std::to_string(team_.rank()) + ")");
    index_t o = 0;
    for (std::size_t d = 0; d < N; ++d) o += type_.local_index(d, i[d]) * strides_[d];
    return static_cast<std::size_t>(o);
  }

  team team_;
  array_type<N> type_;
  detail::shared_block block_;
  std::span<T> data_;
  // This rank's storage strides, once: local_strides walks the owned index lists, so
  // per element it made for_each and at() cost O(extent) each (minutes for a 4096^2
  // block-cyclic fill).
  vec<N> strides_{};
  std::shared_ptr<detail::copy_staging<T>> staging_ = std::make_shared<detail::copy_staging<T>>();
};

/// Copies every element of `src` into `dst` (same team, same global extent; any
/// distributions and storage orders): scatter, gather, all-to-all, mix-to-mix and
/// transposes are all this one operation (PARRAY §4.13-4.16). Collective: every member
/// calls it with the same pair of types. The event completes when this rank's part of
/// `dst` is written; `src` and `dst` must stay alive and untouched until then.
template <class T, std::size_t N>
strata::event copy(array<T, N>& dst, array<T, N> const& src) {
  auto const& tm = src.members();
  int const size = tm.size(), me = tm.rank();
  if (dst.members().ranks() != tm.ranks())
    throw invalid_argument("dist::copy: the arrays belong to different teams; expected one");
  if (dst.type().extent != src.type().extent)
    throw invalid_argument(
        "dist::copy: the global extents differ; expected the same elements "
        "distributed two ways");
  auto const& st = src.type();
  auto const& dt = dst.type();
  std::array<std::vector<index_t>, N> src_mine, dst_mine;
  for (std::size_t d = 0; d < N; ++d) {
    src_mine[d] = st.owned_by_rank(d, me);
    dst_mine[d] = dt.owned_by_rank(d, me);
  }
  // Per peer: what this rank sends (its src elements the peer holds in dst) and receives.
  std::vector<std::size_t> scount(static_cast<std::size_t>(size)), sdispl(scount.size()),
      rcount(scount.size()), rdispl(scount.size());
  std::vector<detail::pair_set<N>> sends, recvs;
  std::size_t stotal = 0, rtotal = 0;
  // On one node each rank reads what it needs from the peers' arrays itself.
  bool const direct = size > 1 && detail::direct_access(tm);
  std::vector<detail::pair_set<N>> remote;
  for (int q = 0; q < size; ++q) {
    std::array<std::vector<index_t>, N> out, in;
    for (std::size_t d = 0; d < N; ++d) {
      out[d] = detail::intersect(src_mine[d], dt.owned_by_rank(d, q));
      in[d] = detail::intersect(st.owned_by_rank(d, q), dst_mine[d]);
    }
    sends.push_back(detail::make_pair_set(out, st, me));
    recvs.push_back(detail::make_pair_set(in, dt, me));
    if (direct) remote.push_back(detail::make_pair_set(in, st, q));
    auto const uq = static_cast<std::size_t>(q);
    scount[uq] = q == me ? 0 : sends.back().count();
    rcount[uq] = q == me ? 0 : recvs.back().count();
    sdispl[uq] = stotal;
    rdispl[uq] = rtotal;
    stotal += scount[uq];
    rtotal += rcount[uq];
  }
  // Staging kept in the destination for its next copy (fresh pages cost as much as the
  // copy itself at large sizes); a copy that finds it in use gets its own.
  auto plan = std::make_shared<detail::copy_plan<T, N>>(
      detail::copy_plan<T, N>{std::move(sends),
                              std::move(recvs),
                              std::move(sdispl),
                              std::move(rdispl),
                              size == 1 || direct ? nullptr : dst.staging(),
                              src.local().data(),
                              dst.local().data(),
                              me,
                              std::move(remote),
                              &src.type(),
                              tm,
                              {}});
  if (plan->staging) {
    plan->staging->out.resize(stotal);
    plan->staging->in.resize(rtotal);
  }
  // Pool jobs, not the caller or the MPI thread: this rank's own elements move while the
  // others are packed, sent and unpacked (one thread per peer's part).
  auto host = strata::runtime::current().machine();
  auto local = launch(host, grid(1), [plan](auto const&) { plan->move_own(); });
  if (size == 1) return local;
  if (direct) {
    // Every member gives its source's handle (dist/direct.hpp); once all have (the
    // gather is the sign that every source is ready), each takes its elements from the
    // peers' blocks. Then it counts the copy as pulled in its own block's header, and its
    // event completes once every peer has counted this copy too: nobody reads its source
    // any more. No barrier: a reader writes one word of its own memory, the owner's MPI
    // thread polls the peers' words (mapped) as it polls its requests.
    auto const& block = src.block();
    auto const n = block.copy_started();
    plan->handles.resize(3 * static_cast<std::size_t>(size));
    plan->mapped.resize(static_cast<std::size_t>(size));
    auto const h = block.handle();
    auto const mine = std::make_shared<std::array<std::uint64_t, 3>>(
        std::array<std::uint64_t, 3>{h.address, static_cast<std::uint64_t>(h.fd), h.serial});
    auto gathered = all_gather(tm, std::span<std::uint64_t const>(*mine),
                               std::span<std::uint64_t>(plan->handles));
    auto pulled = launch(after(gathered), host, grid(size),
                         [plan, mine](auto const& self) { plan->pull(self.global_index()); });
    // Counted even when a read failed (this rank's event fails): the peers must not wait
    // for a count that never comes.
    return detail::start_reserved_after(when_all(after(local, pulled)), [plan, &block, n, size] {
      block.pulls_done();
      std::vector<detail::block_handle> peers;
      for (int q = 0; q < size; ++q) peers.push_back(plan->handle_of(q));
      return detail::when_peers_pulled(plan->members, std::move(peers), n, plan->mapped);
    });
  }
  auto packed =
      launch(host, grid(size), [plan](auto const& self) { plan->pack(self.global_index()); });
  // The exchange's place among the team's collectives is taken now, in call order.
  auto const exchange = detail::reserve_collective(tm);
  auto moved = detail::start_reserved_after(packed, [plan, tm, scount, rcount, exchange] {
    return detail::all_to_all_v(tm, std::span<T const>(plan->staging->out), scount, plan->sdispl,
                                std::span<T>(plan->staging->in), rcount, plan->rdispl, exchange);
  });
  auto unpacked = launch(after(moved), host, grid(size),
                         [plan](auto const& self) { plan->unpack(self.global_index()); });
  return when_all(after(local, unpacked));
}

}  // namespace strata::dist
