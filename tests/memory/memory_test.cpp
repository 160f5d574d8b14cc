// Memory spaces, typed pointers, allocation and buffers (Phalanx §III-C, PARRAY §2.1,
// Alpaka §3.4.4).
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include "memory/registry.hpp"

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace strata {
namespace {

void expect_error_mentions(auto&& fn, std::string const& text) {
  try {
    fn();
    FAIL() << "no error; expected one mentioning: " << text;
  } catch (error const& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(Ptr, BehavesLikeAPointerWithinItsSpace) {
  runtime rt;
  auto p = allocate<int>(rt.machine(), 10);
  for (int i = 0; i < 10; ++i) p[i] = i;
  auto q = p + 3;
  EXPECT_EQ(*q, 3);
  EXPECT_EQ(q - p, 3);
  EXPECT_TRUE(p < q);
  ++q;
  EXPECT_EQ(q[1], 5);
  ptr<int const> c = p;  // adds const within the space
  EXPECT_EQ(c[9], 9);
  EXPECT_EQ(p.place().type(), place_type::host_memory);
  EXPECT_TRUE(ptr<int>{} == nullptr);
  deallocate(p);
}

TEST(Allocate, PicksAMemoryOfTheSpaceNearThePlace) {
  runtime rt({.sim_devices = "2:mem=64MiB"});
  auto m = rt.machine();
  auto h = allocate<double>(m.processors().front(), 100);
  EXPECT_EQ(h.place(), m.processors().front().memories_above().front());
  auto sims = m.slice(isa::sim).descendants(place_type::device);
  auto d1 = allocate<float, sim_space>(sims[1], 1000);
  EXPECT_EQ(d1.place().name(), "sim1 memory");
  auto d0 = allocate<float, sim_space>(m, 1000);  // the first sim memory with room
  EXPECT_EQ(d0.place().name(), "sim0 memory");
  auto pinned = allocate<char, pinned_space>(m, 5000);
  pinned[4999] = 'x';
  EXPECT_EQ(pinned[4999], 'x');
  auto big = allocate<char>(m, 8u << 20);  // large host allocations bind to the NUMA node
  big[(8u << 20) - 1] = 1;
  EXPECT_EQ(allocate<int>(m, 0), nullptr);
  for (auto p : {d0, d1}) deallocate(p);
  deallocate(h);
  deallocate(pinned);
  deallocate(big);
}

TEST(Allocate, WrongKindOfMemoryIsAnError) {
  runtime rt({.sim_devices = "1"});
  auto m = rt.machine();
  auto sim_mem = m.slice(isa::sim).memories().front();
  expect_error_mentions([&] { allocate<int>(sim_mem, 4); }, "needs a host memory");
  expect_error_mentions([&] { allocate<int, sim_space>(m.slice(isa::host), 4); },
                        "no sim device memory at or near");
  // The host's slice, not the whole machine: on a GPU machine the machine holds CUDA
  // memory and the allocation succeeds (seen on the H200 of session 52).
  expect_error_mentions([&] { allocate<int, cuda_space>(m.slice(isa::host), 4); },
                        "no CUDA device memory at or near");
  expect_error_mentions([&] { allocate<int>(place{}, 4); }, "empty");
}

TEST(Allocate, DeviceCapacityIsEnforced) {
  runtime rt({.sim_devices = "1:mem=1MiB"});
  auto dev = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  auto a = allocate<char, sim_space>(dev, 600 << 10);
  try {
    allocate<char, sim_space>(dev, 600 << 10);
    FAIL();
  } catch (out_of_memory const& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("600 KiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sim0 memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1 MiB"), std::string::npos) << msg;
  }
  deallocate(a);
  auto b = allocate<char, sim_space>(dev, 1 << 20);  // the space is free again
  deallocate(b);
}

TEST(Allocate, HostOutOfMemoryIsAnError) {
  runtime rt;
  EXPECT_THROW(allocate<char>(rt.machine(), std::size_t{1} << 62), out_of_memory);
  EXPECT_THROW(allocate<double>(rt.machine(), ~std::size_t{0} / 4), invalid_argument);
}

TEST(Allocate, SizesThatWrapAroundAreErrors) {
  runtime rt({.sim_devices = "1"});
  EXPECT_THROW(allocate<char>(rt.machine(), SIZE_MAX), invalid_argument);
  EXPECT_THROW((allocate<char, sim_space>(rt.machine(), SIZE_MAX - 10)), invalid_argument);
  EXPECT_THROW((buffer<char, 2>(rt.machine(), vec<2>{index_t{1} << 33, index_t{1} << 33})), error);
}

TEST(Deallocate, RejectsWhatItDidNotAllocate) {
  runtime rt({.sim_devices = "1"});
  auto p = allocate<int>(rt.machine(), 16);
  expect_error_mentions([&] { deallocate(p + 1); }, "points inside an allocation");
  int local = 0;
  expect_error_mentions([&] { deallocate(ptr<int>(&local, p.place_id())); },
                        "no allocation holds it");
  deallocate(p);
  expect_error_mentions([&] { deallocate(p); }, "not the start of a live host allocation");
  auto s = allocate<int, sim_space>(rt.machine(), 4);
  expect_error_mentions([&] { deallocate(ptr<int>(s.get(), s.place_id())); }, "it is sim memory");
  deallocate(s);
}

// A thread keeps its last lookups of the allocation registry (registry.cpp): a lookup after
// a free, or after another allocation took the same addresses, must see the change. The
// registry is driven directly, with records for addresses of one array (fake allocations:
// nothing is freed through them), so the same base comes back for certain.
TEST(FindAllocation, SeesFreesAndNewAllocationsAtTheSameAddress) {
  std::vector<char> memory(4096);
  auto record = [](std::size_t bytes, space_id space) {
    return detail::allocation_record{bytes, space, 0, 0, false, {}};
  };
  char* const base = memory.data() + 64;
  detail::register_allocation(base, record(256, space_id::host));
  ASSERT_TRUE(detail::find_allocation(base + 10));
  EXPECT_EQ(detail::find_allocation(base + 10)->bytes, 256u);
  // Five other allocations looked up: more than the thread keeps.
  for (int i = 1; i <= 5; ++i) {
    detail::register_allocation(base + 512 * i, record(64, space_id::host));
    ASSERT_TRUE(detail::find_allocation(base + 512 * i + 1));
  }
  ASSERT_TRUE(detail::find_allocation(base + 10));  // kept again
  // Freed, then the same base taken by a smaller allocation of another space.
  detail::unregister_allocation(base);
  EXPECT_FALSE(detail::find_allocation(base + 10)) << "a freed allocation was still found";
  detail::register_allocation(base, record(64, space_id::sim));
  auto const again = detail::find_allocation(base + 10);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->bytes, 64u) << "the freed allocation's size came back";
  EXPECT_EQ(again->space, space_id::sim);
  EXPECT_FALSE(detail::find_allocation(base + 100)) << "past the new allocation's end";
  // A free on another thread: this thread's next answer follows it.
  ASSERT_TRUE(detail::find_allocation(base + 512 + 1));
  std::thread([&] { detail::unregister_allocation(base + 512); }).join();
  EXPECT_FALSE(detail::find_allocation(base + 512 + 1)) << "a free on another thread was missed";
  // An allocation of 0 bytes holds its base only.
  detail::register_allocation(base + 3000, record(0, space_id::host));
  EXPECT_TRUE(detail::find_allocation(base + 3000));
  EXPECT_FALSE(detail::find_allocation(base + 3001));
  detail::unregister_allocation(base + 3000);
  EXPECT_FALSE(detail::find_allocation(base + 3000));
  detail::unregister_allocation(base);
  for (int i = 2; i <= 5; ++i) detail::unregister_allocation(base + 512 * i);
}

TEST(Buffer, PitchAlignsRows) {
  runtime rt({.sim_devices = "1"});
  buffer<float, 2> h(rt.machine(), vec<2>{3, 5});
  EXPECT_EQ(h.pitch(), 64u);
  EXPECT_EQ(h.bytes(), 3u * 64u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(h.data().get()) % 64, 0u);
  buffer<double, 3, sim_space> d(rt.machine(), vec<3>{2, 3, 40});
  EXPECT_EQ(d.pitch(), 512u);  // 320 bytes rounded up to 256-byte rows
  EXPECT_EQ(d.view().slice_pitch(), 3u * 512u);
  EXPECT_EQ(d.where().name(), "sim0 memory");
  buffer<int> one(rt.machine(), 7);
  EXPECT_EQ(one.pitch(), 28u);
  for (int i = 0; i < 7; ++i) one(i) = i * i;
  EXPECT_EQ(one(6), 36);
  h(2, 4) = 1.5f;
  EXPECT_EQ(h.view()(2, 4), 1.5f);
  EXPECT_THROW((buffer<int, 2>(rt.machine(), vec<2>{0, 3})), invalid_argument);
  auto moved = std::move(h);
  EXPECT_EQ(moved(2, 4), 1.5f);
}

TEST(View, WindowsAndBoundsChecks) {
  runtime rt;
  buffer<int, 2> b(rt.machine(), vec<2>{4, 6});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) b(i, j) = 10 * i + j;
  auto w = b.view().window(vec<2>{1, 2}, vec<2>{2, 3});
  EXPECT_EQ(w(0, 0), 12);
  EXPECT_EQ(w(1, 2), 24);
  EXPECT_FALSE(w.contiguous());
  EXPECT_THROW(b.view().window(vec<2>{3, 0}, vec<2>{2, 1}), invalid_argument);
#if !defined(NDEBUG)
  EXPECT_THROW(w(2, 0), invalid_argument);  // debug builds check view indices
#endif
}

}  // namespace
}  // namespace strata
