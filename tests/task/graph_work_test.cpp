// Nodes that launch kernels and copies (completing with their events, without blocking a
// worker), device-kind nodes, tracing, and workers going idle once a graph is done.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <strata/strata.hpp>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace strata {
namespace {

[[maybe_unused]] double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

TEST(GraphWork, NodesLaunchKernelsAndCopiesOnSimQueues) {
  runtime rt({.sim_devices = "1:bw=1GB/s,lat=10us"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  std::size_t const n = 1 << 16;
  std::vector<int> host(n, 1), back(n, 0);
  auto dev = allocate<int, sim_space>(sim0, n);
  queue q(sim0);
  graph g;
  // Up to the device, a kernel there, back down: each node returns its event and the
  // graph moves on when it completes. Device nodes are run by device-priority workers.
  g.emplace(node_options("up", execution_kind::device),
            [&] { return q.copy(dev, ptr<int>(host.data(), 0), n); })
      .then(node_options("twice", execution_kind::device),
            [&] {
              return q.launch(
                  grid(64).elements(n / 64),
                  [](auto const& s, int* d) {
                    for (auto i : s.elements()) d[i] *= 2;
                  },
                  dev);
            })
      .then(node_options("down", execution_kind::device),
            [&] { return q.copy(ptr<int>(back.data(), 0), dev, n); })
      // A CPU node that waits on a sim copy inside the task (the worker helps meanwhile).
      .then("check", [&] {
        copy(dev, ptr<int>(host.data(), 0), n).wait();
        for (auto v : back) ASSERT_EQ(v, 2);
      });
  run(g).wait();
  run(g).wait();
  for (auto v : back) EXPECT_EQ(v, 2);
  deallocate(dev);
}

TEST(GraphWork, NodesLaunchOnTheThreadsBackend) {
  runtime rt;
  std::vector<int> v(1 << 14, 0);
  graph g;
  g.emplace([&] {
     return launch(
         on(rt.machine(), backend_id::threads), grid(16).elements(1024),
         [](auto const& s, int* p) {
           for (auto i : s.elements()) p[i] += 1;
         },
         v.data());
   }).then([&] {
    // Launch and wait inside a task: the worker runs chunks while it waits.
    launch(
        on(rt.machine(), backend_id::threads), grid(16).elements(1024),
        [](auto const& s, int* p) {
          for (auto i : s.elements()) p[i] += 1;
        },
        v.data())
        .wait();
  });
  run(g).wait();
  for (auto x : v) ASSERT_EQ(x, 2);
}

TEST(GraphWork, FailedKernelEventFailsTheGraph) {
  runtime rt({.sim_devices = "1"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  queue q(sim0);
  std::atomic<bool> later{false};
  graph g;
  g.emplace(execution_kind::device, [&] {
     return q.launch(grid(1), [](auto const&) { throw std::runtime_error("kernel threw"); });
   }).then([&] { later = true; });
  EXPECT_THROW(run(g).wait(), std::runtime_error);
  EXPECT_FALSE(later.load());
}

TEST(GraphWork, NodesAppearInTheTrace) {
  auto path = std::filesystem::temp_directory_path() / "strata_graph_trace_test.json";
  std::filesystem::remove(path);
  {
    runtime rt({.trace = path.string()});
    graph g;
    g.emplace("first node", [] {}).then("second node", [] {});
    run(g).wait();
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no trace written to " << path;
  auto doc = nlohmann::json::parse(in);
  std::map<int, std::string> lanes;
  std::vector<std::pair<std::string, int>> tasks;
  for (auto const& e : doc) {
    if (e["ph"] == "M" && e["name"] == "thread_name")
      lanes[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e["ph"] == "X" && e["cat"] == "task")
      tasks.emplace_back(e["name"].get<std::string>(), e["tid"].get<int>());
  }
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].first, "first node");
  EXPECT_EQ(tasks[1].first, "second node");
  for (auto const& t : tasks) EXPECT_NE(lanes[t.second].find("worker"), std::string::npos);
}

// Issue 12, trace: kernels and copies a node queues on a sim device appear on that
// device's lanes (a trace "process" of its own), each linked by a flow arrow that starts
// inside the node's event, also when the queue defers the operation until the one before
// it has completed (the launch then happens on another thread).
TEST(GraphWork, DeviceWorkIsLinkedToItsNodeInTheTrace) {
  auto path = std::filesystem::temp_directory_path() / "strata_graph_flow_test.json";
  std::filesystem::remove(path);
  {
    runtime rt({.sim_devices = "1:bw=1GB/s,lat=10us", .trace = path.string()});
    auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
    std::size_t const n = 1 << 16;
    std::vector<int> host(n, 1);
    auto dev = allocate<int, sim_space>(sim0, n);
    queue q(sim0);
    graph g;
    g.emplace(node_options("upload", execution_kind::device),
              [&] { return q.copy(dev, ptr<int>(host.data(), 0), n); })
        .then(node_options("compute", execution_kind::device),
              [&] {
                // Two operations: the second waits in the queue for the first.
                q.launch(grid(4), [](auto const&) {});
                return q.launch(grid(4), [](auto const&) {});
              })
        .then(node_options("download", execution_kind::device),
              [&] { return q.copy(ptr<int>(host.data(), 0), dev, n); });
    run(g).wait();
    deallocate(dev);
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no trace written to " << path;
  auto doc = nlohmann::json::parse(in);
  struct x_event {
    std::string name, cat;
    int pid, tid;
    double begin, end;
  };
  std::vector<x_event> xs;
  std::map<std::uint64_t, nlohmann::json> tails, heads;
  std::map<int, std::string> processes;
  for (auto const& e : doc) {
    if (e["ph"] == "M" && e["name"] == "process_name")
      processes[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e["ph"] == "X")
      xs.push_back({e["name"].get<std::string>(), e["cat"].get<std::string>(), e["pid"].get<int>(),
                    e["tid"].get<int>(), e["ts"].get<double>(),
                    e["ts"].get<double>() + e["dur"].get<double>()});
    if (e["ph"] == "s") tails[e["id"].get<std::uint64_t>()] = e;
    if (e["ph"] == "f") heads[e["id"].get<std::uint64_t>()] = e;
  }
  // The event on (pid, tid) that encloses ts, preferring the innermost.
  auto enclosing = [&](nlohmann::json const& at, bool starting) -> x_event const* {
    x_event const* best = nullptr;
    double const ts = at["ts"].get<double>();
    for (auto const& x : xs)
      if (x.pid == at["pid"].get<int>() && x.tid == at["tid"].get<int>() &&
          (starting ? x.begin == ts : x.begin <= ts && ts <= x.end) &&
          (!best || x.begin >= best->begin))
        best = &x;
    return best;
  };
  std::map<std::string, int> linked;  // node name -> device events linked to it
  std::size_t device_heads = 0;
  for (auto const& [id, head] : heads) {
    auto const* device_event = enclosing(head, true);
    ASSERT_NE(device_event, nullptr) << "flow " << id << " ends at no event";
    if (device_event->cat == "task") {
      // An arrow from a node to the successor it made ready: drawn only when the node's
      // completion ran on the thread that ran its body just before (timing: a device
      // node completes when its queue does), so it may or may not be there.
      ASSERT_TRUE(tails.count(id)) << "flow " << id << " has no start";
      auto const* from = enclosing(tails[id], false);
      ASSERT_NE(from, nullptr) << "flow " << id << " starts in no event";
      EXPECT_EQ(from->cat, "task");
      continue;
    }
    ++device_heads;
    EXPECT_EQ(device_event->cat, "sim");
    EXPECT_EQ(processes[device_event->pid], "sim device sim0");
    ASSERT_TRUE(tails.count(id)) << "flow " << id << " has no start";
    auto const* from = enclosing(tails[id], false);
    ASSERT_NE(from, nullptr) << "flow " << id << " starts in no event";
    EXPECT_EQ(processes[from->pid], "host");
    // A deferred launch is queued by whoever completes the operation before it, but its
    // arrow starts where it was asked for: in the node.
    EXPECT_EQ(from->cat, "task");
    ++linked[from->name];
  }
  EXPECT_EQ(device_heads, 4u) << "two copies and two kernels, each with one arrow";
  EXPECT_EQ(linked["upload"], 1);
  EXPECT_EQ(linked["compute"], 2);
  EXPECT_EQ(linked["download"], 1);
}

#if !defined(STRATA_TSAN) && !defined(STRATA_ASAN)
TEST(GraphWork, WorkersGoIdleAfterAGraph) {
  runtime rt;
  graph g;
  std::atomic<long> sum{0};
  for (int i = 0; i < 10000; ++i) g.emplace([&sum, i] { sum.fetch_add(i); });
  run(g).wait();
  // 10 ms after the work ran out, the workers must be asleep: measure the process's CPU
  // time over 200 ms in which this thread sleeps too. The goal is < 1%; the bound is loose
  // (5%) so that a busy machine's accounting noise cannot fail it.
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto c0 = cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto busy = (cpu_seconds() - c0) /
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("idle_cpu_fraction", std::to_string(busy));
  EXPECT_LT(busy, 0.05) << "idle workers used " << busy * 100 << "% of a CPU";
}
#endif

}  // namespace
}  // namespace strata
