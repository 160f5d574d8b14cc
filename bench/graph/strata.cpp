// Task-graph scheduling (Ripple §6): four graph shapes of tiny tasks, built once and run
// many times, against oneTBB flow_graph and OpenMP `task depend` running the same shapes
// with the same task body (bench/graph/peers.cpp), at 1 and all threads.
//
//   graph-chain      a linear chain of 10^5 tasks (pure scheduling latency)
//   graph-tree       a binary tree of depth 18, root first (2^18 - 1 tasks)
//   graph-wavefront  512 x 512 blocks, each after its left and upper neighbour
//   graph-fanout     one task, then 10^5 independent ones, then one
//
// Extra fields: tasks, the per-task overhead in ns (worker time beyond the bodies' own,
// per task: threads x run time minus the serial time of the bodies, over the tasks), and
// the CPU the process used while idle, 10 ms after the last run, over 200 ms (percent of
// one CPU).
#include "graph/peers.hpp"
#include "harness.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace strata::bench {
namespace {

namespace gp = graph_peers;

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/// Percent of one CPU the process uses over 200 ms starting 10 ms after now.
double idle_cpu_percent() {
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto c0 = cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return (cpu_seconds() - c0) / wall * 100;
}

/// Builds the shape; returns the number of tasks.
std::size_t build(graph& g, gp::shape s, std::size_t size) {
  auto body = [](std::size_t i) { return [i] { gp::task_body(i); }; };
  switch (s) {
    case gp::shape::chain: {
      node_ref prev;
      for (std::size_t i = 0; i < size; ++i) {
        auto n = g.add(body(i));
        if (prev) prev.precede(n);
        prev = n;
      }
      return size;
    }
    case gp::shape::tree: {
      std::size_t const count = (std::size_t{1} << size) - 1;
      std::vector<node_ref> nodes;
      nodes.reserve(count);
      for (std::size_t i = 0; i < count; ++i) {
        nodes.push_back(g.add(body(i)));
        if (i > 0) nodes[(i - 1) / 2].precede(nodes[i]);
      }
      return count;
    }
    case gp::shape::wavefront: {
      std::vector<node_ref> nodes;
      nodes.reserve(size * size);
      for (std::size_t i = 0; i < size; ++i)
        for (std::size_t j = 0; j < size; ++j) {
          auto n = g.add(body(i * size + j));
          if (i > 0) nodes[(i - 1) * size + j].precede(n);
          if (j > 0) nodes[i * size + j - 1].precede(n);
          nodes.push_back(n);
        }
      return size * size;
    }
    case gp::shape::fanout: {
      auto first = g.add(body(0));
      auto last = g.add(body(size + 1));
      for (std::size_t i = 1; i <= size; ++i) {
        auto n = g.add(body(i));
        first.precede(n);
        n.precede(last);
      }
      return size + 2;
    }
  }
  return 0;
}

/// The peers of one shape (the given oneTBB one, OpenMP tasks, OpenMP `task depend`),
/// each checked to compute what one run of the Strata side computes.
std::vector<std::unique_ptr<gp::peer>> checked_peers(char const* bench_name,
                                                     std::function<void()> const& strata_side,
                                                     std::unique_ptr<gp::peer> tbb, gp::shape s,
                                                     std::size_t size, int t) {
  gp::reset_checksum();
  strata_side();
  auto const expected = gp::checksum();
  std::vector<std::unique_ptr<gp::peer>> peers;
  if (tbb) peers.push_back(std::move(tbb));
  if (auto p = gp::make_omp(s, size, t)) peers.push_back(std::move(p));
  if (auto p = gp::make_omp_depend(s, size, t)) peers.push_back(std::move(p));
  for (auto& p : peers) {
    gp::reset_checksum();
    p->run();
    if (gp::checksum() != expected)
      throw std::runtime_error(std::string(bench_name) + ": " + p->name() +
                               " computed a different checksum than Strata's graph");
  }
  return peers;
}

// The tree of graph-tree written with dynamic tasking, as the OpenMP peer writes it with
// recursive tasks: node i runs, then spawns its two children into one group. `Cutoff`:
// spawn(inline_if_busy, ...), the form for a recursion whose tasks never wait for each
// other, which runs a child at once while the worker has work queued for thieves (as
// libgomp runs every task past its cutoff); else every child is queued.
template <bool Cutoff>
void spawn_tree(task_group& tg, std::size_t i, std::size_t nodes) {
  gp::task_body(i);
  std::size_t const l = 2 * i + 1, r = 2 * i + 2;
  auto child = [&tg, nodes](std::size_t c) {
    return [&tg, c, nodes] { spawn_tree<Cutoff>(tg, c, nodes); };
  };
  if constexpr (Cutoff) {
    if (l < nodes) tg.spawn(inline_if_busy, child(l));
    if (r < nodes) tg.spawn(inline_if_busy, child(r));
  } else {
    if (l < nodes) tg.spawn(child(l));
    if (r < nodes) tg.spawn(child(r));
  }
}

template <bool Cutoff>
void run_spawn_tree(context& ctx, char const* bench_name, std::size_t depth) {
  std::size_t const nodes = gp::task_count(gp::shape::tree, depth);
  for (int t : ctx.thread_counts()) {
    auto where = ctx.cpus(t);
    graph g;  // one subflow node: the tree is spawned inside it, on the graph's PUs
    g.emplace([nodes](task_group& tg) { spawn_tree<Cutoff>(tg, 0, nodes); });
    auto strata_side = [&] { run(g, where).wait(); };
    gp::reset_checksum();
    strata_side();
    auto const expected = gp::checksum();
    auto peer = gp::make_omp(gp::shape::tree, depth, t);
    gp::reset_checksum();
    peer->run();
    if (gp::checksum() != expected)
      throw std::runtime_error(std::string(bench_name) + ": spawned tree checksum differs");
    auto [ts, tp] = compare(ctx.opts().repeats, strata_side, [&] { peer->run(); });
    result r{bench_name,    (Cutoff ? "spawn/" : "spawn-deferred/") + std::to_string(t),
             double(nodes), ts,
             peer->name(),  tp};
    r.extra = {{"threads", t},
               {"tasks", double(nodes)},
               {"strata_ns_per_task", ts / double(nodes) * 1e9},
               {"peer_ns_per_task", tp / double(nodes) * 1e9}};
    ctx.report(r);
  }
}

void run_shape(context& ctx, char const* bench_name, gp::shape s, std::size_t size) {
  graph g;
  auto const tasks = build(g, s, size);
  // The bodies alone, serially: what any scheduler must at least spend.
  auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < tasks; ++i) gp::task_body(i);
  double const serial_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int t : ctx.thread_counts()) {
    auto where = ctx.cpus(t);
    auto strata_side = [&] { run(g, where).wait(); };
    // Both sides must do the same work: compare what their task bodies summed.
    auto peers = checked_peers(bench_name, strata_side, gp::make_tbb(s, size, t), s, size, t);
    for (auto& p : peers) {
      auto [ts, tp] = compare(ctx.opts().repeats, strata_side, [&] { p->run(); });
      double const overhead_ns = (ts * t - serial_s) / static_cast<double>(tasks) * 1e9;
      result r{bench_name, "graph/" + std::to_string(t), double(tasks), ts, p->name(), tp};
      r.extra = {{"threads", t},
                 {"tasks", double(tasks)},
                 {"strata_ns_per_task", ts / double(tasks) * 1e9},
                 {"overhead_ns_per_task", overhead_ns},
                 {"peer_ns_per_task", tp / double(tasks) * 1e9},
                 {"idle_cpu_percent", 0.0}};
      // Idle CPU after the Strata side's last run (its workers must have gone to sleep).
      strata_side();
      r.extra.back().second = idle_cpu_percent();
      ctx.report(r);
    }
  }
}

