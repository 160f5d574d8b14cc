// Arenas and the multiarch allocator (Ripple §5.1): alignment, exhaustion, reset,
// concurrent allocation, per-thread and per-device arenas.
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <latch>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "machine/example_machines.hpp"

namespace strata {
namespace {

std::uintptr_t address_of(void const* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

bool contains(std::string const& text, std::string const& part) {
  return text.find(part) != std::string::npos;
}

place first_sim_device(runtime const& rt) {
  auto devices = rt.machine().slice(isa::sim).descendants(place_type::device);
  return devices.empty() ? place{} : devices.front();
}

place memory_of(place const& device) {
  for (auto const& m : device.memories())
    if (m.type() == place_type::device_memory) return m;
  return {};
}

TEST(Arena, EveryAllocationIsAlignedInsideTheBufferAndDisjoint) {
  runtime rt;
  arena<> a(rt.machine(), 64 << 10);
  EXPECT_EQ(a.capacity(), std::size_t{64} << 10);
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.where().type(), place_type::host_memory);

  struct request {
    std::size_t bytes, align;
  };
  std::vector<request> requests{{1, 1},   {3, 8},    {5, 128}, {7, 4},  {1, 4096},
                                {24, 16}, {100, 64}, {2, 2},   {9, 256}};
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
  for (auto r : requests) {
    auto p = a.allocate<std::byte>(r.bytes, r.align);
    ASSERT_TRUE(p);
    EXPECT_EQ(address_of(p.get()) % r.align, 0u) << "alignment " << r.align;
    EXPECT_EQ(p.place(), a.where());
    ranges.emplace_back(address_of(p.get()), address_of(p.get()) + r.bytes);
  }
  auto d = a.allocate<double>(3);
  EXPECT_EQ(address_of(d.get()) % alignof(double), 0u);
  d[2] = 1.5;  // host memory: dereferenceable
  ranges.emplace_back(address_of(d.get()), address_of(d.get() + 3));

  // All inside the arena's one registered allocation, none overlapping.
  auto info = detail::find_allocation(d.get());
  ASSERT_TRUE(info);
  EXPECT_EQ(info->bytes, a.capacity());
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_GE(ranges[i].first, address_of(info->base));
    EXPECT_LE(ranges[i].second, address_of(info->base) + info->bytes);
    if (i > 0) {
      EXPECT_LE(ranges[i - 1].second, ranges[i].first);
    }
  }
  EXPECT_EQ(a.used(), ranges.back().second - address_of(info->base));
}

TEST(Arena, ExhaustionNamesTheRequestTheBytesUsedAndTheCapacity) {
  runtime rt;
  arena<> a(rt.machine(), 1000);
  a.allocate<std::byte>(600);
  try {
    a.allocate<std::byte>(500);
    FAIL() << "500 bytes fit in 400";
  } catch (out_of_memory const& e) {
    std::string what = e.what();
    EXPECT_TRUE(contains(what, "500 bytes")) << what;
    EXPECT_TRUE(contains(what, "600 of its 1000 bytes")) << what;
    EXPECT_TRUE(contains(what, "400 are left")) << what;
    EXPECT_TRUE(contains(what, a.where().path())) << what;
  }
  EXPECT_EQ(a.used(), 600u) << "a failed request claims nothing";
  a.allocate<std::byte>(400);  // exactly the rest
  EXPECT_EQ(a.used(), 1000u);
  EXPECT_THROW(a.allocate<std::byte>(1), out_of_memory);
}

TEST(Arena, ResetStartsOverAtTheBeginning) {
  runtime rt;
  arena<> a(rt.machine(), 4096);
  auto first = a.allocate<int>(10);
  a.allocate<int>(100);
  EXPECT_GE(a.used(), 440u);
  a.reset();
  EXPECT_EQ(a.used(), 0u);
  EXPECT_EQ(a.allocate<int>(10), first) << "memory is handed out again from the start";
  for (int round = 0; round < 100; ++round) {  // a full arena is usable again after reset
    a.reset();
    a.allocate<std::byte>(4096);
  }
}

TEST(Arena, BadArgumentsAreClearErrors) {
  runtime rt;
  EXPECT_THROW(arena<>(rt.machine(), 0), invalid_argument);
  EXPECT_THROW(arena<>(place{}, 64), invalid_argument);
  EXPECT_THROW(arena<>(test::phalanx_fig1(), 64), invalid_argument) << "another machine";
  arena<> a(rt.machine(), 256);
  try {
    a.allocate<std::byte>(1, 3);
    FAIL();
  } catch (invalid_argument const& e) {
    EXPECT_TRUE(contains(e.what(), "power of two")) << e.what();
  }
  EXPECT_THROW(a.allocate<double>(1, 4), invalid_argument) << "below alignof(double)";
  EXPECT_FALSE(a.allocate<int>(0)) << "n == 0 gives null, as strata::allocate";
  EXPECT_THROW(a.allocate<double>(~std::size_t{0} / 4), invalid_argument) << "overflow";
  EXPECT_EQ(a.used(), 0u);

  arena<> b(std::move(a));
  EXPECT_EQ(b.capacity(), 256u);
  EXPECT_TRUE(b.allocate<int>(1));
  EXPECT_EQ(a.capacity(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  try {
    a.allocate<int>(1);
    FAIL();
  } catch (invalid_argument const& e) {
    EXPECT_TRUE(contains(e.what(), "moved from")) << e.what();
  }
  arena<> c;
  c = std::move(b);
  EXPECT_EQ(c.used(), sizeof(int));
}

// Many threads at once on one arena: every range is disjoint from every other, and
// together they never exceed the capacity, including when the arena runs full.
TEST(Arena, ConcurrentAllocationsFromManyThreadsAreDisjoint) {
  runtime rt;
  constexpr int threads = 8;
  constexpr int per_thread = 4000;
  arena<> a(rt.machine(), 256 << 10);  // too small for all: some threads see it full
  std::vector<std::vector<std::pair<std::uintptr_t, std::uintptr_t>>> got(threads);
  std::vector<int> failures(threads, 0);
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < per_thread; ++i) {
        std::size_t bytes = 1 + static_cast<std::size_t>((i * 7 + t * 13) % 24);
        std::size_t align = std::size_t{1} << ((i + t) % 5);  // 1..16
        try {
          auto p = a.allocate<std::byte>(bytes, align);
          if (address_of(p.get()) % align != 0) ++failures[t];
          std::fill_n(p.get(), bytes, std::byte(t));  // a sanitizer sees overlaps as races
          got[t].emplace_back(address_of(p.get()), address_of(p.get()) + bytes);
        } catch (out_of_memory const&) {
        }
      }
    });
  for (auto& th : pool) th.join();

  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> all;
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(failures[t], 0) << "misaligned allocations on thread " << t;
    all.insert(all.end(), got[t].begin(), got[t].end());
  }
  ASSERT_FALSE(all.empty());
  std::sort(all.begin(), all.end());
  for (std::size_t i = 1; i < all.size(); ++i)
    ASSERT_LE(all[i - 1].second, all[i].first) << "overlap at " << i;
  auto info = detail::find_allocation(reinterpret_cast<void const*>(all.front().first));
  ASSERT_TRUE(info);
  EXPECT_LE(all.back().second, address_of(info->base) + info->bytes);
  EXPECT_LE(a.used(), a.capacity());
  EXPECT_LT(all.size(), std::size_t{threads} * per_thread) << "the arena was meant to run full";
}

