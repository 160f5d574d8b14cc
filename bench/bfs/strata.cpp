// BFS (Phalanx §V-A) on a Graph500 Kronecker graph (scale 22, edge factor 16; --quick:
// scale 14): apps/common's direction-optimizing BFS on one host place (threads backend)
// against a hand-written OpenMP top-down BFS at the same thread count and Boost.Graph's
// serial breadth_first_search on its compressed_sparse_row_graph. Each side searches from
// the same roots (Graph500: random vertices with an edge); every side's last tree passes
// the Graph500 validation and matches the serial BFS's levels. Rates in TEPS: the edges
// of the searched components over the time, summed over the roots (Graph500 counts each
// undirected edge of the component once).
#include <stdexcept>
#include <string>
#include <vector>

#include "bfs.hpp"
#include "bfs/peer.hpp"
#include "graph.hpp"
#include "harness.hpp"

namespace strata::bench {
namespace {

void validate(apps::csr_graph const& g, apps::vertex_id root,
              std::vector<apps::vertex_id> const& parent, std::vector<std::int32_t> const& want,
              std::string const& who) {
  std::vector<std::int32_t> levels;
  auto why = apps::validate_bfs_tree(g, root, parent, &levels);
  if (why.empty() && levels != want) why = "levels differ from the serial BFS";
  if (!why.empty())
    throw std::runtime_error("bfs benchmark: " + who + " from root " + std::to_string(root) + ": " +
                             why);
}

void run_bfs(context& ctx) {
  bool const quick = ctx.opts().quick;
  int const scale = quick ? 14 : 22, roots_wanted = quick ? 2 : 4;
  auto host = ctx.cpus(ctx.thread_counts().back());
  apps::csr_graph g;
  {
    auto edges = apps::kronecker_edges(scale, 16, 1, on(host, backend_id::threads));
    g = apps::graph_from_edges(apps::vertex_id{1} << scale, edges, on(host, backend_id::threads));
  }
  auto roots = apps::pick_roots(g, roots_wanted, 7);
  std::vector<std::vector<std::int32_t>> want;
  double edges = 0;
  for (auto r : roots) {
    want.push_back(apps::serial_bfs_levels(g, r));
    edges += static_cast<double>(apps::traversed_edges(g, want.back()));
  }
  // Scale 22 searches take seconds in Boost: fewer repeats than the harness's default.
  int const repeats = quick ? ctx.opts().repeats : std::min(ctx.opts().repeats, 3);
  auto boost = bfs_peer::make_boost(g.n, g.offsets.data(), g.adj.data());
  std::vector<std::int32_t> peer_parent, queue;
  std::string const graph = "kronecker-" + std::to_string(scale);

  for (int t : ctx.thread_counts()) {
    apps::partitioned_bfs search(g, {on(ctx.cpus(t), backend_id::threads)});
    auto strata_side = [&] {
      for (auto r : roots) search.run(r);
    };
    auto report = [&](std::string const& peer, double ts, double tp, std::string const& note) {
      result r{"bfs", graph + "/threads/" + std::to_string(t), edges, ts, peer, tp};
      r.extra = {{"threads", t},
                 {"scale", scale},
                 {"roots", static_cast<double>(roots.size())},
                 {"strata_mteps", edges / ts / 1e6},
                 {"peer_mteps", edges / tp / 1e6}};
      r.note = note;
      ctx.report(r);
    };
    {
      auto [ts, tp] = compare(repeats, strata_side, [&] {
        for (auto r : roots)
          bfs_peer::omp_top_down(g.n, g.offsets.data(), g.adj.data(), r, peer_parent, queue, t);
      });
      validate(g, roots.back(), search.parent(), want.back(), "strata");
      validate(g, roots.back(), peer_parent, want.back(), "the OpenMP top-down BFS");
      report("omp-top-down/" + std::to_string(t), ts, tp,
             "size = edges of the searched components (summed over roots); strata levels " +
                 search.directions());
    }
    {
      auto [ts, tp] = compare(quick ? repeats : 1, strata_side, [&] {
        for (auto r : roots) bfs_peer::boost_bfs(*boost, r, peer_parent);
      });
      validate(g, roots.back(), peer_parent, want.back(), "Boost.Graph's BFS");
      report("boost-bfs/1", ts, tp, "Boost.Graph is serial; compressed_sparse_row_graph");
    }
  }
}

registrar bfs_r("bfs",
                "direction-optimizing BFS (apps/common) vs OpenMP top-down BFS and Boost.Graph "
                "breadth_first_search; Graph500 Kronecker scale 22, TEPS",
                run_bfs);

}  // namespace
}  // namespace strata::bench
