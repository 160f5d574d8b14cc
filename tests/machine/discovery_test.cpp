// Discovery of the real machine (hwloc), synthetic machines, and sim devices.
#include <strata/config.hpp>
#include <strata/error.hpp>
#include <strata/machine/discovery.hpp>

#include <gtest/gtest.h>

#include <sched.h>

#include <algorithm>

namespace strata {
namespace {

int nproc() {
  // What `nproc` prints: the CPUs this process may run on.
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  return CPU_COUNT(&set);
}

bool has_ancestor(place const& p, place_type t) {
  for (auto a = p.parent(); a; a = a->parent())
    if (a->type() == t) return true;
  return false;
}

TEST(Discovery, PuCountEqualsNproc) {
  auto m = discover_machine().machine;
  EXPECT_EQ(m.type(), place_type::machine);
  EXPECT_EQ(static_cast<int>(m.descendants(place_type::pu).size()), nproc());
  EXPECT_EQ(static_cast<int>(m.slice(isa::host).processors().size()), nproc());
}

TEST(Discovery, HostHierarchyIsMachinePackageNumaCachesCoresPus) {
  auto m = discover_machine().machine;
  for (auto const& pu : m.descendants(place_type::pu)) {
    EXPECT_EQ(pu.isa(), isa::host);
    EXPECT_GE(pu.os_index(), 0);
    EXPECT_TRUE(has_ancestor(pu, place_type::core)) << pu;
    EXPECT_TRUE(has_ancestor(pu, place_type::package)) << pu;
  }
  auto numa = m.descendants(place_type::host_memory);
  ASSERT_FALSE(numa.empty());
  for (auto const& n : numa) {
    EXPECT_GT(n.capacity(), 0u) << n;
    EXPECT_TRUE(n.children().empty());
  }
  for (auto const& c : m.descendants(place_type::cache)) {
    EXPECT_GE(c.info().cache_level, 1);
    EXPECT_GT(c.capacity(), 0u) << c;
  }
}

TEST(Discovery, EveryProcessorHasAMemoryAbove) {
  machine_options o;
  o.sim_devices = "2:units=2";
  auto m = discover_machine(o).machine;
  for (auto const& p : m.processors()) {
    auto mems = p.memories_above();
    ASSERT_FALSE(mems.empty()) << p;
    // The nearest memory is the processor's own: host memory for PUs, the device's own
    // memory for device processors.
    EXPECT_EQ(mems.front().isa(), p.isa()) << p;
  }
}

TEST(Discovery, SimDevicesHaveTheirOwnMemoryAndUnits) {
  machine_options o;
  o.sim_devices = "1:bw=6GB/s,lat=20us,speed=0.5,mem=2GiB,units=3;1";
  auto m = discover_machine(o).machine;
  auto sims = m.slice(isa::sim);
  auto devices = sims.descendants(place_type::device);
  ASSERT_EQ(devices.size(), 2u);
  auto const& d0 = devices[0];
  EXPECT_EQ(d0.name(), "sim0");
  EXPECT_DOUBLE_EQ(d0.info().link.bandwidth, 6e9);
  EXPECT_DOUBLE_EQ(d0.info().link.latency, 20e-6);
  EXPECT_DOUBLE_EQ(d0.info().speed, 0.5);
  EXPECT_EQ(d0.processors().size(), 3u);
  ASSERT_EQ(d0.memories().size(), 1u);
  EXPECT_EQ(d0.memories()[0].capacity(), 2ull << 30);
  EXPECT_EQ(d0.memories()[0].type(), place_type::device_memory);
  EXPECT_EQ(devices[1].name(), "sim1");
  EXPECT_EQ(devices[1].logical_index(), 1);
  EXPECT_EQ(devices[1].processors().size(), 1u);
  EXPECT_TRUE(m.slice(isa::host).descendants(place_type::device).empty());
}

TEST(Discovery, SyntheticTopologyDescribesAnotherMachine) {
  machine_options o;
  o.topology = "synthetic:pack:2 numa:1 l3:1 core:4 pu:2";
  o.cuda = false;
  auto found = discover_machine(o);
  auto m = found.machine;
  EXPECT_EQ(m.descendants(place_type::package).size(), 2u);
  EXPECT_EQ(m.descendants(place_type::host_memory).size(), 2u);
  EXPECT_EQ(m.descendants(place_type::core).size(), 8u);
  auto pus = m.descendants(place_type::pu);
  ASSERT_EQ(pus.size(), 16u);
  // Each package's PUs see that package's memory first.
  EXPECT_NE(pus.front().memories_above().front(), pus.back().memories_above().front());
  EXPECT_LT(pus[0].distance(pus[1]), pus[0].distance(pus[15]));
  EXPECT_EQ(pus[0].common_ancestor(pus[1]).type(), place_type::core);
  EXPECT_EQ(pus[0].common_ancestor(pus[15]), m);
  EXPECT_TRUE(found.notes.empty()) << "cuda=false asks nothing of CUDA";
}

TEST(Discovery, BadTopologyIsAConfigError) {
  for (auto spec : {"synthetic:pack:x", "xml:/nonexistent/strata.xml", "lstopo"}) {
    machine_options o;
    o.topology = spec;
    try {
      discover_machine(o);
      FAIL() << spec;
    } catch (config_error const& e) {
      EXPECT_NE(std::string(e.what()).find("STRATA_TOPOLOGY=\"" + std::string(spec)),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Discovery, BadSimDevicesFailBeforeDiscovery) {
  machine_options o;
  o.sim_devices = "2:bw=-3";
  EXPECT_THROW(discover_machine(o), config_error);
}

TEST(Discovery, CudaIsPresentOrExplained) {
  auto found = discover_machine();
  auto gpus = found.machine.slice(isa::cuda).descendants(place_type::device);
  if (!gpus.empty()) {
    for (auto const& g : gpus) {
      EXPECT_FALSE(g.processors().empty()) << g << " has no SMs";
      ASSERT_EQ(g.memories().size(), 1u);
      EXPECT_GT(g.memories()[0].capacity(), 0u);
    }
    return;
  }
  auto mentions_cuda = [](std::string const& n) { return n.find("CUDA") != std::string::npos; };
  EXPECT_EQ(std::count_if(found.notes.begin(), found.notes.end(), mentions_cuda), 1)
      << "exactly one line says why there is no GPU";
}

}  // namespace
}  // namespace strata
