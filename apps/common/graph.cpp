#include "graph.hpp"

#include "sparse.hpp"

#include <algorithm>
#include <charconv>
#include <istream>
#include <limits>
#include <queue>
#include <string_view>

namespace apps {

csr_graph graph_from_edges(vertex_id n, std::vector<edge> const& edges, strata::target where) {
  if (n < 0) throw strata::invalid_argument("graph_from_edges: " + std::to_string(n) + " vertices");
  auto const m = static_cast<strata::index_t>(edges.size());
  edge const* e = edges.data();
  for (strata::index_t i = 0; i < m; ++i)
    if (e[i].u < 0 || e[i].u >= n || e[i].v < 0 || e[i].v >= n)
      throw strata::invalid_argument("graph_from_edges: edge " + std::to_string(i) + " {" +
                                     std::to_string(e[i].u) + ", " + std::to_string(e[i].v) +
                                     "} has an endpoint outside [0, " + std::to_string(n) + ")");
  auto const un = static_cast<std::size_t>(n);
  // Both directions of every edge that is not a self-loop: count, place, then sort and
  // deduplicate each list, then compact. Each pass is one kernel on `where`.
  std::vector<std::int64_t> count(un + 1, 0);
  std::int64_t* c = count.data();
  auto over_edges = strata::divide_work(where, std::max<strata::index_t>(m, 1));
  strata::launch(where, over_edges, [=](auto const& self) {
    for (auto i : self.elements(m))
      if (e[i].u != e[i].v) {
        strata::atomic_add(&c[e[i].u + 1], std::int64_t{1});
        strata::atomic_add(&c[e[i].v + 1], std::int64_t{1});
      }
  }).wait();
  for (std::size_t v = 0; v < un; ++v) count[v + 1] += count[v];
  std::vector<std::int64_t> next(count.begin(), count.end() - 1);
  std::vector<vertex_id> both(static_cast<std::size_t>(count[un]));
  std::int64_t* nx = next.data();
  vertex_id* b = both.data();
  strata::launch(where, over_edges, [=](auto const& self) {
    for (auto i : self.elements(m))
      if (e[i].u != e[i].v) {
        b[strata::atomic_add(&nx[e[i].u], std::int64_t{1})] = e[i].v;
        b[strata::atomic_add(&nx[e[i].v], std::int64_t{1})] = e[i].u;
      }
  }).wait();
  // Sort each list; next[v] becomes the list's length after removing duplicates.
  auto over_vertices = strata::divide_work(where, std::max<strata::index_t>(n, 1));
  strata::launch(where, over_vertices, [=](auto const& self) {
    for (auto v : self.elements(strata::index_t{n})) {
      vertex_id* first = b + c[v];
      vertex_id* last = b + c[v + 1];
      std::sort(first, last);
      nx[v] = std::unique(first, last) - first;
    }
  }).wait();
  csr_graph g;
  g.n = n;
  g.offsets.assign(un + 1, 0);
  for (std::size_t v = 0; v < un; ++v) g.offsets[v + 1] = g.offsets[v] + next[v];
  g.adj.resize(static_cast<std::size_t>(g.offsets[un]));
  std::int64_t const* o = g.offsets.data();
  vertex_id* adj = g.adj.data();
  strata::launch(where, over_vertices, [=](auto const& self) {
    for (auto v : self.elements(strata::index_t{n}))
      std::copy(b + c[v], b + c[v] + nx[v], adj + o[v]);
  }).wait();
  return g;
}

std::vector<edge> kronecker_edges(int scale, int edge_factor, std::uint64_t seed,
                                  strata::target where) {
  if (scale < 1 || scale > 30)
    throw strata::invalid_argument("kronecker_edges: scale " + std::to_string(scale) +
                                   "; expected 1 to 30 (2^scale vertices in 32-bit ids)");
  if (edge_factor < 1)
    throw strata::invalid_argument("kronecker_edges: edge factor " + std::to_string(edge_factor) +
                                   "; expected at least 1");
  strata::index_t const n = strata::index_t{1} << scale;
  strata::index_t const m = n * edge_factor;
  // The random relabelling (Graph500 permutes vertex labels so that the generator's
  // structure, low ids being the hubs, does not show): Fisher-Yates with Philox stream 1.
  std::vector<vertex_id> perm(static_cast<std::size_t>(n));
  for (strata::index_t v = 0; v < n; ++v)
    perm[static_cast<std::size_t>(v)] = static_cast<vertex_id>(v);
  strata::philox4x32 shuffle(seed, 0, 1);
  for (strata::index_t i = n - 1; i > 0; --i)
    std::swap(perm[static_cast<std::size_t>(i)],
              perm[static_cast<std::size_t>(strata::uniform_int(shuffle, strata::index_t{0}, i))]);
  std::vector<edge> edges(static_cast<std::size_t>(m));
  edge* out = edges.data();
  vertex_id const* p = perm.data();
  // R-MAT: at each of `scale` levels pick a quadrant with probabilities A, B, C, D; as in
  // the reference code, first the row bit (1 with probability C + D), then the column bit
  // given the row bit. 16-bit uniforms are plenty for these probabilities.
  double const a = 0.57, b = 0.19, c = 0.19;
  double const ab = a + b, c_norm = c / (1 - ab), a_norm = a / ab;
  double const t_row = ab * 65536.0, t_col0 = a_norm * 65536.0, t_col1 = c_norm * 65536.0;
  strata::launch(where, strata::divide_work(where, m), [=](auto const& self) {
    for (auto i : self.elements(m)) {
      strata::philox4x32 g(seed, static_cast<std::uint64_t>(i));
      std::uint32_t row = 0, col = 0;
      for (int level = 0; level < scale; ++level) {
        std::uint32_t r = g();
        bool const row_bit = static_cast<double>(r & 0xffffu) > t_row;
        bool const col_bit = static_cast<double>(r >> 16) > (row_bit ? t_col1 : t_col0);
        row |= static_cast<std::uint32_t>(row_bit) << level;
        col |= static_cast<std::uint32_t>(col_bit) << level;
      }
      out[i] = {p[row], p[col]};
    }
  }).wait();
  return edges;
}

namespace {

[[noreturn]] void parse_fail(std::string const& name, std::int64_t line, std::string const& what) {
  throw strata::parse_error(name + ":" + std::to_string(line) + ": " + what);
}

}  // namespace

std::vector<edge> read_edge_list(std::istream& in, std::string const& name, vertex_id& n) {
  std::vector<edge> edges;
  std::string line;
  std::int64_t line_no = 0;
  std::int64_t largest = -1;
  while (std::getline(in, line)) {
    ++line_no;
    std::string_view s(line);
    auto skip = [&] {
      while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    };
    skip();
    if (s.empty() || s.front() == '#' || s.front() == '%') continue;
    std::int64_t ends[2];
    for (auto& x : ends) {
      skip();
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
      bool const separated =
          ptr == s.data() + s.size() || *ptr == ' ' || *ptr == '\t' || *ptr == '\r';
      if (ec != std::errc{} || !separated)
        parse_fail(name, line_no,
                   "'" + line + "' is not an edge; expected two vertex ids 'u v' (0-based)");
      if (x < 0 || x >= std::numeric_limits<vertex_id>::max())
        parse_fail(name, line_no,
                   "vertex id " + std::to_string(x) + " is outside [0, 2^31-1) (ids are 0-based)");
      s.remove_prefix(static_cast<std::size_t>(ptr - s.data()));
    }
    largest = std::max({largest, ends[0], ends[1]});
    edges.push_back({static_cast<vertex_id>(ends[0]), static_cast<vertex_id>(ends[1])});
  }
  if (in.bad()) parse_fail(name, line_no, "read error");
  n = static_cast<vertex_id>(largest + 1);
  return edges;
}

std::vector<edge> read_matrix_market_edges(std::string const& path, vertex_id& n) {
  csr_matrix a = read_matrix_market_file(path);
  if (a.rows != a.cols)
    throw strata::parse_error(path + ": a " + std::to_string(a.rows) + " x " +
                              std::to_string(a.cols) +
                              " matrix is no graph; expected a square adjacency matrix");
  n = a.rows;
  std::vector<edge> edges;
  edges.reserve(a.col.size());
  for (vertex_id r = 0; r < a.rows; ++r)
    for (auto k = a.row_ptr[static_cast<std::size_t>(r)];
         k < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++k)
      edges.push_back({r, a.col[static_cast<std::size_t>(k)]});
  return edges;
}

std::vector<std::int32_t> serial_bfs_levels(csr_graph const& g, vertex_id root) {
  if (root < 0 || root >= g.n)
    throw strata::invalid_argument("serial_bfs_levels: root " + std::to_string(root) +
                                   " is outside [0, " + std::to_string(g.n) + ")");
  std::vector<std::int32_t> level(static_cast<std::size_t>(g.n), -1);
  std::vector<vertex_id> queue{root};
  level[static_cast<std::size_t>(root)] = 0;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    vertex_id v = queue[head];
    for (auto k = g.offsets[static_cast<std::size_t>(v)];
         k < g.offsets[static_cast<std::size_t>(v) + 1]; ++k) {
      vertex_id u = g.adj[static_cast<std::size_t>(k)];
      if (level[static_cast<std::size_t>(u)] < 0) {
        level[static_cast<std::size_t>(u)] = level[static_cast<std::size_t>(v)] + 1;
        queue.push_back(u);
      }
    }
  }
  return level;
}

