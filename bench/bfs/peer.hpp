// The peers of bench/bfs/strata.cpp: Boost.Graph's breadth_first_search (serial, on its
// compressed_sparse_row_graph) and a hand-written OpenMP top-down BFS.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace strata::bench::bfs_peer {

struct boost_graph;
struct boost_deleter {
  void operator()(boost_graph* g) const;
};
using boost_handle = std::unique_ptr<boost_graph, boost_deleter>;

/// A boost::compressed_sparse_row_graph built from the CSR arrays (n vertices).
boost_handle make_boost(std::int32_t n, std::int64_t const* offsets, std::int32_t const* adj);
/// Boost's BFS from `root`; parent[v] = v's BFS-tree parent, -1 if unreached.
void boost_bfs(boost_graph const& g, std::int32_t root, std::vector<std::int32_t>& parent);

/// Level-synchronous top-down BFS: `omp parallel` over the frontier, a vertex claimed by
/// compare-and-swap on its parent, the next frontier gathered from per-thread buffers.
void omp_top_down(std::int32_t n, std::int64_t const* offsets, std::int32_t const* adj,
                  std::int32_t root, std::vector<std::int32_t>& parent,
                  std::vector<std::int32_t>& queue, int threads);

}  // namespace strata::bench::bfs_peer
