// STRATA_TRACE: a Chrome trace with one lane per worker and per sim engine, showing a
// kernel and a copy of one sim device overlapping; sim kernels by name; the pool's
// counters; flow arrows that pair up; a file streamed while the program runs (readable
// after a crash); a path that cannot be written refused when tracing starts.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "exec/backends.hpp"

namespace strata {
namespace {

std::string read_text(std::filesystem::path const& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A trace file as JSON: the Trace Event Format's array form, complete or cut short by a
// crash (the format allows the closing "]" to be missing; a JSON parser needs it).
nlohmann::json read_trace(std::filesystem::path const& path) {
  auto text = read_text(path);
  auto const last = text.find_last_not_of(" \n");
  if (last != std::string::npos && text[last] != ']') text += "]";
  return nlohmann::json::parse(text);
}

// A named kernel functor: its type names its events in the trace.
struct sim_named_kernel {
  template <class S>
  void operator()(S const&) const {}
};

TEST(Trace, WritesKernelsCopiesAndLanes) {
  auto path = std::filesystem::temp_directory_path() / "strata_trace_test.json";
  std::filesystem::remove(path);
  {
    runtime rt({.sim_devices = "1:bw=1GB/s,lat=10us", .trace = path.string()});
    auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
    std::vector<int> v(1 << 16, 1);
    launch(
        rt.machine(), grid(64).elements(1024),
        [](auto const& s, int* p) {
          for (auto i : s.elements()) p[i] += 1;
        },
        v.data())
        .wait();
    launch(on(rt.machine(), backend_id::serial), grid(4), [](auto const&) {}).wait();
    // A kernel and a 32 MiB copy (34 ms at 1 GB/s) on two queues of one sim device. Long
    // enough that a device thread started a few milliseconds late under load (the ASan
    // stage of a CI run, two tests at once on 2 cores: 4.7 ms once, when these were 4 ms)
    // still overlaps the other.
    buffer<char> host(rt.machine(), std::size_t{32} << 20);
    buffer<char, 1, sim_space> dev(sim0, std::size_t{32} << 20);
    queue compute(sim0), transfer(sim0);
    auto k = compute.launch(
        grid(1), [](auto const&) { std::this_thread::sleep_for(std::chrono::milliseconds(34)); });
    auto c = transfer.copy(dev, host);
    wait_all({k, c});
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "no trace written to " << path;
  auto doc = nlohmann::json::parse(in);
  std::map<int, std::string> lanes;
  struct span {
    double begin, end;
  };
  std::vector<span> sim_kernels, sim_copies;
  int job_events = 0, serial_events = 0;
  for (auto const& e : doc) {
    if (e["ph"] == "M" && e["name"] == "thread_name")
      lanes[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e["ph"] != "X") continue;
    double b = e["ts"].get<double>(), d = e["dur"].get<double>();
    if (e["cat"] == "job") ++job_events;
    if (e["cat"] == "kernel" && e["args"]["detail"] == "serial") ++serial_events;
    if (e["cat"] == "sim" && e["name"] != "copy") sim_kernels.push_back({b, b + d});
    if (e["cat"] == "sim" && e["name"] == "copy") sim_copies.push_back({b, b + d});
  }
  EXPECT_GE(job_events, 1);
  EXPECT_EQ(serial_events, 1);
  ASSERT_EQ(sim_kernels.size(), 1u);
  ASSERT_EQ(sim_copies.size(), 1u);
  // The overlap the `overlap` benchmark measures, visible in the trace.
  EXPECT_LT(sim_copies[0].begin, sim_kernels[0].end);
  EXPECT_LT(sim_kernels[0].begin, sim_copies[0].end);
  bool engine_lane = false, unit_lane = false;
  for (auto const& [id, name] : lanes) {
    engine_lane = engine_lane || name.rfind("sim0 copy engine", 0) == 0;
    unit_lane = unit_lane || name == "sim0 unit 0";
  }
  EXPECT_TRUE(engine_lane);
  EXPECT_TRUE(unit_lane);
  std::filesystem::remove(path);
}

// Issue 13: a sim kernel's event is named after the kernel (its type), as on the CPU
// backends, not "kernel".
TEST(Trace, SimKernelsCarryTheKernelsName) {
  auto path = std::filesystem::temp_directory_path() / "strata_trace_sim_names.json";
  {
    runtime rt({.sim_devices = "1", .trace = path.string()});
    auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
    queue q(sim0);
    q.launch(grid(4), sim_named_kernel{}).wait();
  }
  int named = 0;
  for (auto const& e : read_trace(path))
    if (e["ph"] == "X" && e["cat"] == "sim" && e["name"] != "copy") {
      EXPECT_NE(e["name"].get<std::string>().find("sim_named_kernel"), std::string::npos)
          << "sim kernel event named " << e["name"];
      ++named;
    }
  EXPECT_GE(named, 1);
  std::filesystem::remove(path);
}

// Issue 13: a trace file that cannot be opened fails the runtime's start, naming the
// file and the reason (it used to fail silently when the runtime ended).
TEST(Trace, UnwritablePathFailsTheStart) {
  auto expect_refused = [](char const* setting, auto&& start) {
    try {
      start();
      ADD_FAILURE() << "a runtime tracing to /nonexistent/x.json started";
    } catch (config_error const& e) {
      std::string const what = e.what();
      EXPECT_NE(what.find(std::string(setting) + "=\"/nonexistent/x.json\""), std::string::npos)
          << what;
      EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
    }
  };
  expect_refused("runtime_options::trace", [] { runtime rt({.trace = "/nonexistent/x.json"}); });
  ::setenv("STRATA_TRACE", "/nonexistent/x.json", 1);
  expect_refused("STRATA_TRACE", [] { runtime rt; });
  ::unsetenv("STRATA_TRACE");
  // The failed start left nothing behind: a runtime starts, and tracing works.
  auto path = std::filesystem::temp_directory_path() / "strata_trace_after_refusal.json";
  {
    runtime rt({.trace = path.string()});
    launch(on(rt.machine(), backend_id::serial), grid(1), [](auto const&) {}).wait();
  }
  EXPECT_FALSE(read_trace(path).empty());
  std::filesystem::remove(path);
}

struct flushed_kernel {
  template <class S>
  void operator()(S const&) const {}
};
struct periodically_flushed_kernel {
  template <class S>
  void operator()(S const&) const {}
};

// Issue 13: the trace is streamed. A process that dies (abort, no destructors) leaves a
// file holding what was flushed: explicitly (trace::flush) and by the periodic flush.
TEST(Trace, FileSurvivesACrash) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the child re-runs this binary
  auto path = std::filesystem::temp_directory_path() / "strata_trace_crash.json";
  std::filesystem::remove(path);
  auto crash = [&] {
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    runtime rt({.trace = path.string()});
    launch(on(rt.machine(), backend_id::serial), grid(1), flushed_kernel{}).wait();
    trace::flush();
    launch(on(rt.machine(), backend_id::serial), grid(1), periodically_flushed_kernel{}).wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // 4 flush periods
    std::fputs("trace test child: aborting now\n", stderr);
    std::abort();
  };
  // The message proves that the child ran the body: a child that could not re-execute
  // the binary (a bare argv[0], seen on the GPU machine of session 52) aborts too.
  EXPECT_EXIT(crash(), testing::KilledBySignal(SIGABRT), "trace test child: aborting now");
  auto const text = read_text(path);
  ASSERT_FALSE(text.empty()) << "the crashed process left no trace in " << path;
  EXPECT_NE(text.back(), ']') << "the trace was ended although the process crashed";
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = read_trace(path)) << text;
  std::set<std::string> kernels;
  bool lane_named = false;
  for (auto const& e : doc) {
    if (e["ph"] == "X") kernels.insert(e["name"].get<std::string>());
    lane_named = lane_named || (e["ph"] == "M" && e["name"] == "thread_name");
  }
  auto has = [&](std::string const& name) {
    for (auto const& k : kernels)
      if (k.find(name) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("flushed_kernel")) << "trace::flush() did not write the first kernel";
  EXPECT_TRUE(has("periodically_flushed_kernel"))
      << "the periodic flush did not write the second kernel";
  EXPECT_TRUE(lane_named);
  std::filesystem::remove(path);
}

long tree(int depth) {
  if (depth == 0) return 1;
  long left = 0;
  task_group children;
  children.spawn([&left, depth] { left = tree(depth - 1); });
  long right = tree(depth - 1);
  children.join();
  return left + right + 1;
}

// Issue 13: the pool's workers add counters (Chrome "C" events) of the tasks they stole
// and of their idle time.
TEST(Trace, PoolCountersOfStealsAndIdleTime) {
  auto path = std::filesystem::temp_directory_path() / "strata_trace_counters.json";
  {
    // Four workers (not pinned: a synthetic machine), whatever this machine has.
    runtime rt({.topology = "synthetic:pack:1 core:4 pu:1", .trace = path.string()});
    for (int round = 0; round < 5; ++round) {
      long got = 0;
      graph g;
      g.emplace([&] { got = tree(12); });
      run(g).wait();
      EXPECT_EQ(got, (1L << 13) - 1);
      // Idle workers spin, then park: an idle spell each.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  double steals = 0, idle_ms = 0;
  std::set<std::string> steal_counters;
  for (auto const& e : read_trace(path)) {
    if (e["ph"] != "C") continue;
    auto const name = e["name"].get<std::string>();
    if (name.starts_with("steals (")) {
      steal_counters.insert(name);
      steals = std::max(steals, e["args"]["tasks"].get<double>());
    }
    if (name.starts_with("idle (")) idle_ms = std::max(idle_ms, e["args"]["ms"].get<double>());
  }
  EXPECT_GT(steals, 0) << "no steal counter in the trace";
  EXPECT_GT(idle_ms, 0) << "no idle-time counter in the trace";
  for (auto const& name : steal_counters) EXPECT_NE(name.find("worker"), std::string::npos);
  std::filesystem::remove(path);
}

// Issue 13: flow arrows pair up: every arrow that starts ends, and each ends once. Also
// for work asked for before its dependencies are done (deferred): a deferred CPU launch
// ends no arrow, and a deferred launch whose dependency failed is never queued; neither
// may leave an arrow's tail behind. Nodes are linked to the successors they make ready.
TEST(Trace, FlowArrowsPairUp) {
  auto path = std::filesystem::temp_directory_path() / "strata_trace_flows.json";
  {
    runtime rt({.sim_devices = "1", .trace = path.string()});
    auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
    graph g;
    g.emplace("first", [] {})
        .then("second",
              [&] {
                auto gate = event::pending();
                auto cpu = launch(after(gate), on(rt.machine(), backend_id::serial), grid(1),
                                  [](auto const&) {});
                auto failing = event::pending();
                auto never =
                    launch(after(failing), on(sim0, backend_id::sim), grid(1), [](auto const&) {});
                auto device =
                    launch(after(gate), on(sim0, backend_id::sim), grid(4), sim_named_kernel{});
                gate.complete();
                failing.complete(std::make_exception_ptr(std::runtime_error("dependency")));
                cpu.wait();
                device.wait();
                EXPECT_THROW(never.wait(), std::runtime_error);
              })
        .then("third", [] {});
    run(g).wait();
  }
  std::map<std::uint64_t, int> tails, heads;
  struct x_event {
    std::string name;
    int pid, tid;
    double begin, end;
  };
  std::vector<x_event> xs;
  std::map<std::uint64_t, nlohmann::json> tail_at, head_at;
  for (auto const& e : read_trace(path)) {
    if (e["ph"] == "X")
      xs.push_back({e["name"].get<std::string>(), e["pid"].get<int>(), e["tid"].get<int>(),
                    e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()});
    if (e["ph"] == "s") ++tails[e["id"].get<std::uint64_t>()], tail_at[e["id"]] = e;
    if (e["ph"] == "f") ++heads[e["id"].get<std::uint64_t>()], head_at[e["id"]] = e;
  }
  for (auto const& [id, n] : tails) {
    EXPECT_EQ(n, 1) << "flow " << id << " starts " << n << " times";
    EXPECT_EQ(heads.count(id), 1u) << "flow " << id << " starts and never ends";
  }
  for (auto const& [id, n] : heads) {
    EXPECT_EQ(n, 1) << "flow " << id << " ends " << n << " times";
    EXPECT_EQ(tails.count(id), 1u) << "flow " << id << " ends and never starts";
  }
  // The innermost event on the lane of `at` that encloses its time (or starts there).
  auto enclosing = [&](nlohmann::json const& at, bool starting) -> std::string {
    x_event const* best = nullptr;
    double const ts = at["ts"].get<double>();
    for (auto const& x : xs)
      if (x.pid == at["pid"].get<int>() && x.tid == at["tid"].get<int>() &&
          (starting ? x.begin == ts : x.begin <= ts && ts <= x.end) &&
          (!best || x.begin >= best->begin))
        best = &x;
    return best ? best->name : "";
  };
  std::set<std::pair<std::string, std::string>> arrows;
  for (auto const& [id, head] : head_at)
    if (tail_at.count(id)) arrows.insert({enclosing(tail_at[id], false), enclosing(head, true)});
  EXPECT_TRUE(arrows.count({"first", "second"})) << "no arrow from node first to second";
  EXPECT_TRUE(arrows.count({"second", "third"})) << "no arrow from node second to third";
  bool to_device = false;
  for (auto const& [from, to] : arrows)
    to_device = to_device || (from == "second" && to.find("sim_named_kernel") != std::string::npos);
  EXPECT_TRUE(to_device) << "no arrow from node second to its deferred sim kernel";
  std::filesystem::remove(path);
}

// Issue 13: ranks of an MPI run write a file each and have lanes of their own: a process
// its launcher started as rank 1 of 2 (Open MPI's environment) writes "x.rank1.json",
// whose processes are named and numbered for rank 1.
TEST(Trace, EachRankWritesItsOwnFileAndLanes) {
  auto path = std::filesystem::temp_directory_path() / "strata_trace_ranks.json";
  auto rank_file = std::filesystem::temp_directory_path() / "strata_trace_ranks.rank1.json";
  std::filesystem::remove(path);
  std::filesystem::remove(rank_file);
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  {
    runtime rt({.sim_devices = "1", .trace = path.string()});
    auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
    queue(sim0).launch(grid(4), sim_named_kernel{}).wait();
  }
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_FALSE(std::filesystem::exists(path)) << "rank 1 wrote the file of a single process";
  ASSERT_TRUE(std::filesystem::exists(rank_file));
  std::map<int, std::string> processes;
  std::set<int> pids;
  for (auto const& e : read_trace(rank_file)) {
    if (e["ph"] == "M" && e["name"] == "process_name")
      processes[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e["ph"] == "X") pids.insert(e["pid"].get<int>());
  }
  ASSERT_FALSE(processes.empty());
  for (auto const& [pid, name] : processes) {
    EXPECT_TRUE(name.starts_with("rank 1 ")) << name;
    EXPECT_GE(pid, 1000) << "rank 1's pids must not meet rank 0's";
  }
  for (int pid : pids) EXPECT_TRUE(processes.count(pid)) << "events in an unnamed process " << pid;
  std::filesystem::remove(rank_file);
}

}  // namespace
}  // namespace strata