std::string validate_bfs_tree(csr_graph const& g, vertex_id root,
                              std::vector<vertex_id> const& parent,
                              std::vector<std::int32_t>* levels_out) {
  auto const n = static_cast<std::size_t>(g.n);
  if (parent.size() != n)
    return "the parent array has " + std::to_string(parent.size()) + " entries for " +
           std::to_string(n) + " vertices";
  if (root < 0 || static_cast<std::size_t>(root) >= n) return "the root is no vertex";
  if (parent[static_cast<std::size_t>(root)] != root) return "the root is not its own parent";
  auto has_edge = [&](vertex_id u, vertex_id v) {
    auto first = g.adj.begin() + g.offsets[static_cast<std::size_t>(u)];
    auto last = g.adj.begin() + g.offsets[static_cast<std::size_t>(u) + 1];
    return std::binary_search(first, last, v);
  };
  // Levels from the tree: follow each vertex's parents up to a vertex of known level; a
  // chain longer than n vertices is a cycle.
  constexpr std::int32_t unknown = -2;
  std::vector<std::int32_t> level(n, unknown);
  level[static_cast<std::size_t>(root)] = 0;
  std::vector<vertex_id> chain;
  for (std::size_t s = 0; s < n; ++s) {
    if (level[s] != unknown) continue;
    chain.clear();
    auto v = static_cast<vertex_id>(s);
    while (level[static_cast<std::size_t>(v)] == unknown) {
      vertex_id p = parent[static_cast<std::size_t>(v)];
      if (p == -1) {
        level[static_cast<std::size_t>(v)] = -1;
        break;
      }
      if (p < 0 || static_cast<std::size_t>(p) >= n)
        return "vertex " + std::to_string(v) + " has parent " + std::to_string(p) +
               ", which is no vertex";
      if (!has_edge(v, p))
        return "tree edge " + std::to_string(v) + " -> parent " + std::to_string(p) +
               " is not an edge of the graph";
      chain.push_back(v);
      if (chain.size() > n)
        return "the parent array has a cycle through vertex " + std::to_string(v);
      v = p;
    }
    std::int32_t l = level[static_cast<std::size_t>(v)];
    if (l == -1 && !chain.empty())
      return "vertex " + std::to_string(chain.back()) + "'s parent chain ends at vertex " +
             std::to_string(v) + ", which is not in the tree";
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      level[static_cast<std::size_t>(*it)] = ++l;
  }
  for (std::size_t u = 0; u < n; ++u)
    for (auto k = g.offsets[u]; k < g.offsets[u + 1]; ++k) {
      auto v = static_cast<std::size_t>(g.adj[static_cast<std::size_t>(k)]);
      if ((level[u] < 0) != (level[v] < 0))
        return "edge {" + std::to_string(u) + ", " + std::to_string(v) +
               "} joins a vertex in the tree and one outside it: the tree does not span the "
               "component";
      if (level[u] >= 0 && (level[u] - level[v] > 1 || level[v] - level[u] > 1))
        return "edge {" + std::to_string(u) + ", " + std::to_string(v) + "} joins levels " +
               std::to_string(level[u]) + " and " + std::to_string(level[v]) +
               ", which differ by more than one";
    }
  if (levels_out) *levels_out = std::move(level);
  return {};
}

