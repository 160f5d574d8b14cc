#include "bfs.hpp"

#include "bfs_kernels.hpp"
#include "places.hpp"

#include <algorithm>

namespace apps {

std::vector<vertex_id> split_vertices(csr_graph const& g, int parts,
                                      std::vector<double> const& shares) {
  if (parts < 1)
    throw strata::invalid_argument("split_vertices: " + std::to_string(parts) + " parts");
  strata::index_t const words = (static_cast<strata::index_t>(g.n) + 63) / 64;
  auto weight = [&](strata::index_t w) {  // of the vertices before word w
    auto v = static_cast<std::size_t>(std::min<strata::index_t>(64 * w, g.n));
    return static_cast<double>(g.offsets[v]) + static_cast<double>(v);
  };
  std::vector<double> cut{0.0};
  for (int p = 0; p < parts; ++p)
    cut.push_back(cut.back() + (shares.empty() ? 1.0 : shares[static_cast<std::size_t>(p)]));
  std::vector<vertex_id> bounds{0};
  strata::index_t w = 0;
  for (int p = 1; p < parts; ++p) {
    double const goal = weight(words) * cut[static_cast<std::size_t>(p)] / cut.back();
    strata::index_t lo = w, hi = words;
    while (lo < hi) {
      strata::index_t mid = lo + (hi - lo) / 2;
      if (weight(mid) < goal)
        lo = mid + 1;
      else
        hi = mid;
    }
    w = lo;
    bounds.push_back(static_cast<vertex_id>(std::min<strata::index_t>(64 * w, g.n)));
  }
  bounds.push_back(g.n);
  return bounds;
}

namespace {

template <class T>
using device_buffer = strata::buffer<T, 1, strata::sim_space>;

struct part {
  strata::target where;
  bool device = false;
  vertex_id first = 0, last = 0;
  strata::index_t first_word = 0, words = 0;  // the part's words of the bitmaps
  std::unique_ptr<strata::queue> q;
  std::int64_t counts[2] = {0, 0};  // host parts count here; devices' counts land here
  // Device parts: their lists (row_ptr rebased) and their own bitmaps and results.
  device_buffer<std::int64_t> d_row_ptr, d_counts;
  device_buffer<vertex_id> d_adj, d_parent;
  device_buffer<std::int32_t> d_level;
  device_buffer<bfs_word> d_frontier, d_visited, d_disc, d_next;
  std::vector<bfs_word> staging;  // the device's disc bitmap, gathered on the host
};

template <class T>
std::size_t at_least_one(T n) {
  return std::max<std::size_t>(static_cast<std::size_t>(n), 1);
}

}  // namespace

struct partitioned_bfs::state {
  csr_graph const* g;
  bfs_options options;
  std::uint32_t host_memory = 0;
  strata::index_t words = 0;
  std::vector<part> parts;
  std::vector<vertex_id> parent;
  std::vector<std::int32_t> level;
  std::vector<bfs_word> frontier, next, visited, disc;
  std::string directions;

