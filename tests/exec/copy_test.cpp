// copy() between every pair of memory spaces, 1-3D with pitch and offsets, compared
// element by element; fill and memset; bad copies.
#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "exec/backends.hpp"

namespace strata {
namespace {

class Copy : public testing::Test {
 protected:
  runtime rt{runtime_options{.sim_devices = "2:bw=50GB/s,lat=1us"}};
  place machine = rt.machine();
  place sim0 = machine.slice(isa::sim).descendants(place_type::device)[0];
  place sim1 = machine.slice(isa::sim).descendants(place_type::device)[1];
};

// Host data -> window of A -> window of B -> host, for buffers in two spaces.
template <class SA, class SB>
void round_trip_2d(place const& a_at, place const& b_at) {
  vec<2> const ext{7, 13};
  auto host = runtime::current().machine();
  buffer<int, 2> in(host, ext), out(host, ext);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 13; ++j) in(i, j) = 100 * i + j, out(i, j) = -1;
  buffer<int, 2, SA> a(a_at, vec<2>{9, 20});
  buffer<int, 2, SB> b(b_at, vec<2>{8, 15});
  auto aw = a.view().window(vec<2>{2, 5}, ext);
  auto bw = b.view().window(vec<2>{1, 1}, ext);
  copy(aw, in).wait();
  copy(bw, aw).wait();
  copy(out, bw).wait();
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 13; ++j) ASSERT_EQ(out(i, j), 100 * i + j) << i << "," << j;
}

TEST_F(Copy, EverySpacePairIn2DWithPitchAndOffsets) {
  round_trip_2d<host_space, host_space>(machine, machine);
  round_trip_2d<host_space, pinned_space>(machine, machine);
  round_trip_2d<pinned_space, host_space>(machine, machine);
  round_trip_2d<host_space, sim_space>(machine, sim0);
  round_trip_2d<sim_space, host_space>(sim0, machine);
  round_trip_2d<pinned_space, sim_space>(machine, sim1);
  round_trip_2d<sim_space, pinned_space>(sim1, machine);
  round_trip_2d<sim_space, sim_space>(sim0, sim1);  // between devices
  round_trip_2d<sim_space, sim_space>(sim0, sim0);  // within one device
}

TEST_F(Copy, OneAndThreeDimensions) {
  std::vector<double> src(1000), back(1000, 0.0);
  std::iota(src.begin(), src.end(), 0.5);
  auto d = allocate<double, sim_space>(sim1, 1200);
  ptr<double> hs(src.data(), 0), hb(back.data(), 0);
  copy(d + 100, hs, 1000).wait();
  copy(hb, d + 100, 1000).wait();
  EXPECT_EQ(back, src);
  deallocate(d);

  vec<3> const ext{3, 4, 5};
  buffer<float, 3> in(machine, ext), out(machine, ext);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k) in(i, j, k) = float(i * 100 + j * 10 + k);
  buffer<float, 3, sim_space> dev(sim0, vec<3>{4, 6, 9});
  auto window = dev.view().window(vec<3>{1, 2, 3}, ext);
  copy(window, in).wait();
  copy(out, window).wait();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k) ASSERT_EQ(out(i, j, k), in(i, j, k));
}

TEST_F(Copy, ThreeDimensionalWindowsKeepTheirParentsSlicePitch) {
  // Write a 2x2x2 block into the middle of a 2x4x4 buffer and read the whole buffer back:
  // only the window may change.
  buffer<int, 3> small(machine, vec<3>{2, 2, 2});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 2; ++k) small(i, j, k) = 1 + i * 4 + j * 2 + k;
  for (auto at : {machine, sim0}) {
    buffer<int, 3> whole(machine, vec<3>{2, 4, 4});
    if (at == machine) {
      buffer<int, 3> big(machine, vec<3>{2, 4, 4});
      fill(big, 0).wait();
      copy(big.view().window(vec<3>{0, 1, 1}, vec<3>{2, 2, 2}), small).wait();
      copy(whole, big).wait();
    } else {
      buffer<int, 3, sim_space> big(sim0, vec<3>{2, 4, 4});
      fill(big, 0).wait();
      copy(big.view().window(vec<3>{0, 1, 1}, vec<3>{2, 2, 2}), small).wait();
      copy(whole, big).wait();
    }
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 4; ++k) {
          bool inside = j >= 1 && j < 3 && k >= 1 && k < 3;
          int expect = inside ? small(i, j - 1, k - 1) : 0;
          ASSERT_EQ(whole(i, j, k), expect) << i << "," << j << "," << k;
        }
  }
}

