// The place tree on hand-built machines (Phalanx §III-A, Fig. 1).
#include <strata/error.hpp>
#include <strata/machine/place.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <unordered_set>

#include "machine/example_machines.hpp"

namespace strata {
namespace {

using test::find;

TEST(Place, KindsFollowTypes) {
  EXPECT_EQ(kind_of(place_type::pu), place_kind::processor);
  EXPECT_EQ(kind_of(place_type::compute_unit), place_kind::processor);
  EXPECT_EQ(kind_of(place_type::host_memory), place_kind::memory);
  EXPECT_EQ(kind_of(place_type::device_memory), place_kind::memory);
  for (auto t : {place_type::cluster, place_type::rank, place_type::machine, place_type::package,
                 place_type::die, place_type::group, place_type::cache, place_type::core,
                 place_type::device})
    EXPECT_EQ(kind_of(t), place_kind::group) << to_string(t);
}

TEST(Place, EnumNamesRoundTrip) {
  for (int i = 0; i <= int(place_type::device_memory); ++i) {
    auto t = static_cast<place_type>(i);
    EXPECT_EQ(parse_place_type(to_string(t)), t);
  }
  for (auto k : {place_kind::processor, place_kind::memory, place_kind::group})
    EXPECT_EQ(parse_place_kind(to_string(k)), k);
  for (auto a : {isa::host, isa::cuda, isa::sim}) EXPECT_EQ(parse_isa(to_string(a)), a);
  EXPECT_FALSE(parse_isa("x86"));
  EXPECT_FALSE(parse_place_type(""));
}

TEST(Place, NavigationIsConsistent) {
  auto m = test::phalanx_fig1();
  EXPECT_TRUE(m.is_root());
  EXPECT_EQ(m.depth(), 0u);
  EXPECT_FALSE(m.parent());
  EXPECT_EQ(m.children().size(), 4u);  // two packages, two GPUs
  for (auto const& p : m.descendants()) {
    EXPECT_EQ(p.root(), m);
    for (auto const& c : p.children()) {
      ASSERT_TRUE(c.parent());
      EXPECT_EQ(*c.parent(), p);
      EXPECT_EQ(c.depth(), p.depth() + 1);
    }
    if (p.kind() != place_kind::group) {
      EXPECT_TRUE(p.children().empty()) << p;
    }
  }
  auto pu5 = find(m, "PU 5");
  ASSERT_TRUE(pu5.valid());
  EXPECT_EQ(pu5.path(), "Machine/Package 1/Core 5/PU 5");
  EXPECT_EQ(pu5.os_index(), 5);
  EXPECT_EQ(pu5.kind(), place_kind::processor);
  EXPECT_EQ(pu5.isa(), isa::host);
}

TEST(Place, CountsProcessorsAndMemories) {
  auto m = test::phalanx_fig1();
  EXPECT_EQ(m.processors().size(), 8u + 7u + 14u);
  EXPECT_EQ(m.memories().size(), 4u);
  EXPECT_EQ(m.descendants(place_type::device).size(), 2u);
  EXPECT_EQ(find(m, "cuda1").processors().size(), 14u);
  EXPECT_EQ(find(m, "Package 0").memories().size(), 1u);
  auto pu = find(m, "PU 0");
  EXPECT_EQ(pu.processors().size(), 1u) << "a processor's processors are itself";
}

TEST(Place, LastLevelCacheSumsTheHighestLevelsInstances) {
  // Two packages, each an L3 over two cores with their own L2: the machine's last level
  // is both L3s, a package's its own, a core's its L2, a PU's nothing.
  machine_builder b({.type = place_type::machine, .name = "Machine"});
  for (int p = 0; p < 2; ++p) {
    auto pkg = b.add(b.root(), {.type = place_type::package, .name = "P" + std::to_string(p)});
    auto l3 = b.add(pkg, {.type = place_type::cache,
                          .name = "L3 " + std::to_string(p),
                          .capacity = 32ull << 20,
                          .cache_level = 3});
    for (int c = 0; c < 2; ++c) {
      auto l2 = b.add(l3, {.type = place_type::cache,
                           .name = "L2 " + std::to_string(2 * p + c),
                           .capacity = 1ull << 20,
                           .cache_level = 2});
      auto core = b.add(l2, {.type = place_type::core, .name = "C" + std::to_string(2 * p + c)});
      b.add(core, {.type = place_type::pu, .name = "PU " + std::to_string(2 * p + c)});
    }
  }
  auto m = b.build();
  EXPECT_EQ(m.last_level_cache(), 64ull << 20);
  EXPECT_EQ(find(m, "P1").last_level_cache(), 32ull << 20);
  EXPECT_EQ(find(m, "C3").last_level_cache(), 0u);
  EXPECT_EQ(find(m, "L2 3").last_level_cache(), 1ull << 20);
  EXPECT_EQ(test::phalanx_fig1().last_level_cache(), 0u) << "no caches known";
}

TEST(Place, LogicalIndicesCountPerTypeAndIsa) {
  auto m = test::phalanx_fig1();
  EXPECT_EQ(find(m, "PU 6").logical_index(), 6);
  EXPECT_EQ(find(m, "cuda1").logical_index(), 1);
  EXPECT_EQ(find(m, "cuda1 SM 0").logical_index(), 7);  // after cuda0's 7 SMs
  EXPECT_EQ(find(m, "NUMA 1").logical_index(), 1);
  EXPECT_EQ(find(m, "cuda0 memory").logical_index(), 0) << "device memory counts apart";
}

TEST(Place, SliceByKindKeepsOnlyMatchesAndTheirGroups) {
  auto m = test::phalanx_fig1();
  auto rams = m.slice(place_kind::memory);  // Phalanx Fig. 1c
  EXPECT_EQ(rams.memories().size(), 4u);
  EXPECT_TRUE(rams.processors().empty());
  for (auto const& p : rams.descendants()) {
    if (p.kind() == place_kind::group) {
      EXPECT_FALSE(p.memories().empty()) << p << " is kept without a memory below it";
    } else {
      EXPECT_EQ(p.kind(), place_kind::memory);
    }
  }
  auto procs = m.slice(place_kind::processor);
  EXPECT_EQ(procs.processors().size(), 29u);
  EXPECT_TRUE(procs.memories().empty());
}

TEST(Place, SliceByIsaSelectsDevices) {
  auto m = test::phalanx_fig1();
  auto gpus = m.slice(isa::cuda);  // Phalanx Fig. 1d, slice_by_isa<sm>
  EXPECT_EQ(gpus.processors().size(), 21u);
  for (auto const& p : gpus.processors()) EXPECT_EQ(p.isa(), isa::cuda);
  EXPECT_EQ(gpus.memories().size(), 2u);
  EXPECT_EQ(gpus.children().size(), 2u);
  EXPECT_EQ(gpus.type(), place_type::machine) << "the sliced place stays the root";
  auto cpus = m.slice(isa::host);
  EXPECT_EQ(cpus.processors().size(), 8u);
  EXPECT_EQ(cpus.memories().size(), 2u);
  EXPECT_TRUE(m.slice(isa::sim).processors().empty());
}

TEST(Place, SlicesKeepIdentity) {
  auto m = test::phalanx_fig1();
  auto gpus = m.slice(isa::cuda);
  auto sm = find(gpus, "cuda1 SM 3");
  auto sm_full = find(m, "cuda1 SM 3");
  EXPECT_EQ(sm, sm_full);
  EXPECT_EQ(sm.id(), sm_full.id());
  EXPECT_EQ(std::hash<place>{}(sm), std::hash<place>{}(sm_full));
  EXPECT_NE(sm.depth(), 0u);
  EXPECT_EQ(sm.unsliced().path(), sm_full.path());
  // Slices of slices still refer to the same machine.
  auto gpu1_sms = find(gpus, "cuda1").slice(place_kind::processor);
  EXPECT_EQ(gpu1_sms.processors().size(), 14u);
  EXPECT_EQ(gpu1_sms.processors().front(), find(m, "cuda1 SM 0"));
  EXPECT_EQ(gpu1_sms.unsliced(), find(m, "cuda1"));
}

TEST(Place, SliceWithPredicate) {
  auto m = test::phalanx_fig1();
  auto even =
      m.slice([](place const& p) { return p.type() == place_type::pu && p.os_index() % 2 == 0; });
  ASSERT_EQ(even.processors().size(), 4u);
  for (auto const& p : even.processors()) EXPECT_EQ(p.os_index() % 2, 0);
  auto package1 = find(m, "Package 1").slice(place_kind::memory);
  EXPECT_EQ(package1.memories().size(), 1u);
  EXPECT_EQ(package1.memories().front().name(), "NUMA 1");
}

TEST(Place, Contains) {
  auto m = test::phalanx_fig1();
  auto pkg0 = find(m, "Package 0");
  for (auto const& p : m.descendants()) EXPECT_TRUE(m.contains(p));
  EXPECT_TRUE(pkg0.contains(find(m, "PU 3")));
  EXPECT_TRUE(pkg0.contains(pkg0));
  EXPECT_FALSE(pkg0.contains(find(m, "PU 4")));
  EXPECT_FALSE(find(m, "PU 3").contains(pkg0));
  auto cpus = m.slice(isa::host);
  EXPECT_TRUE(cpus.contains(find(m, "PU 3")));
  EXPECT_FALSE(cpus.contains(find(m, "cuda0 SM 1"))) << "filtered out of the slice";
  EXPECT_FALSE(m.contains(test::phalanx_fig1())) << "another machine";
}

TEST(Place, CommonAncestor) {
  auto m = test::phalanx_fig1();
  EXPECT_EQ(find(m, "PU 1").common_ancestor(find(m, "PU 2")), find(m, "Package 0"));
  EXPECT_EQ(find(m, "PU 1").common_ancestor(find(m, "PU 1")), find(m, "PU 1"));
  EXPECT_EQ(find(m, "PU 1").common_ancestor(find(m, "cuda0 SM 0")), m);
  EXPECT_EQ(find(m, "cuda1 SM 2").common_ancestor(find(m, "cuda1 memory")), find(m, "cuda1"));
  auto cpus = m.slice(isa::host);
  EXPECT_THROW(find(cpus, "PU 0").common_ancestor(find(m, "cuda0 SM 0")), invalid_argument);
  try {
    find(cpus, "PU 0").common_ancestor(find(m, "cuda0 SM 0"));
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("cuda0 SM 0"), std::string::npos) << e.what();
  }
}

TEST(Place, DistanceIsAMetricOnTheTree) {
  auto m = test::phalanx_fig1();
  auto pu0 = find(m, "PU 0");
  EXPECT_EQ(pu0.distance(pu0), 0u);
  EXPECT_EQ(pu0.distance(find(m, "Core 0")), 1u);
  EXPECT_LT(pu0.distance(find(m, "NUMA 0")), pu0.distance(find(m, "NUMA 1")));
  EXPECT_LT(pu0.distance(find(m, "PU 1")), pu0.distance(find(m, "PU 4")));
  // Same answer from a slice: distance is measured on the machine.
  auto cpus = m.slice(isa::host);
  EXPECT_EQ(find(cpus, "PU 0").distance(find(m, "cuda0 SM 0")),
            pu0.distance(find(m, "cuda0 SM 0")));
  auto all = m.descendants();
  std::mt19937 rng(42);
  std::uniform_int_distribution<std::size_t> pick(0, all.size() - 1);
  for (int i = 0; i < 500; ++i) {
    auto const &a = all[pick(rng)], &b = all[pick(rng)], &c = all[pick(rng)];
    EXPECT_EQ(a.distance(b), b.distance(a));
    EXPECT_LE(a.distance(c), a.distance(b) + b.distance(c));
    EXPECT_EQ(a.distance(b) == 0, a == b);
  }
  EXPECT_THROW(pu0.distance(find(test::phalanx_fig1(), "PU 0")), invalid_argument);
}

TEST(Place, MemoriesAboveNearestFirst) {
  auto m = test::phalanx_fig1();
  auto cpu_mems = memories_above(find(m, "PU 6"));
  ASSERT_EQ(cpu_mems.size(), 1u);
  EXPECT_EQ(cpu_mems[0].name(), "NUMA 1");
  auto sm_mems = find(m, "cuda0 SM 6").memories_above();
  ASSERT_EQ(sm_mems.size(), 1u);
  EXPECT_EQ(sm_mems[0].name(), "cuda0 memory");
  auto self = find(m, "NUMA 0").memories_above();
  ASSERT_FALSE(self.empty());
  EXPECT_EQ(self[0].name(), "NUMA 0");
  for (auto const& p : m.processors()) {
    auto mems = p.memories_above();
    ASSERT_FALSE(mems.empty()) << p;
    for (std::size_t i = 1; i < mems.size(); ++i)
      EXPECT_LE(p.distance(mems[i - 1]), p.distance(mems[i])) << "nearest first from " << p;
  }
}

TEST(Place, NestedMemoriesAreOrderedByLevel) {
  // A memory attached at the root (e.g. a CXL expander) is further than the package's.
  machine_builder b({.type = place_type::machine, .name = "Machine"});
  b.add(b.root(), {.type = place_type::host_memory, .name = "far", .capacity = 1});
  auto pkg = b.add(b.root(), {.type = place_type::package, .name = "Package 0"});
  b.add(pkg, {.type = place_type::host_memory, .name = "near", .capacity = 1});
  b.add(pkg, {.type = place_type::pu, .name = "PU 0"});
  auto m = b.build();
  auto mems = find(m, "PU 0").memories_above();
  ASSERT_EQ(mems.size(), 2u);
  EXPECT_EQ(mems[0].name(), "near");
  EXPECT_EQ(mems[1].name(), "far");
}

TEST(Place, PlacesAreHashable) {
  auto m = test::phalanx_fig1();
  std::unordered_set<place> seen;
  for (auto const& p : m.descendants()) seen.insert(p);
  for (auto const& p : m.slice(isa::cuda).descendants()) seen.insert(p);
  EXPECT_EQ(seen.size(), m.descendants().size());
}

TEST(Place, EmptyHandleThrows) {
  place p;
  EXPECT_FALSE(p.valid());
  EXPECT_THROW((void)p.name(), invalid_argument);
  EXPECT_THROW((void)p.children(), invalid_argument);
  EXPECT_THROW((void)p.slice(isa::host), invalid_argument);
  EXPECT_EQ(p, place{});
  EXPECT_NE(p, test::phalanx_fig1());
}

TEST(MachineBuilder, RejectsChildrenOfLeavesAndUnknownParents) {
  machine_builder b({.type = place_type::machine, .name = "Machine"});
  auto pu = b.add(b.root(), {.type = place_type::pu, .name = "PU 0"});
  auto mem = b.add(b.root(), {.type = place_type::host_memory, .name = "NUMA 0"});
  EXPECT_THROW(b.add(pu, {.type = place_type::pu, .name = "PU 1"}), invalid_argument);
  EXPECT_THROW(b.add(mem, {.type = place_type::core, .name = "Core 0"}), invalid_argument);
  EXPECT_THROW(b.add(99, {.type = place_type::core, .name = "Core 0"}), invalid_argument);
  auto m = b.build();
  EXPECT_EQ(m.children().size(), 2u);
  EXPECT_THROW(b.build(), invalid_argument);
}

TEST(MachineBuilder, RanksGraftMachinesUnderACluster) {
  // The shape the MPI layer will build: cluster → rank → each process's machine.
  auto node = test::phalanx_fig1();
  machine_builder b({.type = place_type::cluster, .name = "Cluster"});
  for (int r = 0; r < 3; ++r) {
    auto rank =
        b.add(b.root(), {.type = place_type::rank, .name = "Rank " + std::to_string(r), .rank = r});
    b.graft(rank, node);
  }
  auto cluster = b.build();
  EXPECT_EQ(cluster.processors().size(), 3u * 29u);
  EXPECT_EQ(cluster.descendants(place_type::machine).size(), 3u);
  auto ranks = cluster.children();
  ASSERT_EQ(ranks.size(), 3u);
  auto pu_r0 = ranks[0].processors().front();
  auto pu_r2 = ranks[2].processors().front();
  EXPECT_EQ(pu_r0.common_ancestor(pu_r2), cluster);
  EXPECT_GT(pu_r0.distance(pu_r2), pu_r0.distance(ranks[0].processors().back()));
  EXPECT_EQ(ranks[1].slice(isa::cuda).processors().size(), 21u);
}

}  // namespace
}  // namespace strata
