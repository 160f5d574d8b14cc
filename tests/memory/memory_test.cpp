// Memory spaces, typed pointers, allocation and buffers (Phalanx §III-C, PARRAY §2.1,
// Alpaka §3.4.4).
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>

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
// sim memory is its device's pool, so a freed block comes back at the same address.
TEST(FindAllocation, SeesFreesAndNewAllocationsAtTheSameAddress) {
  runtime rt({.sim_devices = "2"});
  auto sims = rt.machine().slice(isa::sim).descendants(place_type::device);
  auto a = allocate<int, sim_space>(sims[0], 256);
  void const* address = a.get();
  auto const first = detail::find_allocation(address);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->space, space_id::sim);
  EXPECT_EQ(first->bytes, 256 * sizeof(int));
  // Every slot of the thread's cache filled with other lookups, then the first again.
  auto h = allocate<int>(rt.machine(), 16);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(detail::find_allocation(h.get() + i % 16));
  ASSERT_TRUE(detail::find_allocation(address));
  deallocate(a);
  EXPECT_FALSE(detail::find_allocation(address)) << "a freed allocation was still found";
  auto b = allocate<int, sim_space>(sims[0], 64);
  if (b.get() == address) {
    auto const again = detail::find_allocation(address);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->bytes, 64 * sizeof(int)) << "the freed allocation's size came back";
  }
  // Another thread's lookups and frees: this thread's answers follow them.
  ASSERT_TRUE(detail::find_allocation(h.get()));
  std::thread([&] { deallocate(h); }).join();
  EXPECT_FALSE(detail::find_allocation(h.get())) << "a free on another thread was missed";
  deallocate(b);
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
