// STRATA_TRACE: a Chrome trace with one lane per worker and per sim engine, showing a
// kernel and a copy of one sim device overlapping.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "exec/backends.hpp"

namespace strata {
namespace {

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
    // A kernel and a 4 MiB copy (4 ms at 1 GB/s) on two queues of one sim device.
    buffer<char> host(rt.machine(), std::size_t{4} << 20);
    buffer<char, 1, sim_space> dev(sim0, std::size_t{4} << 20);
    queue compute(sim0), transfer(sim0);
    auto k = compute.launch(
        grid(1), [](auto const&) { std::this_thread::sleep_for(std::chrono::milliseconds(4)); });
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
  for (auto const& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name")
      lanes[e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e["ph"] != "X") continue;
    double b = e["ts"].get<double>(), d = e["dur"].get<double>();
    if (e["cat"] == "job") ++job_events;
    if (e["cat"] == "kernel" && e["args"]["detail"] == "serial") ++serial_events;
    if (e["cat"] == "sim" && e["name"] == "kernel") sim_kernels.push_back({b, b + d});
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
    engine_lane = engine_lane || name == "sim0 copy engine";
    unit_lane = unit_lane || name == "sim0 unit 0";
  }
  EXPECT_TRUE(engine_lane);
  EXPECT_TRUE(unit_lane);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace strata
