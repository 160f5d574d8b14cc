// Array types and copies under overlap and concurrency (issue 14): unordered copies into
// neighbouring elements of one device array, overlapping source and destination ranges,
// strides and displacements judged on the whole mapping, pitched device copies of
// sliding windows, deeply referring types, user offset functions, printed references.
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include "exec/backends.hpp"

namespace strata {
namespace {

class LayoutStaging : public testing::Test {
 protected:
  runtime rt{runtime_options{.sim_devices = "2:bw=50GB/s,lat=1us"}};
  place machine = rt.machine();
  place sim0 = machine.slice(isa::sim).descendants(place_type::device)[0];
  place sim1 = machine.slice(isa::sim).descendants(place_type::device)[1];

  template <class T>
  std::vector<T> read_back(ptr<T, sim_space> d, index_t n) {
    std::vector<T> out(static_cast<std::size_t>(n));
    copy(ptr<T>(out.data(), 0), ptr<T const, sim_space>(d), n).wait();
    return out;
  }
};

// PARRAY §3.2: a copy writes y[B(k)] for its own k only. Two copies that write the even and
// the odd elements of one device array, unordered, must both land.
TEST_F(LayoutStaging, UnorderedCopiesIntoEvenAndOddElementsBothLand) {
  index_t const n = 2048;
  array_type<int, sim_space> const whole{n, 2};
  array_type<int, sim_space> const even{whole[0]};                               // 2k
  array_type<int, sim_space> const odd{dims{whole[0], 1 | disp(1) | whole[1]}};  // 2k + 1
  for (index_t k = 0; k < n; ++k) ASSERT_EQ(odd(k), 2 * k + 1);
  array_type<int> const host{n};
  std::vector<int> a(static_cast<std::size_t>(n)), b(a.size());
  std::iota(a.begin(), a.end(), 0);
  std::iota(b.begin(), b.end(), 100000);
  auto d = allocate<int, sim_space>(sim0, 2 * n);
  for (int rep = 0; rep < 4; ++rep) {
    fill(view<int, 1, sim_space>(d, vec<1>{2 * n}), -1).wait();
    auto e1 = copy(even.on(d), host.on(std::as_const(a).data()));
    auto e2 = copy(odd.on(d), host.on(std::as_const(b).data()));
    e1.wait();
    e2.wait();
    auto out = read_back(d, 2 * n);
    for (index_t k = 0; k < n; ++k) {
      ASSERT_EQ(out[static_cast<std::size_t>(2 * k)], k) << "rep " << rep;
      ASSERT_EQ(out[static_cast<std::size_t>(2 * k + 1)], 100000 + k) << "rep " << rep;
    }
  }
  // The same from another device (staged through the host on both sides).
  auto s = allocate<int, sim_space>(sim1, n);
  copy(ptr<int, sim_space>(s), ptr<int const>(a.data(), 0), n).wait();
  array_type<int, sim_space> const dense{n};
  fill(view<int, 1, sim_space>(d, vec<1>{2 * n}), -1).wait();
  auto e1 = copy(odd.on(d), dense.on(ptr<int const, sim_space>(s)));
  auto e2 = copy(even.on(d), host.on(std::as_const(b).data()));
  e1.wait();
  e2.wait();
  auto out = read_back(d, 2 * n);
  for (index_t k = 0; k < n; ++k) {
    ASSERT_EQ(out[static_cast<std::size_t>(2 * k)], 100000 + k);
    ASSERT_EQ(out[static_cast<std::size_t>(2 * k + 1)], k);
  }
  deallocate(s);
  deallocate(d);
}

// Overlapping copies have memmove semantics: every element is read before any is written.
class LayoutOverlap : public test::on_every_backend {};

TEST_P(LayoutOverlap, ShiftedCopiesWithinOneArrayAreMemmoves) {
  index_t const n = index_t{1} << 22;  // 16 MiB of ints: many chunks, several threads
  array_type<int> const t{n};
  std::vector<int> x(static_cast<std::size_t>(n + 1));
  // dst = x + 1, src = x
  std::iota(x.begin(), x.end(), 0);
  copy(after{}, here(), t.on(x.data() + 1), t.on(std::as_const(x).data())).wait();
  ASSERT_EQ(x[0], 0);
  for (index_t k = 0; k < n; ++k) ASSERT_EQ(x[static_cast<std::size_t>(k + 1)], k) << k;
  // src = x + 1, dst = x
  std::iota(x.begin(), x.end(), 0);
  copy(after{}, here(), t.on(x.data()), t.on(std::as_const(x).data() + 1)).wait();
  for (index_t k = 0; k < n; ++k) ASSERT_EQ(x[static_cast<std::size_t>(k)], k + 1) << k;
  ASSERT_EQ(x[static_cast<std::size_t>(n)], n);
}

TEST_P(LayoutOverlap, InPlaceTransposeReadsTheOriginal) {
  index_t const n = 512;
  array_type<double> const a{n, n};
  array_type<double> const tr{a[1], a[0]};
  std::vector<double> x(static_cast<std::size_t>(n * n));
  std::iota(x.begin(), x.end(), 0.0);
  copy(after{}, here(), tr.on(x.data()), a.on(std::as_const(x).data())).wait();
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j)
      ASSERT_EQ(x[static_cast<std::size_t>(j * n + i)], static_cast<double>(i * n + j));
}

INSTANTIATE_TEST_SUITE_P(Backends, LayoutOverlap, testing::ValuesIn(test::cpu_backends()),
                         test::backend_name);

TEST_F(LayoutStaging, ShiftedCopiesWithinOneSimArrayAreMemmoves) {
  index_t const n = 1 << 16;
  array_type<int, sim_space> const t{n};
  auto d = allocate<int, sim_space>(sim0, n + 1);
  std::vector<int> init(static_cast<std::size_t>(n + 1));
  std::iota(init.begin(), init.end(), 0);
  for (int dir = 0; dir < 2; ++dir) {
    copy(ptr<int, sim_space>(d), ptr<int const>(init.data(), 0), n + 1).wait();
    auto dst = dir == 0 ? d + 1 : d;
    auto src = ptr<int const, sim_space>(dir == 0 ? d : d + 1);
    copy(t.on(dst), t.on(src)).wait();
    auto out = read_back(d, n + 1);
    for (index_t k = 0; k < n; ++k)
      ASSERT_EQ(out[static_cast<std::size_t>(dir == 0 ? k + 1 : k)], dir == 0 ? k : k + 1)
          << "direction " << dir << ", k = " << k;
  }
  deallocate(d);
}

// mdspan's is_strided/stride describe the whole mapping: m(i + e_r) - m(i) == stride(r)
// for every index, not only along each sub-dimension alone.
TEST(LayoutStrides, JudgedOnTheWholeMapping) {
  array_type<int> const wrap{dims{3, 2} | cyclic(5)};  // (2i + j) mod 5
  EXPECT_EQ(wrap(2, 1), 0);
  EXPECT_FALSE(wrap.is_strided());
  EXPECT_EQ(wrap.stride(0), 0);
  EXPECT_EQ(wrap.stride(1), 0);
  array_type<int> const fits{dims{3, 2} | cyclic(6)};  // never wraps: strided (2, 1)
  EXPECT_TRUE(fits.is_strided());
  EXPECT_EQ(fits.stride(0), 2);
  EXPECT_EQ(fits.stride(1), 1);
  array_type<int> const a{6, 4};
  array_type<int> const t{a[1], a[0]};
  EXPECT_TRUE(t.is_strided());
  EXPECT_EQ(t.stride(0), 1);
  EXPECT_EQ(t.stride(1), 4);
  array_type<int> const shifted{dims{3, 2} | disp(7)};
  EXPECT_TRUE(shifted.is_strided());
  EXPECT_EQ(shifted.stride(0), 2);
  // Every strided answer must reproduce every offset.
  for (auto const* x : {&wrap, &fits, &t, &shifted, &a}) {
    if (!x->is_strided()) continue;
    for (index_t i = 0; i < x->extent(0); ++i)
      for (index_t j = 0; j < x->extent(1); ++j)
        ASSERT_EQ((*x)(i, j), (*x)(0, 0) + i * x->stride(0) + j * x->stride(1))
            << to_string(x->root());
  }
}

// PARRAY §2.10: a displacement is added to its dimension's offset once; the sub-dimensions
// of a displaced dimension still sum to it (§2.4: A(i, j) == A_0(i) + A_1(j)).
TEST(LayoutDisplacement, OnARootIsCountedOnce) {
  array_type<int> const w{dims{80, 80} | disp(5)};
  EXPECT_EQ(w(1, 1), 86);
  EXPECT_EQ(w[0](1) + w[1](1), 86);
  for (index_t i = 0; i < 80; i += 7)
    for (index_t j = 0; j < 80; j += 3) ASSERT_EQ(w(i, j), w[0](i) + w[1](j));
  // A type referring to a sub-dimension sees the same offsets, and strided forms agree.
  array_type<int> const row{80 | w[1]};
  for (index_t j = 0; j < 80; ++j) ASSERT_EQ(row(j), w[1](j));
  EXPECT_EQ(offset_range(w[1]).first, w[1](0));
  EXPECT_EQ(offset_range(w[0]).first, w[0](0));
  EXPECT_EQ(stp(w[0]), 80);
  // With a reference after the displacement: [[2][3] # disp(1) # A_0], A_0 of stride 4.
  array_type<int> const base{8, 4};
  array_type<int> const c{dims{2, 3} | disp(1) | base[0]};
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j) {
      ASSERT_EQ(c(i, j), base[0](3 * i + j + 1));
      ASSERT_EQ(c(i, j), c[0](i) + c[1](j));
    }
}