TEST_F(Copy, FreeingDeviceMemoryWaitsForItsQueuedWork) {
  std::vector<char> host(std::size_t{8} << 20, 5);
  {
    buffer<char, 1, sim_space> d(sim0, host.size());
    copy(d.data(), ptr<char>(host.data(), 0), host.size());  // not waited for
  }  // the buffer's release waits for the device instead of freeing under the copy
  SUCCEED();
}

TEST_F(Copy, LargeHostCopiesRunInParallelAndArrive) {
  std::size_t const n = std::size_t{24} << 20;
  buffer<std::uint32_t> a(machine, n), b(machine, n);
  for (std::size_t i = 0; i < n; ++i) a(i) = static_cast<std::uint32_t>(i * 2654435761u);
  copy(b, a).wait();
  for (std::size_t i = 0; i < n; i += 4099) ASSERT_EQ(b(i), a(i));
  EXPECT_EQ(b(n - 1), a(n - 1));
  // Pitched, large: rows of 3000 ints with 64-byte aligned pitch.
  buffer<int, 2> p(machine, vec<2>{2000, 3000}), q(machine, vec<2>{2000, 3000});
  for (int i = 0; i < 2000; ++i) p(i, 2999) = i;
  copy(q, p).wait();
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(q(i, 2999), i);
}

// A copy whose source and destination share bytes reads every source element before it
// writes any (memmove semantics). Above 1 MiB the host copy ran in parallel pieces with
// memcpy and corrupted the seams between them (an outside probe, session 30).
TEST_F(Copy, OverlappingCopiesShiftAsMemmoveWouldInEveryPath) {
  for (std::size_t n : {std::size_t{1000}, std::size_t{2} << 20}) {
    std::vector<double> v(n + 1);
    std::iota(v.begin(), v.end(), 0.0);
    copy(ptr<double>(v.data() + 1, 0), ptr<double const>(v.data(), 0), n).wait();  // forward
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i + 1], double(i)) << n << " at " << i;
    std::iota(v.begin(), v.end(), 0.0);
    copy(ptr<double>(v.data(), 0), ptr<double const>(v.data() + 1, 0), n).wait();  // backward
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], double(i + 1)) << n << " at " << i;
  }
  // Pitched: a window shifted one row down and one column right within one 2-D array, on
  // the host (large enough for the parallel path) and within one sim device's memory.
  vec<2> const ext{600, 700};
  auto check = [&](auto& arr, auto&& to_host) {
    auto before = to_host();
    auto src = arr.view().window(vec<2>{0, 0}, vec<2>{ext[0] - 1, ext[1] - 1});
    auto dst = arr.view().window(vec<2>{1, 1}, vec<2>{ext[0] - 1, ext[1] - 1});
    copy(dst, src).wait();
    auto after = to_host();
    for (index_t i = 0; i < ext[0]; ++i)
      for (index_t j = 0; j < ext[1]; ++j) {
        auto const at = static_cast<std::size_t>(i * ext[1] + j);
        auto const want =
            i > 0 && j > 0 ? before[at - static_cast<std::size_t>(ext[1]) - 1] : before[at];
        ASSERT_EQ(after[at], want) << i << "," << j;
      }
  };
  buffer<int, 2> h(machine, ext);
  for (index_t i = 0; i < ext[0]; ++i)
    for (index_t j = 0; j < ext[1]; ++j) h(i, j) = static_cast<int>(i * 1000 + j);
  auto host_values = [&](auto& b) {
    buffer<int, 2> out(machine, ext);
    copy(out, b).wait();
    std::vector<int> v;
    for (index_t i = 0; i < ext[0]; ++i)
      for (index_t j = 0; j < ext[1]; ++j) v.push_back(out(i, j));
    return v;
  };
  check(h, [&] { return host_values(h); });
  buffer<int, 2, sim_space> d(sim0, ext);
  copy(d, h).wait();
  check(d, [&] { return host_values(d); });
}

TEST_F(Copy, FillAndMemsetOnHostAndDevice) {
  buffer<int, 2> h(machine, vec<2>{5, 7});
  fill(h, 42).wait();
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 7; ++j) ASSERT_EQ(h(i, j), 42);
  buffer<int, 2, sim_space> d(sim0, vec<2>{5, 7});
  fill(d, 7).wait();
  copy(h, d).wait();
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 7; ++j) ASSERT_EQ(h(i, j), 7);
  memset(d.view().window(vec<2>{1, 1}, vec<2>{2, 2}), 0xff).wait();
  copy(h, d).wait();
  EXPECT_EQ(h(1, 1), -1);
  EXPECT_EQ(h(2, 2), -1);
  EXPECT_EQ(h(3, 3), 7);
  EXPECT_EQ(h(0, 0), 7);
}

