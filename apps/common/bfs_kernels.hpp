// The kernels of one BFS level (bfs.hpp describes the stages). One source for every
// backend: device-callable functors over a part's 64-vertex words.
//
// Arguments shared by the kernels: the part's words are [first_word, first_word + words)
// of the whole bitmaps; `frontier`, `visited` and `disc` are indexed by global word,
// `next` by the part's word, `row_ptr`, `parent` and `level` by the part's vertex
// (vertex - 64 * first_word); `adj` holds global vertex ids; counts[0] and counts[1]
// gather the new frontier's vertices and the sum of their degrees.
#pragma once

#include "graph.hpp"

#include <strata/strata.hpp>

#include <cstdint>

namespace apps {

using bfs_word = std::uint64_t;

STRATA_FN inline int bfs_popcount(bfs_word w) {
#if defined(__CUDA_ARCH__)
  return __popcll(w);
#else
  return __builtin_popcountll(w);
#endif
}

STRATA_FN inline int bfs_lowest_bit(bfs_word w) {
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(w)) - 1;
#else
  return __builtin_ctzll(w);
#endif
}

STRATA_FN inline bool bfs_test(bfs_word const* bits, vertex_id v) {
  return (bits[v >> 6] >> (v & 63)) & 1u;
}

/// Bits of word `w` that are vertices (the last word may run past n).
STRATA_FN inline bfs_word bfs_valid_bits(strata::index_t w, vertex_id n) {
  strata::index_t left = static_cast<strata::index_t>(n) - 64 * w;
  return left >= 64 ? ~bfs_word{0} : (bfs_word{1} << left) - 1;
}

/// Top-down expand: marks the unvisited neighbours of the part's frontier vertices in
/// `disc`. Reads of `disc` race with other threads' ORs, so they are atomic loads.
struct bfs_expand_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::index_t first_word, strata::index_t words,
                            std::int64_t const* row_ptr, vertex_id const* adj,
                            bfs_word const* frontier, bfs_word const* visited,
                            bfs_word* disc) const {
    for (auto i : self.elements(words)) {
      bfs_word f = frontier[first_word + i];
      while (f) {
        int const b = bfs_lowest_bit(f);
        f &= f - 1;
        strata::index_t const v = 64 * i + b;
        for (std::int64_t k = row_ptr[v]; k < row_ptr[v + 1]; ++k) {
          vertex_id const u = adj[k];
          bfs_word const mask = bfs_word{1} << (u & 63);
          if ((visited[u >> 6] | strata::atomic_load(&disc[u >> 6])) & mask) continue;
          strata::atomic_or(&disc[u >> 6], mask);
        }
      }
    }
  }
};

/// Finds v's first neighbour in the frontier; -1 if none.
STRATA_FN inline vertex_id bfs_frontier_neighbour(std::int64_t const* row_ptr, vertex_id const* adj,
                                                  strata::index_t v, bfs_word const* frontier) {
  for (std::int64_t k = row_ptr[v]; k < row_ptr[v + 1]; ++k)
    if (bfs_test(frontier, adj[k])) return adj[k];
  return -1;
}

/// Top-down claim: the part's newly discovered vertices (disc and not visited) get their
/// first frontier neighbour as parent; they form the part's next frontier. Clears the
/// part's words of `disc` for the next level.
struct bfs_claim_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::index_t first_word, strata::index_t words,
                            std::int64_t const* row_ptr, vertex_id const* adj,
                            bfs_word const* frontier, bfs_word* visited, bfs_word* disc,
                            bfs_word* next, vertex_id* parent, std::int32_t* level,
                            std::int32_t depth, std::int64_t* counts) const {
    std::int64_t found = 0, degrees = 0;
    for (auto i : self.elements(words)) {
      strata::index_t const gw = first_word + i;
      bfs_word w = disc[gw] & ~visited[gw], todo = w;
      disc[gw] = 0;
      while (todo) {
        int const b = bfs_lowest_bit(todo);
        todo &= todo - 1;
        strata::index_t const v = 64 * i + b;
        vertex_id const p = bfs_frontier_neighbour(row_ptr, adj, v, frontier);
        if (p < 0) {  // not a neighbour of the frontier after all: not discovered
          w &= ~(bfs_word{1} << b);
          continue;
        }
        parent[v] = p;
        level[v] = depth + 1;
        degrees += row_ptr[v + 1] - row_ptr[v];
      }
      next[i] = w;
      visited[gw] |= w;
      found += bfs_popcount(w);
    }
    if (found) {
      strata::atomic_add(&counts[0], found);
      strata::atomic_add(&counts[1], degrees);
    }
  }
};

/// Bottom-up: each unvisited vertex of the part takes its first frontier neighbour as
/// parent, if it has one.
struct bfs_bottom_up_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::index_t first_word, strata::index_t words,
                            vertex_id n, std::int64_t const* row_ptr, vertex_id const* adj,
                            bfs_word const* frontier, bfs_word* visited, bfs_word* next,
                            vertex_id* parent, std::int32_t* level, std::int32_t depth,
                            std::int64_t* counts) const {
    std::int64_t found = 0, degrees = 0;
    for (auto i : self.elements(words)) {
      strata::index_t const gw = first_word + i;
      bfs_word todo = ~visited[gw] & bfs_valid_bits(gw, n), w = 0;
      while (todo) {
        int const b = bfs_lowest_bit(todo);
        todo &= todo - 1;
        strata::index_t const v = 64 * i + b;
        vertex_id const p = bfs_frontier_neighbour(row_ptr, adj, v, frontier);
        if (p < 0) continue;
        parent[v] = p;
        level[v] = depth + 1;
        degrees += row_ptr[v + 1] - row_ptr[v];
        w |= bfs_word{1} << b;
      }
      next[i] = w;
      visited[gw] |= w;
      found += bfs_popcount(w);
    }
    if (found) {
      strata::atomic_add(&counts[0], found);
      strata::atomic_add(&counts[1], degrees);
    }
  }
};

/// A device's start of a level: its copy of `visited` takes in the frontier just
/// received, its `disc` and counts are cleared.
struct bfs_level_start_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::index_t words, bfs_word const* frontier,
                            bfs_word* visited, bfs_word* disc, std::int64_t* counts) const {
    for (auto i : self.elements(words)) {
      visited[i] |= frontier[i];
      disc[i] = 0;
      if (i == 0) counts[0] = counts[1] = 0;
    }
  }
};

/// Before a search: the part's parents and levels unset; with `words` > 0 also a
/// device's bitmaps cleared.
struct bfs_reset_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::index_t vertices, vertex_id* parent,
                            std::int32_t* level, strata::index_t words, bfs_word* visited,
                            bfs_word* disc) const {
    strata::index_t const total = vertices > words ? vertices : words;
    for (auto i : self.elements(total)) {
      if (i < vertices) {
        parent[i] = -1;
        level[i] = -1;
      }
      if (i < words) {
        visited[i] = 0;
        disc[i] = 0;
      }
    }
  }
};

}  // namespace apps
