// Graphs for the BFS application (Phalanx §V-A): undirected graphs in CSR form, the
// Graph500 Kronecker (R-MAT) generator, edge-list and Matrix Market input, a serial BFS
// and the Graph500 validation of a BFS parent tree. Application code on the public API
// only; not part of the library.
#pragma once

#include <strata/strata.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace apps {

using vertex_id = std::int32_t;

/// An undirected graph: each edge {u, v} appears in both adjacency lists, each list sorted
/// and without duplicates or self-loops. offsets has n + 1 entries (64-bit: the Graph500
/// scales past 26 hold more than 2^31 adjacency entries).
struct csr_graph {
  vertex_id n = 0;
  std::vector<std::int64_t> offsets{0};
  std::vector<vertex_id> adj;

  std::int64_t degree(vertex_id v) const {
    return offsets[static_cast<std::size_t>(v) + 1] - offsets[static_cast<std::size_t>(v)];
  }
  /// Undirected edges (each counted once).
  std::int64_t edges() const { return static_cast<std::int64_t>(adj.size()) / 2; }
};

struct edge {
  vertex_id u;
  vertex_id v;
};

/// Builds the undirected CSR graph of `n` vertices from an edge list: both directions,
/// duplicates and self-loops dropped, lists sorted. Parallel over `where` (a host place)
/// with Strata kernels. strata::invalid_argument for an endpoint outside [0, n).
csr_graph graph_from_edges(vertex_id n, std::vector<edge> const& edges, strata::target where);

/// Graph500's Kronecker generator (graph500.org specification §2, the R-MAT recursion
/// with A = 0.57, B = 0.19, C = 0.19): 2^scale vertices, edge_factor * 2^scale edges, then
/// a random relabelling of the vertices. Edges are drawn in parallel on `where` with
/// Philox4x32-10, so the graph depends only on (scale, edge_factor, seed).
std::vector<edge> kronecker_edges(int scale, int edge_factor, std::uint64_t seed,
                                  strata::target where);

/// Reads an edge list: one "u v" pair of 0-based vertex ids per line, extra columns (a
/// weight) ignored, lines starting with '#' or '%' and blank lines skipped. The vertex
/// count is the largest id + 1. strata::parse_error names the line of a malformed entry.
std::vector<edge> read_edge_list(std::istream& in, std::string const& name, vertex_id& n);
/// The graph of a square Matrix Market file (sparse.hpp's reader): entry (i, j) is the
/// edge {i, j}; values are ignored.
std::vector<edge> read_matrix_market_edges(std::string const& path, vertex_id& n);

/// Levels of a serial queue-based BFS from `root` (-1 for unreached vertices).
std::vector<std::int32_t> serial_bfs_levels(csr_graph const& g, vertex_id root);

/// Graph500's validation of a BFS result (specification §5): the parent array forms a
/// tree rooted at `root` (root is its own parent, no cycles), each tree edge is an edge of
/// the graph joining levels that differ by one, every graph edge joins levels that differ
/// by at most one, and the tree spans exactly the root's component. Returns "" when valid,
/// else the first rule broken with the vertex that breaks it. Fills `levels` (from the
/// tree) when given.
std::string validate_bfs_tree(csr_graph const& g, vertex_id root,
                              std::vector<vertex_id> const& parent,
                              std::vector<std::int32_t>* levels = nullptr);

/// Edges of the component BFS traversed: half the summed degrees of the reached vertices
/// (Graph500 counts the input edges inside the component; here duplicates and self-loops
/// are already gone).
std::int64_t traversed_edges(csr_graph const& g, std::vector<std::int32_t> const& levels);

/// `count` distinct roots with degree >= 1, drawn with Philox from `seed` (Graph500 §4:
/// search keys are random vertices with at least one edge).
std::vector<vertex_id> pick_roots(csr_graph const& g, int count, std::uint64_t seed);

}  // namespace apps