// Build+run (issue 12): construct the graph, run it once, destroy it, both sides; the
// cost per task of a graph used once. Peers: oneTBB flow_graph built, run and destroyed
// the same way, and OpenMP `task depend` (created as it runs; the fork-join forms too).
void build_run_shape(context& ctx, char const* bench_name, gp::shape s, std::size_t size) {
  auto const tasks = gp::task_count(s, size);
  for (int t : ctx.thread_counts()) {
    auto where = ctx.cpus(t);
    auto strata_side = [&] {
      graph g;
      build(g, s, size);
      run(g, where).wait();
    };
    auto peers =
        checked_peers(bench_name, strata_side, gp::make_tbb_build_run(s, size, t), s, size, t);
    for (auto& p : peers) {
      auto [ts, tp] = compare(ctx.opts().repeats, strata_side, [&] { p->run(); });
      result r{bench_name, "build+run/" + std::to_string(t), double(tasks), ts, p->name(), tp};
      r.extra = {{"threads", t},
                 {"tasks", double(tasks)},
                 {"strata_ns_per_task", ts / double(tasks) * 1e9},
                 {"peer_ns_per_task", tp / double(tasks) * 1e9}};
      ctx.report(r);
    }
  }
}

registrar chain_b("graph-chain-build",
                  "task graph built, run once, destroyed: a chain of 10^6 tasks vs TBB / OpenMP",
                  [](context& ctx) {
                    build_run_shape(ctx, "graph-chain-build", gp::shape::chain,
                                    ctx.opts().quick ? 10000 : 1000000);
                  });
registrar tree_b("graph-tree-build",
                 "task graph built, run once, destroyed: a binary tree of depth 20 vs TBB / OpenMP",
                 [](context& ctx) {
                   build_run_shape(ctx, "graph-tree-build", gp::shape::tree,
                                   ctx.opts().quick ? 12 : 20);
                 });