// A source whose rows overlap (a sliding window: row i starts 2 elements after row i - 1)
// and a destination that repeats offsets, on a sim device: the copy engine's pitched
// copies need a pitch of at least a row (as cudaMemcpy2D does); a repeated destination
// offset keeps the last k's element (PARRAY §3.2).
TEST_F(LayoutStaging, SlidingWindowsOnADevice) {
  index_t const rows = 16, cols = 256;
  array_type<float, sim_space> const pairs{64, 2};
  array_type<float, sim_space> const line{1024};
  array_type<float, sim_space> const window{rows | pairs[0], cols | line.root()};  // 2i + j
  ASSERT_EQ(window(3, 5), 11);
  index_t const span = 2 * (rows - 1) + cols;
  array_type<float> const dense{rows, cols};
  auto d = allocate<float, sim_space>(sim0, 1024);
  std::vector<float> init(1024);
  std::iota(init.begin(), init.end(), 0.f);
  copy(ptr<float, sim_space>(d), ptr<float const>(init.data(), 0), 1024).wait();
  // Device source with overlapping rows -> host.
  std::vector<float> out(static_cast<std::size_t>(rows * cols), -1.f);
  copy(dense.on(out.data()), window.on(ptr<float const, sim_space>(d))).wait();
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j)
      ASSERT_EQ(out[static_cast<std::size_t>(i * cols + j)], static_cast<float>(2 * i + j));
  // Host -> device destination with overlapping rows: the last writer of each offset wins.
  std::vector<float> src(static_cast<std::size_t>(rows * cols));
  std::iota(src.begin(), src.end(), 0.f);
  copy(window.on(d), dense.on(std::as_const(src).data())).wait();
  auto back = read_back(d, 1024);
  for (index_t o = 0; o < span; ++o) {
    index_t last = -1;
    for (index_t k = 0; k < rows * cols; ++k)
      if (window(k) == o) last = k;
    ASSERT_EQ(back[static_cast<std::size_t>(o)], static_cast<float>(last)) << o;
  }
  for (index_t o = span; o < 1024; ++o) ASSERT_EQ(back[static_cast<std::size_t>(o)], init[o]);
  deallocate(d);
}