TEST(Arena, DeviceArenaLivesInTheSimMemoryAndCountsAgainstItsCapacity) {
  runtime rt({.sim_devices = "1:mem=1MiB"});
  auto dev = first_sim_device(rt);
  auto mem = memory_of(dev);
  ASSERT_TRUE(mem.valid());
  {
    arena<sim_space> a(dev, 768 << 10);
    EXPECT_EQ(a.where(), mem);
    auto p = a.allocate<float>(16);
    EXPECT_EQ(p.place(), mem);
    EXPECT_EQ(address_of(p.get()) % alignof(float), 0u);
    // The arena holds 768 KiB of the 1 MiB: 512 KiB more do not fit.
    EXPECT_THROW((allocate<std::byte, sim_space>(dev, 512 << 10)), out_of_memory);
  }
  auto q = allocate<std::byte, sim_space>(dev, 512 << 10);  // the arena gave its bytes back
  deallocate(q);
  EXPECT_THROW(arena<sim_space>(dev, 2 << 20), out_of_memory);
  EXPECT_THROW(arena<sim_space>(rt.machine().memories().front(), 64), invalid_argument)
      << "a host memory holds no sim arena";
}

TEST(MultiarchArena, CpuArenasAreDistinctPerThreadAndStablePerThread) {
  runtime rt;
  multiarch_allocator alloc(rt.machine(), 16 << 10, 16 << 10);
  auto* main_arena = &alloc.cpu();
  constexpr int threads = 6;
  std::vector<arena<host_space>*> seen(threads, nullptr);
  std::vector<int> unstable(threads, 0);
  std::latch all_have_one(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      seen[t] = &alloc.cpu();
      all_have_one.arrive_and_wait();  // every thread alive at once: no arena handed on
      for (int i = 0; i < 100; ++i) {
        auto& a = alloc.cpu();
        if (&a != seen[t]) ++unstable[t];
        auto p = a.allocate<int>(4);
        p[0] = t;
      }
    });
  for (auto& th : pool) th.join();
  std::set<arena<host_space>*> distinct(seen.begin(), seen.end());
  EXPECT_EQ(distinct.size(), std::size_t{threads});
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(unstable[t], 0) << "thread " << t;
    EXPECT_EQ(seen[t]->used(), 100 * 4 * sizeof(int));
    EXPECT_EQ(seen[t]->where().type(), place_type::host_memory);
  }
  EXPECT_EQ(&alloc.cpu(), main_arena);
  EXPECT_EQ(distinct.count(main_arena), 0u) << "the main thread has its own";
}

