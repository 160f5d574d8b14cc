// Breadth-first search over several places, in stages (Phalanx §V-A: "BFS ... launches
// multiple tasks to perform different stages of breadth first search"), level by level,
// each level top-down or bottom-up as Beamer, Asanovic and Patterson's direction-optimizing
// BFS chooses (SC'12: bottom-up once the frontier's edges exceed the unexplored edges /
// alpha, top-down again once the frontier holds fewer than n / beta vertices).
//
// The vertices are partitioned over the places in ranges of whole 64-vertex words; a place
// owns its vertices' adjacency lists, parents and levels. Frontiers are bitmaps. Per level:
//   top-down:  expand  - each place marks the unvisited neighbours of its frontier
//                        vertices in a "discovered" bitmap (atomic OR);
//              merge   - the host ORs the devices' bitmaps and sends each its range;
//              claim   - each place gives its discovered vertices a parent: their first
//                        neighbour (in adjacency order) in the frontier;
//   bottom-up: each place's unvisited vertices look for their first neighbour in the
//              frontier;
// then every place's part of the next frontier is gathered and the whole frontier is sent
// to every device. Host places work on the host's arrays in place; a device holds its
// part in its own memory and exchanges bitmaps by copies on its queue. Parents are thus
// the first frontier neighbour in adjacency order, whatever the places and threads: the
// result is deterministic.
#pragma once

#include "graph.hpp"

#include <strata/strata.hpp>

#include <memory>
#include <string>
#include <vector>

namespace apps {

enum class bfs_direction { optimizing, top_down, bottom_up };

struct bfs_options {
  bfs_direction direction = bfs_direction::optimizing;
  double alpha = 15;  // Beamer's: to bottom-up when frontier edges > unexplored edges / alpha
  double beta = 18;   // back to top-down when frontier vertices < n / beta
};

struct bfs_part_info {
  strata::place where;
  vertex_id first;
  vertex_id last;
  bool device;
};

class partitioned_bfs {
 public:
  /// `g` must outlive this object (host places read it in place; devices get copies of
  /// their vertices' lists here).
  partitioned_bfs(csr_graph const& g, std::vector<strata::target> const& where,
                  bfs_options options = {});
  ~partitioned_bfs();
  partitioned_bfs(partitioned_bfs&&) noexcept;
  partitioned_bfs& operator=(partitioned_bfs&&) noexcept;

  /// Searches from `root`; blocks until done. parent() and level() then hold the tree
  /// (-1 for unreached vertices; the root is its own parent).
  void run(vertex_id root);
  std::vector<vertex_id> const& parent() const;
  std::vector<std::int32_t> const& level() const;
  /// The direction of each level of the last run: 'T' top-down, 'B' bottom-up.
  std::string const& directions() const;
  std::vector<bfs_part_info> parts() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

/// Cuts the vertices into `parts` ranges of whole 64-vertex words with about equal
/// weight (degree + 1 per vertex), in proportion to `shares` when given; parts + 1 bounds.
std::vector<vertex_id> split_vertices(csr_graph const& g, int parts,
                                      std::vector<double> const& shares = {});

}  // namespace apps