// Types that refer to types that refer to types (the manual's Listing 43 builds C from A
// and B, then tiles of C's sub-dimensions): referred trees are shared, not copied.
TEST(LayoutReferences, DeepReferencesFitAndKeepTheirOffsets) {
  array_type<float> const a{dims{dims{4, 8}, dims{2, 2}}, dims{dims{4, 8}, dims{2, 2}}};
  array_type<float> const b{dims{a[1][0], a[0][0]}, dims{a[1][1], a[0][1]}};
  array_type<float> const c{a[0], b[1]};        // [[A_0][B_1]]
  array_type<float> const d{c[0][1], c[1][1]};  // [[C_0_1][C_1_1]]
  ASSERT_EQ(d.size(), c[0][1].size() * c[1][1].size());
  for (index_t i = 0; i < c[0][1].size(); ++i)
    for (index_t j = 0; j < c[1][1].size(); ++j) ASSERT_EQ(d(i, j), a[0][1](i) + b[1][1](j));
  // Shared sub-trees: nine references to an 8-leaf type have 72 leaves in 19 nodes. A
  // multi-index over leaves has room for max_dim_nodes of them: beyond, an error.
  array_type<float> const ones{dims{1, 1, 1, 1, 1, 1, 1, 1}};
  array_type<float> const many{ones.root(), ones.root(), ones.root(), ones.root(), ones.root(),
                               ones.root(), ones.root(), ones.root(), ones.root()};
  EXPECT_EQ(many.size(), 1);
  EXPECT_EQ(many(0), 0);
  EXPECT_THROW(many(0, 0), invalid_argument);
  // Transposing by type, 12 times over.
  array_type<float> t = a;
  for (int level = 0; level < 12; ++level) t = array_type<float>{t[1], t[0]};
  for (index_t i = 0; i < a.extent(0); ++i)
    for (index_t j = 0; j < a.extent(1); ++j) ASSERT_EQ(t(i, j), a(i, j));
}