// A memset of a 3-D window writes that window only, on host and sim memory (its byte view
// once took pitch x window rows as its slice pitch and wrote into the parent's next rows);
// a fill of the same window as the reference.
TEST_F(Copy, MemsetOfA3DWindowWritesOnlyTheWindow) {
  vec<3> const ext{3, 4, 5}, at{1, 1, 0}, size{2, 2, 5};
  auto inside = [&](int i, int j, int k) {
    return i >= at[0] && i < at[0] + size[0] && j >= at[1] && j < at[1] + size[1] && k >= at[2] &&
           k < at[2] + size[2];
  };
  auto check = [&](buffer<int, 3> const& h, int in, char const* what) {
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 5; ++k)
          ASSERT_EQ(h(i, j, k), inside(i, j, k) ? in : 0) << what << " " << i << j << k;
  };
  buffer<int, 3> h(machine, ext);
  fill(h, 0).wait();
  memset(h.view().window(at, size), 0xff).wait();
  check(h, -1, "host memset");
  fill(h, 0).wait();
  fill(h.view().window(at, size), 9).wait();
  check(h, 9, "host fill");
  buffer<int, 3, sim_space> d(sim0, ext);
  fill(d, 0).wait();
  queue q(sim0);
  q.memset(d.view().window(at, size), 0xff);
  q.copy(h, d);
  q.wait();
  check(h, -1, "sim memset");
}

// fill and memset check their destination as copy does: a null pointer with elements to
// write, and a `cuda_space` pointer that names host memory (a host kernel would write
// through it), are errors, not segfaults.
TEST_F(Copy, FillAndMemsetRejectANullOrMisnamedDestination) {
  view<int, 1> null(ptr<int>(), vec<1>{10});
  for (auto const& call : {std::function<void()>([&] { fill(null, 1).wait(); }),
                           std::function<void()>([&] { memset(null, 0).wait(); })}) {
    try {
      call();
      ADD_FAILURE() << "no error";
    } catch (invalid_argument const& e) {
      EXPECT_NE(std::string(e.what()).find("null pointer"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(fill(view<int, 1>(ptr<int>(), vec<1>{0}), 1).wait());  // nothing to write
  // Fabricated device memory: its place id names the host's memory (0).
  view<int, 1, cuda_space> fake(ptr<int, cuda_space>(reinterpret_cast<int*>(0x10000), 0),
                                vec<1>{100});
  try {
    fill(fake, 0).wait();
    ADD_FAILURE() << "no error";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("fill: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("used as cuda memory"), std::string::npos) << e.what();
  }
  // A sim pointer dressed as host memory is the same mistake the other way round.
  buffer<int, 1, sim_space> d(sim0, 8);
  EXPECT_THROW(fill(view<int, 1>(ptr<int>(d.data().get(), sim0.id()), vec<1>{8}), 1).wait(),
               invalid_argument);
}

TEST_F(Copy, ShapeMismatchShowsBoth) {
  buffer<int, 2> a(machine, vec<2>{3, 4}), b(machine, vec<2>{4, 3});
  try {
    copy(a, b);
    FAIL();
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("destination [3 x 4] and source [4 x 3]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(copy(ptr<int>{}, a.data(), 3), invalid_argument);
}

#if !defined(NDEBUG)
TEST_F(Copy, ProvenanceChecksInDebugBuilds) {
  std::vector<int> host(16);
  auto d = allocate<int, sim_space>(sim0, 16);
  // A host address dressed up as sim memory.
  EXPECT_THROW(copy(ptr<int, sim_space>(host.data(), d.place_id()), ptr<int>(host.data(), 0), 4),
               invalid_argument);
  // Past the end of the allocation.
  EXPECT_THROW(copy(d + 10, ptr<int>(host.data(), 0), 8), invalid_argument);
  deallocate(d);
  // A freed pointer.
  EXPECT_THROW(copy(d, ptr<int>(host.data(), 0), 4), invalid_argument);
}
#endif

TEST_F(Copy, SimCopiesTakeAtLeastTheModeledTime) {
  // The emulator may be late (a busy host) but never faster than its link model.
  runtime::current();
  std::size_t const bytes = std::size_t{8} << 20;  // 8 MiB at 50 GB/s + 1 us: ~169 us
  auto d = allocate<char, sim_space>(sim0, bytes);
  std::vector<char> h(bytes, 1);
  auto t0 = std::chrono::steady_clock::now();
  copy(d, ptr<char>(h.data(), 0), bytes).wait();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 1e-6 + double(bytes) / 50e9);
  deallocate(d);
}

}  // namespace
}  // namespace strata