registrar wave_b("graph-wavefront-build",
                 "task graph built, run once, destroyed: 512x512 wavefront vs TBB / OpenMP",
                 [](context& ctx) {
                   build_run_shape(ctx, "graph-wavefront-build", gp::shape::wavefront,
                                   ctx.opts().quick ? 64 : 512);
                 });
registrar fan_b("graph-fanout-build",
                "task graph built, run once, destroyed: one -> 10^5 -> one vs TBB / OpenMP",
                [](context& ctx) {
                  build_run_shape(ctx, "graph-fanout-build", gp::shape::fanout,
                                  ctx.opts().quick ? 10000 : 100000);
                });

registrar chain_r("graph-chain",
                  "task graph: a chain of 10^5 tasks vs TBB flow_graph / OpenMP tasks",
                  [](context& ctx) {
                    run_shape(ctx, "graph-chain", gp::shape::chain,
                              ctx.opts().quick ? 10000 : 100000);
                  });
registrar tree_r("graph-tree",
                 "task graph: a binary tree of depth 18 vs TBB flow_graph / OpenMP tasks",
                 [](context& ctx) {
                   run_shape(ctx, "graph-tree", gp::shape::tree, ctx.opts().quick ? 12 : 18);
                   run_spawn_tree<true>(ctx, "graph-tree", ctx.opts().quick ? 12 : 18);
                   run_spawn_tree<false>(ctx, "graph-tree", ctx.opts().quick ? 12 : 18);
                 });
registrar wave_r("graph-wavefront",
                 "task graph: 512x512 blocks after left and upper vs TBB flow_graph / OpenMP tasks",
                 [](context& ctx) {
                   run_shape(ctx, "graph-wavefront", gp::shape::wavefront,
                             ctx.opts().quick ? 64 : 512);
                 });
registrar fan_r("graph-fanout", "task graph: one -> 10^5 -> one vs TBB flow_graph / OpenMP tasks",
                [](context& ctx) {
                  run_shape(ctx, "graph-fanout", gp::shape::fanout,
                            ctx.opts().quick ? 10000 : 100000);
                });

// sleep-wake (issue 12): how long a task submitted to an idle executor takes to start.
// The executor idles `idle_ms` (its workers spin 50 us, then park), then the main thread
// runs a prebuilt one-node graph whose body stamps the time; the distribution of
// (stamp - submit) over the samples, against a oneTBB arena enqueue measured the same
// way; then the CPU the process uses while idle.
registrar sleep_wake_r(
    "sleep-wake", "start latency of a task on an idle executor vs a oneTBB arena; idle CPU",
    [](context& ctx) {
      int const samples = ctx.opts().quick ? 20 : 200;
      int const idle_ms = 2;
      auto percentile = [](std::vector<double> v, double q) {
        std::sort(v.begin(), v.end());
        return v[std::min(v.size() - 1, static_cast<std::size_t>(q * double(v.size())))];
      };
      for (int t : ctx.thread_counts()) {
        auto where = ctx.cpus(t);
        std::atomic<std::int64_t> started{0};
        graph g;
        g.emplace([&] {
          started.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                        std::memory_order_release);
        });
        run(g, where).wait();
        std::vector<double> lat;
        for (int i = 0; i < samples; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
          started.store(0);
          auto t0 = std::chrono::steady_clock::now();
          auto e = run(g, where);
          e.wait();
          auto t1 = std::chrono::steady_clock::time_point(
              std::chrono::steady_clock::duration(started.load()));
          lat.push_back(std::chrono::duration<double>(t1 - t0).count());
        }
        auto peer = gp::tbb_wake_latencies(t, samples, idle_ms);
        double const med = percentile(lat, 0.5);
        double const peer_med = peer.empty() ? 0.0 : percentile(peer, 0.5);
        result r{"sleep-wake",
                 "graph/" + std::to_string(t),
                 double(samples),
                 med,
                 peer.empty() ? "none" : "tbb-arena-enqueue/" + std::to_string(t),
                 peer_med};
        r.extra = {{"threads", t},
                   {"strata_median_us", med * 1e6},
                   {"strata_p10_us", percentile(lat, 0.1) * 1e6},
                   {"strata_p90_us", percentile(lat, 0.9) * 1e6},
                   {"strata_p99_us", percentile(lat, 0.99) * 1e6},
                   {"strata_max_us", percentile(lat, 1.0) * 1e6},
                   {"peer_median_us", peer_med * 1e6},
                   {"peer_p90_us", peer.empty() ? 0.0 : percentile(peer, 0.9) * 1e6},
                   {"idle_cpu_percent", idle_cpu_percent()}};
        ctx.report(r);
      }
    });

}  // namespace
}  // namespace strata::bench