// PARRAY §2.11's func example keeps state (it records offsets as they are asked for): a copy
// calls a user offset function once per element and from one thread.
struct counting_offsets {
  std::atomic<long> calls{0};
  std::mutex m;
  std::set<std::thread::id> threads;
};
index_t reversed_counted(index_t i, void const* context) {
  auto* c = static_cast<counting_offsets*>(const_cast<void*>(context));
  c->calls.fetch_add(1);
  std::lock_guard lock(c->m);
  c->threads.insert(std::this_thread::get_id());
  return (index_t{1} << 18) - 1 - i;
}

TEST_F(LayoutStaging, UserOffsetFunctionsAreCalledOncePerElementFromOneThread) {
  index_t const n = index_t{1} << 18;  // 1 MiB of ints: launched over the pool
  array_type<int> const dense{n};
  std::vector<int> src(static_cast<std::size_t>(n)), dst(src.size(), -1);
  std::iota(src.begin(), src.end(), 0);
  for (int side = 0; side < 2; ++side) {
    counting_offsets count;
    array_type<int> const rev{n | func{reversed_counted, &count}};
    std::fill(dst.begin(), dst.end(), -1);
    if (side == 0)
      copy(dense.on(dst.data()), rev.on(std::as_const(src).data())).wait();
    else
      copy(rev.on(dst.data()), dense.on(std::as_const(src).data())).wait();
    EXPECT_EQ(count.calls.load(), n) << "side " << side;
    EXPECT_EQ(count.threads.size(), 1u) << "side " << side;
    for (index_t k = 0; k < n; ++k)
      ASSERT_EQ(dst[static_cast<std::size_t>(k)], n - 1 - k) << "side " << side;
  }
  // Through a device: the same count.
  counting_offsets count;
  array_type<int, sim_space> const rev_dev{n | func{reversed_counted, &count}};
  auto d = allocate<int, sim_space>(sim0, n);
  copy(rev_dev.on(d), dense.on(std::as_const(src).data())).wait();
  EXPECT_EQ(count.calls.load(), n);
  auto out = read_back(d, n);
  for (index_t k = 0; k < n; ++k) ASSERT_EQ(out[static_cast<std::size_t>(k)], n - 1 - k);
  deallocate(d);
}

TEST(LayoutPrinting, ReferencesPrintTheReferredDimensions) {
  array_type<int> const a{5, 5};
  array_type<int> const id{a[0], a[1]};
  array_type<int> const tr{a[1], a[0]};
  EXPECT_NE(to_string(id.root()), to_string(tr.root()));
  EXPECT_EQ(to_string(tr.root()), "[ref([5][5]_1)][ref([5][5]_0)]");
  array_type<int> const c{7 | a[0]};
  EXPECT_EQ(to_string(c.root()), "[7 # ref([5][5]_0)]");
  array_type<int> const whole{a.root()};
  EXPECT_EQ(to_string(whole.root()), "[ref([5][5])]");
}

}  // namespace
}  // namespace strata
