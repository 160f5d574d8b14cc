// How dist::copy moves the elements between two distributed array types on one rank
// (PARRAY §4.13-4.16; docs/dist.md "Copies on one node"): the per-peer element sets, the
// tiled copies and transposes between them, packing and unpacking for messages, and the
// direct reads of the peers' arrays on one node. Internal to dist/array.hpp, hence
// `detail`.
#pragma once

#include <strata/dist/array_type.hpp>
#include <strata/dist/collectives.hpp>
#include <strata/dist/direct.hpp>
#include <strata/dist/runtime.hpp>
#include <strata/exec.hpp>
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

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace strata::dist {

namespace detail {

/// The smallest destination (a rank's part of a copy) written with non-temporal stores.
inline constexpr std::size_t stream_threshold_min = std::size_t{8} << 20;

/// The bytes of a rank's part of a copy from which its transposing tiles are written with
/// non-temporal stores, so that the written lines are neither read into the cache first
/// (write-allocate) nor evict what is there: an eighth of the machine's last-level cache
/// over the `ranks` that share it, at least stream_threshold_min. Measured in session 54
/// (a VM with 480 MiB of L3): a 4096^2 complex transpose, 32 x 32 tiles, 4.4 -> 9.7 GB/s
/// streamed (2048^2 6.7 -> 16.8), and dist-fft at one rank 0.97 -> 1.40-1.53 of FFTW-MPI
/// at 4096^2 and 1.11 -> 1.17-1.40 at 2048^2 (64 MiB per array), but 1.23 -> 0.65 at
/// 1024^2 (16 MiB), whose arrays the cache held from one transform to the next.
inline std::size_t stream_threshold(place const& machine, int ranks) {
  auto const llc = static_cast<std::size_t>(machine.last_level_cache());
  return std::max(stream_threshold_min, llc / 8 / static_cast<std::size_t>(std::max(1, ranks)));
}

/// Copies `count` bytes with non-temporal stores for the 16-byte aligned middle (x86 SSE2;
/// plain memcpy elsewhere). Weakly ordered: stream_fence() before the data is published.
inline void stream_bytes(void* dst, void const* src, std::size_t count) noexcept {
#if defined(__SSE2__)
  auto* d = static_cast<unsigned char*>(dst);
  auto const* s = static_cast<unsigned char const*>(src);
  std::size_t const head =
      std::min<std::size_t>(count, (16 - (reinterpret_cast<std::uintptr_t>(d) & 15)) & 15);
  std::memcpy(d, s, head);
  d += head;
  s += head;
  count -= head;
  for (; count >= 16; count -= 16, d += 16, s += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d),
                     _mm_loadu_si128(reinterpret_cast<__m128i const*>(s)));
  std::memcpy(d, s, count);
#else
  std::memcpy(dst, src, count);
#endif
}

/// Orders the non-temporal stores before what follows (the copy's completion).
inline void stream_fence() noexcept {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

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
  // strides per rank) and the team; the peers' source blocks come with the copy's
  // agreement (dist/array.hpp).
  std::vector<pair_set<N>> remote;
  array_type<N> const* src_type = nullptr;
  team members;
  // Per peer, its block as mapped (null where it is read with process_vm_readv), by
  // pull_from; each pull task writes its own slot.
  mutable std::vector<std::shared_ptr<void const>> mapped;
  // This rank's destination is at least stream_threshold(machine, ranks) bytes:
  // transposing tiles are written with non-temporal stores.
  bool stream = false;

  void move_own() const;
  void pack(index_t q) const;
  void unpack(index_t q) const;
  /// Takes this rank's elements from team rank q's source block `h`.
  void pull_from(index_t q, block_handle const& h) const;
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
  // Tiles are visited in blocks of block x block elements, so that the pages and lines a
  // block's strided side touches stay in the TLB and caches while the block is done (a
  // 4096^2 complex transpose: 0.100 -> 0.089 s, 0.056 -> 0.049 s with streaming).
  static constexpr index_t block = 8 * tile;
  // The buffer copy_set provides: a tile, and one more run of a tile's length.
  static constexpr std::size_t buffer_size = static_cast<std::size_t>(tile * tile + tile);

  // `stream`: the transposing cases write each run with non-temporal stores, gathered
  // from the tile into the buffer's extra run first (the caller fences).
  void operator()(T const* from, T* to, T* buffer, bool stream = false) const {
    auto const nr = static_cast<index_t>(ar.size()), nc = static_cast<index_t>(ac.size());
    auto at = [](std::vector<index_t> const& o, index_t k) {
      return o[static_cast<std::size_t>(k)];
    };
    bool const runs = sar != 0 && sac != 0 && sbr != 0 && sbc != 0;
    // Contiguous along rows on one side and along columns on the other: a transpose.
    bool const a_by_column = runs && sac == 1 && sbr == 1 && sbc != 1 && nr > 1;
    bool const a_by_row = runs && sar == 1 && sbc == 1 && sac != 1 && nc > 1;
    T* const run = buffer ? buffer + tile * tile : nullptr;
    auto const blocks = [&](auto&& each_tile) {
      for (index_t b0 = 0; b0 < nr; b0 += block)
        for (index_t b1 = 0; b1 < nc; b1 += block)
          for (index_t r0 = b0; r0 < std::min(nr, b0 + block); r0 += tile)
            for (index_t c0 = b1; c0 < std::min(nc, b1 + block); c0 += tile) each_tile(r0, c0);
    };
    blocks([&](index_t r0, index_t c0) {
      index_t const nrt = std::min(tile, nr - r0), nct = std::min(tile, nc - c0);
      T const* src = from + at(ar, r0) + at(ac, c0);  // element (r0, c0) on each side
      T* dst = to + at(br, r0) + at(bc, c0);
      // A transposing tile: `n` runs of `len` elements in (contiguous on the source side,
      // `in` apart), `len` runs of `n` out (contiguous on the destination side, `out` apart).
      auto transpose = [&](index_t n, index_t len, index_t in, index_t out) {
        for (index_t i = 0; i < n; ++i)
          std::memcpy(buffer + i * tile, src + i * in, static_cast<std::size_t>(len) * sizeof(T));
        for (index_t o = 0; o < len; ++o) {
          T* w = stream ? run : dst + o * out;
          for (index_t i = 0; i < n; ++i) std::memcpy(w + i, buffer + i * tile + o, sizeof(T));
          if (stream) stream_bytes(dst + o * out, run, static_cast<std::size_t>(n) * sizeof(T));
        }
      };
      if (a_by_column && buffer) {
        transpose(nrt, nct, sar, sbc);  // the tile's rows in, its columns out
      } else if (a_by_row && buffer) {
        transpose(nct, nrt, sac, sbr);  // its columns in, its rows out
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
    });
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
///
/// `stream`: transposing tiles are written with non-temporal stores (the copy's
/// destination is large, copy_plan::stream), fenced before this returns.
template <class T, std::size_t N>
void copy_set(T const* from, pair_set<N> const& a, T* to, pair_set<N> const& b,
              bool stream = false) {
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
    constexpr auto cap = plane_copy<T>::buffer_size;
    std::allocator<T> alloc;
    T* buffer = alloc.allocate(cap);
    std::array<std::size_t, N - 2> pos{};  // position in each leading dimension
    for (;;) {
      index_t ao = 0, bo = 0;
      for (std::size_t d = 0; d + 2 < N; ++d) {
        ao += a.offsets[d][pos[d]];
        bo += b.offsets[d][pos[d]];
      }
      plane(from + ao, to + bo, buffer, stream);
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
    if (stream) stream_fence();
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
  copy_set(from, sends[m], to, recvs[m], stream);
}
template <class T, std::size_t N>
void copy_plan<T, N>::pack(index_t q) const {
  if (q == me) return;
  auto const& a = sends[static_cast<std::size_t>(q)];
  // Not streamed: MPI reads the staging buffer right away.
  copy_set(from, a, staging->out.data() + sdispl[static_cast<std::size_t>(q)], packed_like(a));
}
template <class T, std::size_t N>
void copy_plan<T, N>::unpack(index_t q) const {
  if (q == me) return;
  auto const& b = recvs[static_cast<std::size_t>(q)];
  copy_set(staging->in.data() + rdispl[static_cast<std::size_t>(q)], packed_like(b), to, b, stream);
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
void copy_plan<T, N>::pull_from(index_t q, block_handle const& h) const {
  if (q == me) return;
  auto const uq = static_cast<std::size_t>(q);
  auto const& a = remote[uq];
  auto const& b = recvs[uq];
  // Mapped even with nothing to take: the closing wait reads q's count there, and q's
  // block is sure to live only until this rank has counted its pulls.
  if (!mapped[uq]) mapped[uq] = map_peer_block(members, static_cast<int>(q), h);
  auto const m = mapped[uq];
  if (a.count() == 0) return;
  if (m) {
    copy_set(static_cast<T const*>(m.get()), a, to, b, stream);
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
    copy_set(buffer.data(), from_chunk, to, to_chunk, stream);
  }
}

}  // namespace detail

}  // namespace strata::dist
