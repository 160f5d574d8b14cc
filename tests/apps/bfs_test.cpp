// The BFS application's parts (apps/common): graph building and input, the Kronecker
// generator, the Graph500 validation (which must reject broken trees), and the
// partitioned direction-optimizing BFS on host places and sim devices against a serial
// BFS, in every direction mode.
#include "bfs.hpp"
#include "graph.hpp"
#include "places.hpp"

#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using apps::csr_graph;
using apps::vertex_id;

TEST(Graph, BuiltUndirectedSortedWithoutDuplicatesOrSelfLoops) {
  strata::runtime rt;
  std::vector<apps::edge> edges = {{0, 1}, {1, 0}, {2, 2}, {3, 1}, {0, 1}, {4, 0}};
  auto g = apps::graph_from_edges(6, edges, rt.machine());
  EXPECT_EQ(g.n, 6);
  EXPECT_EQ(g.offsets, (std::vector<std::int64_t>{0, 2, 4, 4, 5, 6, 6}));
  EXPECT_EQ(g.adj, (std::vector<vertex_id>{1, 4, 0, 3, 1, 0}));
  EXPECT_EQ(g.edges(), 3);
  EXPECT_THROW((void)apps::graph_from_edges(3, {{0, 3}}, rt.machine()), strata::invalid_argument);
}

TEST(Graph, KroneckerGraphsAreDeterministicAndSkewed) {
  strata::runtime rt;
  auto host = strata::target(rt.machine());
  auto e1 = apps::kronecker_edges(10, 16, 5, host);
  auto e2 = apps::kronecker_edges(10, 16, 5, strata::on(rt.machine(), strata::backend_id::serial));
  ASSERT_EQ(e1.size(), 16u * 1024);
  bool same = true;
  for (std::size_t i = 0; i < e1.size(); ++i)
    same = same && e1[i].u == e2[i].u && e1[i].v == e2[i].v;
  EXPECT_TRUE(same) << "the edges depend on the backend";
  auto g = apps::graph_from_edges(1024, e1, host);
  std::int64_t top = 0;
  for (vertex_id v = 0; v < g.n; ++v) top = std::max(top, g.degree(v));
  EXPECT_GT(top, 20 * 2 * g.edges() / g.n);  // R-MAT's hubs
  auto other = apps::kronecker_edges(10, 16, 6, host);
  EXPECT_FALSE(other[0].u == e1[0].u && other[1].u == e1[1].u && other[2].u == e1[2].u);
  EXPECT_THROW((void)apps::kronecker_edges(0, 16, 1, host), strata::invalid_argument);
}

TEST(Graph, EdgeListsAndMatrixMarketInput) {
  std::istringstream in("# a comment\n0 1\n\n% another\n1 2 0.5\n  5\t3\n");
  vertex_id n = 0;
  auto edges = apps::read_edge_list(in, "list", n);
  EXPECT_EQ(n, 6);
  ASSERT_EQ(edges.size(), 3u);
  EXPECT_EQ(edges[2].u, 5);
  EXPECT_EQ(edges[2].v, 3);
  for (auto [text, line] : std::vector<std::pair<char const*, int>>{
           {"0 1\n1 x\n", 2}, {"0 1\n\n2\n", 3}, {"-1 2\n", 1}, {"0 1\n1 2a\n", 2}}) {
    std::istringstream bad(text);
    try {
      (void)apps::read_edge_list(bad, "bad", n);
      ADD_FAILURE() << "accepted " << text;
    } catch (strata::parse_error const& e) {
      EXPECT_NE(std::string(e.what()).find("bad:" + std::to_string(line) + ":"), std::string::npos)
          << e.what();
    }
  }
  auto path = (std::filesystem::temp_directory_path() /
               ("strata_apps_graph_" + std::to_string(::getpid()) + ".mtx"))
                  .string();
  std::ofstream(path)
      << "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 3\n2 1\n3 2\n4 4\n";
  auto m = apps::read_matrix_market_edges(path, n);
  std::filesystem::remove(path);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(m.size(), 5u);  // 2 1, 1 2, 3 2, 2 3, 4 4 (a self-loop, dropped by the graph)
}

// A path 0-1-2-3, a triangle 4-5-6 hanging off 2, and 7 alone.
csr_graph small_graph() {
  strata::runtime rt;
  return apps::graph_from_edges(8, {{0, 1}, {1, 2}, {2, 3}, {2, 4}, {4, 5}, {5, 6}, {6, 4}},
                                rt.machine());
}

