// Breadth-first search over several places (Phalanx §V-A), direction-optimizing (Beamer
// et al., SC'12): a Graph500 Kronecker graph or a graph read from an edge list or a Matrix
// Market file, its vertices partitioned over host places and sim devices, searched from
// a few roots; every search is checked against a serial BFS (every vertex's level) and by
// the Graph500 validation rules, and its rate reported in TEPS (traversed edges / s).
// Public API only (apps/common holds the shared code).
//
//   bfs [--scale S] [--edge-factor F] [--edges FILE | --mtx FILE] [--places NAME]...
//       [--roots R] [--direction optimizing|top-down|bottom-up] [--strata-sim-devices=2]
//
// NAME is host, host:K, sim, host+sim (apps/common/places.hpp); by default every set this
// machine has. Exits 1 with a message for bad arguments or files, 2 when a search fails
// its checks.
#include "bfs.hpp"
#include "cli.hpp"
#include "graph.hpp"
#include "places.hpp"

#include <strata/strata.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

apps::args const cli(
    "usage: bfs [--scale S] [--edge-factor F] [--edges FILE | --mtx FILE] [--places "
    "host|host:K|sim|host+sim]... [--roots R] [--direction optimizing|top-down|bottom-up]");

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

namespace {

int app_main(int argc, char** argv) {
  strata::runtime rt(argc, argv);
  int scale = 16, edge_factor = 16, roots = 4;
  std::string edges_file, mtx_file;
  apps::bfs_options options;
  std::vector<std::string> place_names;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (cli.help(arg)) return 0;
    auto value = [&]() -> char const* {
      if (i + 1 >= argc) cli.fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--scale") {
      scale = static_cast<int>(cli.whole(arg, value(), 1, 30));  // 2^scale 32-bit vertex ids
    } else if (arg == "--edge-factor") {
      edge_factor = static_cast<int>(cli.whole(arg, value(), 1, 1 << 16));
    } else if (arg == "--edges") {
      edges_file = value();
    } else if (arg == "--mtx") {
      mtx_file = value();
    } else if (arg == "--places") {
      place_names.push_back(value());
    } else if (arg == "--roots") {
      roots = static_cast<int>(cli.whole(arg, value(), 1, 1 << 16));
    } else if (arg == "--direction") {
      std::string d = value();
      if (d == "optimizing")
        options.direction = apps::bfs_direction::optimizing;
      else if (d == "top-down")
        options.direction = apps::bfs_direction::top_down;
      else if (d == "bottom-up")
        options.direction = apps::bfs_direction::bottom_up;
      else
        cli.fail("--direction '" + d + "' is unknown");
    } else {
      cli.fail("unknown argument '" + arg + "'");
    }
  }
  strata::place machine = rt.machine();
  auto host = machine.slice(strata::isa::host);
  if (place_names.empty()) {
    place_names = {"host", "host:" + std::to_string(host.processors().size())};
    if (!machine.slice(strata::isa::sim).descendants(strata::place_type::device).empty())
      place_names.insert(place_names.end(), {"sim", "host+sim"});
  }

  auto t0 = std::chrono::steady_clock::now();
  apps::vertex_id n = 0;
  std::vector<apps::edge> edges;
  std::string what;
  if (!edges_file.empty()) {
    if (std::error_code ec; std::filesystem::is_directory(edges_file, ec))
      throw strata::parse_error(edges_file + ": is a directory; expected an edge list file");
    std::ifstream in(edges_file);
    if (!in) throw strata::parse_error(edges_file + ": cannot be opened for reading");
    edges = apps::read_edge_list(in, edges_file, n);
    what = edges_file;
  } else if (!mtx_file.empty()) {
    edges = apps::read_matrix_market_edges(mtx_file, n);
    what = mtx_file;
  } else {
    edges = apps::kronecker_edges(scale, edge_factor, 1, host);
    n = apps::vertex_id{1} << scale;
    what =
        "Kronecker scale " + std::to_string(scale) + ", edge factor " + std::to_string(edge_factor);
  }
  auto g = apps::graph_from_edges(n, edges, host);
  edges = {};
  std::printf("bfs: %s: %d vertices, %lld undirected edges (built in %.2f s)\n", what.c_str(), g.n,
              static_cast<long long>(g.edges()), since(t0));

  auto picked = apps::pick_roots(g, roots, 7);
  if (picked.empty()) throw strata::invalid_argument("the graph has no edges to search");
  std::vector<std::vector<std::int32_t>> want;
  std::vector<std::int64_t> traversed;
  for (auto r : picked) {
    want.push_back(apps::serial_bfs_levels(g, r));
    traversed.push_back(apps::traversed_edges(g, want.back()));
  }

  bool all_ok = true;
  for (auto const& name : place_names) {
    apps::partitioned_bfs search(g, apps::places_named(machine, name), options);
    std::printf("  %s:", name.c_str());
    for (auto const& p : search.parts())
      std::printf(" %s [%d, %d)", apps::describe(strata::target(p.where)).c_str(), p.first, p.last);
    std::printf("\n");
    double edges_sum = 0, seconds = 0;
    for (std::size_t i = 0; i < picked.size(); ++i) {
      auto s = std::chrono::steady_clock::now();
      search.run(picked[i]);
      double t = since(s);
      std::vector<std::int32_t> levels;
      std::string why = apps::validate_bfs_tree(g, picked[i], search.parent(), &levels);
      if (why.empty() && levels != want[i]) why = "levels differ from the serial BFS";
      if (why.empty() && search.level() != want[i])
        why = "reported levels differ from the serial BFS";
      all_ok = all_ok && why.empty();
      edges_sum += static_cast<double>(traversed[i]);
      seconds += t;
      std::printf("    root %-9d %8.3f ms  %8.2f MTEPS  levels %-14s %s\n", picked[i], t * 1e3,
                  static_cast<double>(traversed[i]) / t / 1e6, search.directions().c_str(),
                  why.empty() ? "valid" : ("INVALID: " + why).c_str());
    }
    std::printf("    mean rate %.2f MTEPS\n", edges_sum / seconds / 1e6);
  }
  return all_ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("bfs", argc, argv, app_main);
}