  template <class T>
  auto host(T* p) const {
    return host_ptr(p, host_memory);
  }
};

partitioned_bfs::partitioned_bfs(csr_graph const& g, std::vector<strata::target> const& where,
                                 bfs_options options)
    : state_(std::make_unique<state>()) {
  if (where.empty()) throw strata::invalid_argument("partitioned_bfs: no places to run on");
  if (!(options.alpha > 0) || !(options.beta > 0))
    throw strata::invalid_argument("partitioned_bfs: alpha " + std::to_string(options.alpha) +
                                   " and beta " + std::to_string(options.beta) +
                                   " must be positive");
  auto& s = *state_;
  s.g = &g;
  s.options = options;
  s.host_memory = host_memory_id(where.front().where);
  s.words = (static_cast<strata::index_t>(g.n) + 63) / 64;
  auto const n = static_cast<std::size_t>(g.n), words = at_least_one(s.words);
  s.parent.assign(n, -1);
  s.level.assign(n, -1);
  s.frontier.assign(words, 0);
  s.next.assign(words, 0);
  s.visited.assign(words, 0);
  s.disc.assign(words, 0);
  std::vector<double> shares;
  for (auto const& t : where) shares.push_back(place_share(t.where));
  auto bounds = split_vertices(g, static_cast<int>(where.size()), shares);
  std::vector<strata::event> copies;
  std::vector<std::vector<std::int64_t>> rebased;  // alive until copied
  for (std::size_t i = 0; i < where.size(); ++i) {
    part p{where[i]};
    p.device = is_device(where[i].where);
    p.first = bounds[i];
    p.last = bounds[i + 1];
    p.first_word = p.first / 64;
    p.words = (static_cast<strata::index_t>(p.last) + 63) / 64 - p.first_word;
    if (p.last == p.first) continue;  // too few vertices for every place: it sits out
    if (p.device) {
      auto const& d = p.where.where;
      auto const vertices = static_cast<std::size_t>(p.last - p.first);
      auto const k0 = g.offsets[static_cast<std::size_t>(p.first)];
      auto const entries =
          static_cast<std::size_t>(g.offsets[static_cast<std::size_t>(p.last)] - k0);
      p.q = std::make_unique<strata::queue>(p.where);
      p.d_row_ptr = {d, vertices + 1};
      p.d_counts = {d, std::size_t{2}};
      p.d_adj = {d, at_least_one(entries)};
      p.d_parent = {d, at_least_one(vertices)};
      p.d_level = {d, at_least_one(vertices)};
      p.d_frontier = {d, words};
      p.d_visited = {d, words};
      p.d_disc = {d, words};
      p.d_next = {d, at_least_one(p.words)};
      p.staging.assign(words, 0);
      auto& r = rebased.emplace_back(vertices + 1);
      for (std::size_t v = 0; v <= vertices; ++v)
        r[v] = g.offsets[static_cast<std::size_t>(p.first) + v] - k0;
      copies.push_back(p.q->copy(p.d_row_ptr.data(), s.host(r.data()), vertices + 1));
      if (entries > 0)
        copies.push_back(p.q->copy(p.d_adj.data(), s.host(g.adj.data() + k0), entries));
    }
    s.parts.push_back(std::move(p));
  }
  strata::wait_all(copies);
}

partitioned_bfs::~partitioned_bfs() = default;
partitioned_bfs::partitioned_bfs(partitioned_bfs&&) noexcept = default;
partitioned_bfs& partitioned_bfs::operator=(partitioned_bfs&&) noexcept = default;

void partitioned_bfs::run(vertex_id root) {
  auto& s = *state_;
  auto const& g = *s.g;
  if (root < 0 || root >= g.n)
    throw strata::invalid_argument("partitioned_bfs::run: root " + std::to_string(root) +
                                   " is outside [0, " + std::to_string(g.n) + ")");
  auto const words = static_cast<std::size_t>(s.words);
  auto host_words = [&](part const& p, std::vector<bfs_word>& v) {
    return s.host(v.data() + p.first_word);
  };
  std::vector<strata::event> done;
  auto wait = [&] {
    strata::wait_all(done);
    done.clear();
  };

  // Reset: the host's bitmaps here, each part's parents and levels where they live.
  std::fill(s.frontier.begin(), s.frontier.end(), 0);
  std::fill(s.visited.begin(), s.visited.end(), 0);
  std::fill(s.disc.begin(), s.disc.end(), 0);
  for (auto& p : s.parts) {
    auto const vertices = static_cast<strata::index_t>(p.last - p.first);
    if (p.device) {
      p.q->launch(strata::divide_work(p.where, std::max(vertices, s.words)), bfs_reset_kernel{},
                  vertices, p.d_parent.data(), p.d_level.data(), s.words, p.d_visited.data(),
                  p.d_disc.data());
    } else {
      done.push_back(strata::launch(
          p.where, strata::divide_work(p.where, vertices), bfs_reset_kernel{}, vertices,
          s.parent.data() + p.first, s.level.data() + p.first, strata::index_t{0},
          static_cast<bfs_word*>(nullptr), static_cast<bfs_word*>(nullptr)));
    }
  }
  s.frontier[static_cast<std::size_t>(root) / 64] |= bfs_word{1} << (root % 64);
  s.visited[static_cast<std::size_t>(root) / 64] |= bfs_word{1} << (root % 64);
  vertex_id const root_parent = root;
  std::int32_t const root_level = 0;
  for (auto& p : s.parts)
    if (p.device && root >= p.first && root < p.last) {
      p.q->copy(p.d_parent.data() + (root - p.first), s.host(&root_parent), 1);
      p.q->copy(p.d_level.data() + (root - p.first), s.host(&root_level), 1);
    }
  wait();
  s.parent[static_cast<std::size_t>(root)] = root;
  s.level[static_cast<std::size_t>(root)] = 0;
  for (auto& p : s.parts)
    if (p.device) p.q->wait();

  // Beamer's counters: the frontier's vertices and edges, the unexplored vertices' edges.
  std::int64_t frontier_vertices = 1, frontier_edges = g.degree(root);
  std::int64_t unexplored_edges = static_cast<std::int64_t>(g.adj.size()) - frontier_edges;
  bool top_down = s.options.direction != bfs_direction::bottom_up;
  s.directions.clear();
  for (std::int32_t depth = 0;; ++depth) {
    if (s.options.direction == bfs_direction::optimizing) {
      if (top_down && static_cast<double>(frontier_edges) >
                          static_cast<double>(unexplored_edges) / s.options.alpha)
        top_down = false;
      else if (!top_down &&
               static_cast<double>(frontier_vertices) < static_cast<double>(g.n) / s.options.beta)
        top_down = true;
    }
    s.directions += top_down ? 'T' : 'B';
    for (auto& p : s.parts) {
      p.counts[0] = p.counts[1] = 0;
      if (!p.device) continue;
      p.q->copy(p.d_frontier.data(), s.host(s.frontier.data()), words);
      p.q->launch(strata::divide_work(p.where, s.words), bfs_level_start_kernel{}, s.words,
                  p.d_frontier.data(), p.d_visited.data(), p.d_disc.data(), p.d_counts.data());
    }
    if (top_down) {
      // Expand everywhere; gather the devices' discoveries into the host's bitmap.
      for (auto& p : s.parts) {
        if (p.words == 0) continue;
        auto shape = strata::divide_work(p.where, p.words);
        if (p.device) {
          p.q->launch(shape, bfs_expand_kernel{}, p.first_word, p.words, p.d_row_ptr.data(),
                      p.d_adj.data(), p.d_frontier.data(), p.d_visited.data(), p.d_disc.data());
          done.push_back(p.q->copy(s.host(p.staging.data()), p.d_disc.data(), words));
        } else {
          done.push_back(strata::launch(p.where, shape, bfs_expand_kernel{}, p.first_word, p.words,
                                        g.offsets.data() + p.first, g.adj.data(), s.frontier.data(),
                                        s.visited.data(), s.disc.data()));
        }
      }
      wait();
      for (auto& p : s.parts)
        if (p.device && p.words > 0)
          for (std::size_t w = 0; w < words; ++w) s.disc[w] |= p.staging[w];
      for (auto& p : s.parts) {
        if (p.words == 0) continue;
        auto shape = strata::divide_work(p.where, p.words);
        if (p.device) {
          p.q->copy(p.d_disc.data() + p.first_word, host_words(p, s.disc),
                    static_cast<std::size_t>(p.words));
          p.q->launch(shape, bfs_claim_kernel{}, p.first_word, p.words, p.d_row_ptr.data(),
                      p.d_adj.data(), p.d_frontier.data(), p.d_visited.data(), p.d_disc.data(),
                      p.d_next.data(), p.d_parent.data(), p.d_level.data(), depth,
                      p.d_counts.data());
        } else {
          done.push_back(strata::launch(p.where, shape, bfs_claim_kernel{}, p.first_word, p.words,
                                        g.offsets.data() + p.first, g.adj.data(), s.frontier.data(),
                                        s.visited.data(), s.disc.data(),
                                        s.next.data() + p.first_word, s.parent.data() + p.first,
                                        s.level.data() + p.first, depth, p.counts));
        }
      }
    } else {
      for (auto& p : s.parts) {
        if (p.words == 0) continue;
        auto shape = strata::divide_work(p.where, p.words);
        if (p.device)
          p.q->launch(shape, bfs_bottom_up_kernel{}, p.first_word, p.words, g.n, p.d_row_ptr.data(),
                      p.d_adj.data(), p.d_frontier.data(), p.d_visited.data(), p.d_next.data(),
                      p.d_parent.data(), p.d_level.data(), depth, p.d_counts.data());
        else
          done.push_back(strata::launch(p.where, shape, bfs_bottom_up_kernel{}, p.first_word,
                                        p.words, g.n, g.offsets.data() + p.first, g.adj.data(),
                                        s.frontier.data(), s.visited.data(),
                                        s.next.data() + p.first_word, s.parent.data() + p.first,
                                        s.level.data() + p.first, depth, p.counts));
      }
    }
    // Gather the devices' parts of the next frontier and their counts.
    for (auto& p : s.parts) {
      if (!p.device || p.words == 0) continue;
      p.q->copy(host_words(p, s.next), p.d_next.data(), static_cast<std::size_t>(p.words));
      done.push_back(p.q->copy(s.host(p.counts), p.d_counts.data(), 2));
    }
    wait();
    frontier_vertices = frontier_edges = 0;
    for (auto& p : s.parts) {
      frontier_vertices += p.counts[0];
      frontier_edges += p.counts[1];
      if (!p.device) continue;
      // The host's view of the devices' vertices: visited for the host parts' expand,
      // disc cleared for the next level (their claim cleared the devices' own copies).
      for (auto w = p.first_word; w < p.first_word + p.words; ++w) {
        s.visited[static_cast<std::size_t>(w)] |= s.next[static_cast<std::size_t>(w)];
        s.disc[static_cast<std::size_t>(w)] = 0;
      }
    }
    if (frontier_vertices == 0) break;
    unexplored_edges -= frontier_edges;
    std::swap(s.frontier, s.next);
  }

  // The devices' parents and levels into the host's arrays.
  for (auto& p : s.parts) {
    if (!p.device || p.last == p.first) continue;
    auto const vertices = static_cast<std::size_t>(p.last - p.first);
    p.q->copy(s.host(s.parent.data() + p.first), p.d_parent.data(), vertices);
    done.push_back(p.q->copy(s.host(s.level.data() + p.first), p.d_level.data(), vertices));
  }
  wait();
}

std::vector<vertex_id> const& partitioned_bfs::parent() const {
  return state_->parent;
}
std::vector<std::int32_t> const& partitioned_bfs::level() const {
  return state_->level;
}
std::string const& partitioned_bfs::directions() const {
  return state_->directions;
}

std::vector<bfs_part_info> partitioned_bfs::parts() const {
  std::vector<bfs_part_info> out;
  for (auto const& p : state_->parts) out.push_back({p.where.where, p.first, p.last, p.device});
  return out;
}

}  // namespace apps