TEST(Graph, ValidationRejectsBrokenTrees) {
  auto g = small_graph();
  std::vector<vertex_id> good = {1, 1, 1, 2, 2, 4, 4, -1};
  std::vector<std::int32_t> levels;
  EXPECT_EQ(apps::validate_bfs_tree(g, 1, good, &levels), "");
  EXPECT_EQ(levels, apps::serial_bfs_levels(g, 1));
  struct bad_tree {
    std::vector<vertex_id> parent;
    char const* says;
  };
  std::vector<bad_tree> bad = {
      {{1, 0, 1, 2, 2, 4, 4, -1}, "not its own parent"},
      {{1, 1, 1, 2, 2, 6, 5, -1}, "cycle"},                // 5 -> 6 -> 5
      {{1, 1, 1, 2, 2, 4, 2, -1}, "not an edge"},          // 6's parent 2 is no neighbour
      {{1, 1, 1, 2, 2, 6, 4, -1}, "differ by more than"},  // 5 one level too deep
      {{1, 1, 1, 2, -1, -1, -1, -1}, "does not span"},     // 4, 5, 6 left out
      {{1, 1, 1, 2, 2, 4, 4, 9}, "no vertex"},
      {{1, 1, 1, 2, 2, 4, 4}, "entries"},
  };
  for (auto const& b : bad) {
    SCOPED_TRACE(b.says);
    auto why = apps::validate_bfs_tree(g, 1, b.parent);
    EXPECT_NE(why.find(b.says), std::string::npos) << "got: '" << why << "'";
  }
  EXPECT_EQ(apps::traversed_edges(g, levels), 7);
}

// Every place set and direction mode: levels equal the serial BFS's, the tree passes the
// Graph500 rules, and the parents are the same everywhere (the first frontier neighbour).
void check_searches(csr_graph const& g, strata::place const& machine,
                    std::vector<std::string> const& names, std::vector<vertex_id> const& roots) {
  for (auto direction : {apps::bfs_direction::optimizing, apps::bfs_direction::top_down,
                         apps::bfs_direction::bottom_up}) {
    std::vector<std::vector<vertex_id>> first_parents;
    for (auto const& name : names) {
      SCOPED_TRACE(name + " direction " + std::to_string(static_cast<int>(direction)));
      apps::partitioned_bfs search(g, apps::places_named(machine, name), {.direction = direction});
      for (std::size_t i = 0; i < roots.size(); ++i) {
        search.run(roots[i]);
        auto want = apps::serial_bfs_levels(g, roots[i]);
        std::vector<std::int32_t> levels;
        EXPECT_EQ(apps::validate_bfs_tree(g, roots[i], search.parent(), &levels), "");
        EXPECT_EQ(levels, want);
        EXPECT_EQ(search.level(), want);
        if (first_parents.size() <= i) {
          first_parents.push_back(search.parent());
        } else {
          EXPECT_EQ(search.parent(), first_parents[i]) << "parents differ between place sets";
        }
        if (direction == apps::bfs_direction::top_down) {
          EXPECT_EQ(search.directions().find('B'), std::string::npos);
        }
        if (direction == apps::bfs_direction::bottom_up) {
          EXPECT_EQ(search.directions().find('T'), std::string::npos);
        }
      }
    }
  }
}

TEST(Bfs, KroneckerOnHostAndSimPlacesMatchesSerialBfs) {
  strata::runtime rt{strata::runtime_options{.sim_devices = "2:bw=20GB/s,lat=1us;1:units=2"}};
  auto host = rt.machine().slice(strata::isa::host);
  auto g = apps::graph_from_edges(1 << 11, apps::kronecker_edges(11, 16, 3, host), host);
  auto roots = apps::pick_roots(g, 3, 11);
  ASSERT_EQ(roots.size(), 3u);
  std::vector<std::string> names = {"host", "host@serial", "host@openmp", "sim", "host+sim"};
  if (host.processors().size() >= 2) names.push_back("host:2");
  check_searches(g, rt.machine(), names, roots);
  // The optimizing search does switch to bottom-up on a Kronecker graph.
  apps::partitioned_bfs search(g, apps::places_named(rt.machine(), "host"));
  search.run(roots[0]);
  EXPECT_NE(search.directions().find('B'), std::string::npos) << search.directions();
}

TEST(Bfs, UnevenGraphsAndUnreachedVertices) {
  strata::runtime rt{strata::runtime_options{.sim_devices = "2"}};
  // 200 vertices (not a multiple of 64), two components, isolated vertices, a long path.
  std::vector<apps::edge> edges;
  for (vertex_id v = 0; v + 1 < 130; ++v) edges.push_back({v, v + 1});
  for (vertex_id v = 140; v < 190; ++v) edges.push_back({v, 199});
  auto g = apps::graph_from_edges(200, edges, rt.machine());
  check_searches(g, rt.machine(), {"host", "sim", "host+sim"}, {0, 64, 129, 199, 150});
  auto tiny = apps::graph_from_edges(3, {{0, 1}}, rt.machine());  // fewer words than places
  check_searches(tiny, rt.machine(), {"host", "sim", "host+sim"}, {0, 1});
  apps::partitioned_bfs search(tiny, apps::places_named(rt.machine(), "host+sim"));
  search.run(2);  // an isolated root: a tree of one vertex
  EXPECT_EQ(search.parent(), (std::vector<vertex_id>{-1, -1, 2}));
  EXPECT_THROW(search.run(3), strata::invalid_argument);
}

}  // namespace