std::int64_t traversed_edges(csr_graph const& g, std::vector<std::int32_t> const& levels) {
  std::int64_t sum = 0;
  for (vertex_id v = 0; v < g.n; ++v)
    if (levels[static_cast<std::size_t>(v)] >= 0) sum += g.degree(v);
  return sum / 2;
}

std::vector<vertex_id> pick_roots(csr_graph const& g, int count, std::uint64_t seed) {
  std::vector<vertex_id> roots;
  if (g.adj.empty() || count < 1) return roots;
  strata::philox4x32 rng(seed, 0, 2);
  for (int tries = 0; static_cast<int>(roots.size()) < count && tries < 64 * count + 1000;
       ++tries) {
    vertex_id v = strata::uniform_int(rng, vertex_id{0}, g.n - 1);
    if (g.degree(v) > 0 && std::find(roots.begin(), roots.end(), v) == roots.end())
      roots.push_back(v);
  }
  // Few vertices with edges among many (an outside probe: one edge among 100,001
  // vertices was "no edges to search"): take them in order, as the random probes missed.
  for (vertex_id v = 0; v < g.n && static_cast<int>(roots.size()) < count; ++v)
    if (g.degree(v) > 0 && std::find(roots.begin(), roots.end(), v) == roots.end())
      roots.push_back(v);
  return roots;
}

}  // namespace apps