TEST(MultiarchArena, AnExitedThreadsArenaGoesToTheNextThreadUnreset) {
  runtime rt;
  multiarch_allocator alloc(rt.machine(), 4096, 4096);
  arena<host_space>* first = nullptr;
  std::thread([&] {
    first = &alloc.cpu();
    first->allocate<int>(8);
  }).join();
  arena<host_space>* second = nullptr;
  std::size_t used = 0;
  std::thread([&] {
    second = &alloc.cpu();
    used = second->used();
  }).join();
  EXPECT_EQ(first, second) << "memory stays bounded by the threads alive at once";
  EXPECT_EQ(used, 8 * sizeof(int)) << "what the first thread allocated stays valid";
}

TEST(MultiarchArena, AllocatorsCoexistAndDestroyedOnesAreNeverTouched) {
  runtime rt;
  // The same stack slot each round: a cache keyed by address would find the last
  // round's (freed) arena; keyed by identity, each round starts with a fresh one.
  for (int round = 0; round < 5; ++round) {
    multiarch_allocator alloc(rt.machine(), 4096, 4096);
    auto& a = alloc.cpu();
    EXPECT_EQ(a.used(), 0u) << "round " << round;
    a.allocate<std::int64_t>(3);
  }
  multiarch_allocator x(rt.machine(), 4096, 4096);
  multiarch_allocator y(rt.machine(), 8192, 4096);
  EXPECT_NE(&x.cpu(), &y.cpu());
  EXPECT_EQ(x.cpu().capacity(), 4096u);
  EXPECT_EQ(y.cpu().capacity(), 8192u);

  // A thread outlives an allocator it used: its exit must not hand the arena back to
  // the destroyed allocator (ASan reports it if it does).
  auto doomed = std::make_unique<multiarch_allocator>(rt.machine(), 4096, 4096);
  std::latch used(1), destroyed(1);
  std::thread th([&] {
    doomed->cpu().allocate<int>(1);
    x.cpu().allocate<int>(1);
    used.count_down();
    destroyed.wait();
  });
  used.wait();
  doomed.reset();
  destroyed.count_down();
  th.join();
  std::thread([&] { EXPECT_EQ(x.cpu().used(), sizeof(int)) << "x got its arena back"; }).join();
}

TEST(MultiarchArena, MovesKeepTheArenas) {
  runtime rt;
  multiarch_allocator a(rt.machine(), 4096, 4096);
  auto* mine = &a.cpu();
  multiarch_allocator b(std::move(a));
  EXPECT_EQ(&b.cpu(), mine);
  EXPECT_EQ(b.cpu_bytes(), 4096u);
  EXPECT_THROW(a.cpu(), invalid_argument);  // NOLINT(bugprone-use-after-move)
}

TEST(MultiarchArena, DeviceArenasLiveInEachSimDevicesMemory) {
  runtime rt({.sim_devices = "2"});
  multiarch_allocator alloc(rt.machine(), 4096, 64 << 10);
  auto devices = rt.machine().slice(isa::sim).descendants(place_type::device);
  ASSERT_EQ(devices.size(), 2u);
  std::vector<arena<sim_space>*> arenas;
  for (auto const& dev : devices) {
    auto mem = memory_of(dev);
    arena<sim_space>& a = alloc.device(dev);
    EXPECT_EQ(a.capacity(), std::size_t{64} << 10);
    auto p = a.allocate<double>(10);
    EXPECT_EQ(p.place(), mem);
    EXPECT_EQ(&alloc.device(mem), &a) << "the device and its memory name one arena";
    EXPECT_EQ(&alloc.device(dev.processors().front()), &a) << "as does a compute unit";
    arenas.push_back(&a);
  }
  EXPECT_NE(arenas[0], arenas[1]);

  // Many threads asking for the same device's arena at once get the same one.
  std::vector<arena<sim_space>*> got(8, nullptr);
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < got.size(); ++t)
    pool.emplace_back([&, t] {
      got[t] = &alloc.device(devices[1]);
      got[t]->allocate<float>(4);
    });
  for (auto& th : pool) th.join();
  for (auto* g : got) EXPECT_EQ(g, arenas[1]);
}

