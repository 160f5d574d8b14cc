// What a user would otherwise write: Boost.Graph's BFS, or an OpenMP top-down BFS.
#include "bfs/peer.hpp"

#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>

#include <algorithm>
#include <atomic>
#include <utility>

namespace strata::bench::bfs_peer {

using graph_t =
    boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, boost::no_property,
                                       boost::no_property, std::uint32_t, std::uint64_t>;

struct boost_graph {
  graph_t g;
};

void boost_deleter::operator()(boost_graph* g) const {
  delete g;
}

boost_handle make_boost(std::int32_t n, std::int64_t const* offsets, std::int32_t const* adj) {
  // Pairs in source order, so Boost's sorted-edges constructor applies.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  edges.reserve(static_cast<std::size_t>(offsets[n]));
  for (std::int32_t v = 0; v < n; ++v)
    for (auto k = offsets[v]; k < offsets[v + 1]; ++k)
      edges.emplace_back(static_cast<std::uint32_t>(v), static_cast<std::uint32_t>(adj[k]));
  return boost_handle(new boost_graph{
      graph_t(boost::edges_are_sorted, edges.begin(), edges.end(), static_cast<std::uint32_t>(n))});
}

void boost_bfs(boost_graph const& bg, std::int32_t root, std::vector<std::int32_t>& parent) {
  auto const& g = bg.g;
  auto const n = num_vertices(g);
  std::vector<std::uint32_t> pred(n, static_cast<std::uint32_t>(-1));
  pred[static_cast<std::size_t>(root)] = static_cast<std::uint32_t>(root);
  auto index = get(boost::vertex_index, g);
  auto pred_map = boost::make_iterator_property_map(pred.begin(), index);
  boost::breadth_first_search(g, static_cast<std::uint32_t>(root),
                              boost::visitor(boost::make_bfs_visitor(
                                  boost::record_predecessors(pred_map, boost::on_tree_edge()))));
  parent.resize(n);
  std::transform(pred.begin(), pred.end(), parent.begin(),
                 [](std::uint32_t p) { return static_cast<std::int32_t>(p); });
}

void omp_top_down(std::int32_t n, std::int64_t const* offsets, std::int32_t const* adj,
                  std::int32_t root, std::vector<std::int32_t>& parent,
                  std::vector<std::int32_t>& queue, int threads) {
  parent.resize(static_cast<std::size_t>(n));
  queue.resize(static_cast<std::size_t>(n));
  std::int32_t* par = parent.data();
#pragma omp parallel for num_threads(threads)
  for (std::int32_t v = 0; v < n; ++v) par[v] = -1;
  par[root] = root;
  // The frontier is queue[head, tail); the next one is appended after it.
  std::int64_t head = 0, tail = 1;
  queue[0] = root;
  while (head < tail) {
    std::atomic<std::int64_t> end{tail};
#pragma omp parallel num_threads(threads)
    {
      std::int32_t local[256];
      int count = 0;
      auto flush = [&] {
        auto at = end.fetch_add(count, std::memory_order_relaxed);
        std::copy(local, local + count, queue.data() + at);
        count = 0;
      };
#pragma omp for schedule(dynamic, 64) nowait
      for (std::int64_t i = head; i < tail; ++i) {
        std::int32_t v = queue[static_cast<std::size_t>(i)];
        for (auto k = offsets[v]; k < offsets[v + 1]; ++k) {
          std::int32_t u = adj[k];
          std::atomic_ref<std::int32_t> pu(par[u]);
          std::int32_t expected = -1;
          if (pu.load(std::memory_order_relaxed) == -1 &&
              pu.compare_exchange_strong(expected, v, std::memory_order_relaxed)) {
            local[count++] = u;
            if (count == 256) flush();
          }
        }
      }
      if (count) flush();
    }
    head = tail;
    tail = end.load();
  }
}

}  // namespace strata::bench::bfs_peer