TEST(MultiarchArena, DeviceArenasCountAgainstTheDeviceCapacity) {
  runtime rt({.sim_devices = "1:mem=1MiB"});
  auto dev = first_sim_device(rt);
  {
    multiarch_allocator alloc(rt.machine(), 4096, 2 << 20);
    EXPECT_THROW(alloc.device(dev), out_of_memory) << "2 MiB arena on a 1 MiB device";
  }
  multiarch_allocator alloc(rt.machine(), 4096, 768 << 10);
  alloc.device(dev);
  EXPECT_THROW((allocate<std::byte, sim_space>(dev, 512 << 10)), out_of_memory);
}

TEST(MultiarchArena, DeviceErrorsSayWhatWasExpected) {
  runtime rt({.sim_devices = "1"});
  multiarch_allocator alloc(rt.machine(), 4096, 4096);
  auto expect_invalid = [&](place const& p, std::string const& part) {
    try {
      alloc.device(p);
      ADD_FAILURE() << "no error for " << part;
    } catch (invalid_argument const& e) {
      EXPECT_TRUE(contains(e.what(), part)) << e.what();
    }
  };
  expect_invalid(place{}, "empty");
  expect_invalid(rt.machine().memories().front(), "expected a device");
  expect_invalid(rt.machine().processors().front(), "expected a device");
  expect_invalid(test::find(test::phalanx_fig1(), "cuda0"), "not part of the machine");
  try {
    alloc.device<cuda_space>(first_sim_device(rt));
    FAIL();
  } catch (invalid_argument const& e) {
    EXPECT_TRUE(contains(e.what(), "device<sim_space>")) << e.what();
  }
  EXPECT_THROW(multiarch_allocator(rt.machine(), 0, 4096), invalid_argument);
  EXPECT_THROW(multiarch_allocator(place{}, 4096, 4096), invalid_argument);
}

TEST(MultiarchArena, ResetAllResetsEveryThreadsAndDevicesArena) {
  runtime rt({.sim_devices = "1"});
  multiarch_allocator alloc(rt.machine(), 4096, 4096);
  alloc.cpu().allocate<int>(5);
  auto& dev = alloc.device(first_sim_device(rt));
  dev.allocate<int>(5);
  arena<host_space>* other = nullptr;
  std::thread([&] {
    other = &alloc.cpu();
    other->allocate<int>(7);
  }).join();
  alloc.reset_all();
  EXPECT_EQ(alloc.cpu().used(), 0u);
  EXPECT_EQ(dev.used(), 0u);
  EXPECT_EQ(other->used(), 0u);
}

// Arena memory is ordinary Strata memory: kernels and copies take its pointers, and the
// launch checks see a sim arena's pointers as memory of that device.
TEST(MultiarchArena, ArenaPointersWorkWithLaunchAndCopy) {
  runtime rt({.sim_devices = "2"});
  auto devices = rt.machine().slice(isa::sim).descendants(place_type::device);
  multiarch_allocator alloc(rt.machine(), 64 << 10, 64 << 10);
  auto d = alloc.device(devices[0]).allocate<int>(1000);
  launch(
      devices[0], divide_work(devices[0], 1000),
      [](auto const& self, int* v, int n) {
        for (auto i : self.elements(n)) v[i] = 3 * static_cast<int>(i);
      },
      d, 1000)
      .wait();
  auto h = alloc.cpu().allocate<int>(1000);
  copy(h, d, 1000).wait();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(h[i], 3 * i);
  launch(
      rt.machine(), divide_work(rt.machine(), 1000),
      [](auto const& self, int* v, int n) {
        for (auto i : self.elements(n)) v[i] += 1;
      },
      h, 1000)
      .wait();
  EXPECT_EQ(h[999], 3 * 999 + 1);
  EXPECT_THROW(launch(
                   devices[1], grid(1), [](auto const&, int*) {}, d),
               invalid_argument)
      << "another device's arena memory";
}

}  // namespace
}  // namespace strata
