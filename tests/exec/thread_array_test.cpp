// Thread-array types (PARRAY §4, §5.5; include/strata/exec/thread_array.hpp): the
// manual's listings, then the adversarial cases first — more threads than cores, threads
// that block, syncs of groups that move at different paces, a thread that throws or
// returns while others wait in a sync, thousands of launches, arrays started together.
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "exec/thread_array_kernels.hpp"

namespace strata {
namespace {

using pthd = thread_array<thread_kind::pthd>;
using omp = thread_array<thread_kind::omp>;
using cuda = thread_array<thread_kind::cuda>;

template <class T>
class CpuThreadArray : public testing::Test {
 protected:
  static bool available() { return !std::is_same_v<T, omp> || detail::openmp_built(); }
};
using cpu_kinds = testing::Types<pthd, omp>;
struct kind_name {
  template <class T>
  static std::string GetName(int) {
    return std::is_same_v<T, pthd> ? "pthd" : "omp";
  }
};
TYPED_TEST_SUITE(CpuThreadArray, cpu_kinds, kind_name);

// Listings 24 and 29: `for pthd [[3][4]]`: tid, tid_0 = tid / 4 % 3, tid_1 = tid % 4.
TYPED_TEST(CpuThreadArray, EveryThreadRunsOnceWithItsIdsPerSubDimension) {
  if (!this->available()) GTEST_SKIP() << "libstrata built without OpenMP";
  TypeParam P{dims{3, 4}};
  EXPECT_EQ(P.size(), 12);
  EXPECT_EQ(P.ndim(), 2);
  std::vector<std::atomic<int>> runs(12);
  std::vector<index_t> row(12), col(12), size(12);
  int const x = 5;
  for_threads(P, [&](thread_context const& t) {
    runs[static_cast<std::size_t>(t.tid())]++;
    row[static_cast<std::size_t>(t.tid())] = t.tid(0);
    col[static_cast<std::size_t>(t.tid())] = t.tid(1);
    size[static_cast<std::size_t>(t.tid())] = t.size() * 100 + t.size(1);
    if (t.tid() == x) {
      EXPECT_EQ(t.tid(0), 1);  // Listing 29: tid 5 has tid_0 = 1
    }
  });
  for (index_t i = 0; i < 12; ++i) {
    EXPECT_EQ(runs[static_cast<std::size_t>(i)], 1);
    EXPECT_EQ(row[static_cast<std::size_t>(i)], i / 4 % 3);
    EXPECT_EQ(col[static_cast<std::size_t>(i)], i % 4);
    EXPECT_EQ(size[static_cast<std::size_t>(i)], 1204);
  }
}

// All threads run at once, more than the cores: each waits (without sync) until all have
// started, which only concurrent threads can do.
TYPED_TEST(CpuThreadArray, ThreadsRunConcurrentlyBeyondTheCoreCount) {
  if (!this->available()) GTEST_SKIP() << "libstrata built without OpenMP";
  TypeParam P{16};
  std::atomic<int> started{0};
  for_threads(P, [&](thread_context const&) {
    started++;
    while (started.load() < 16) std::this_thread::yield();
  });
  EXPECT_EQ(started.load(), 16);
}

// Listing 30 and rounds of it: what a thread wrote before a sync, every thread sees
// after it; a thread that sleeps before the sync holds the others back.
TYPED_TEST(CpuThreadArray, SyncOrdersEveryRound) {
  if (!this->available()) GTEST_SKIP() << "libstrata built without OpenMP";
  int const n = 6, rounds = 300;
  TypeParam P{n};
  std::vector<std::atomic<int>> slot(n);
  std::atomic<int> wrong{0};
  for_threads(P, [&](thread_context const& t) {
    if (t.tid() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (int r = 1; r <= rounds; ++r) {
      slot[static_cast<std::size_t>(t.tid())].store(r, std::memory_order_relaxed);
      t.sync();
      for (int k = 0; k < n; ++k)
        if (slot[static_cast<std::size_t>(k)].load(std::memory_order_relaxed) != r) wrong++;
      t.sync();
    }
  });
  EXPECT_EQ(wrong.load(), 0);
}

// sync_1 in [[3][4]]: each row of 4 meets alone; rows make different numbers of rounds,
// which only independent groups allow.
TYPED_TEST(CpuThreadArray, GroupSyncsMeetPerSubDimensionAtTheirOwnPace) {
  if (!this->available()) GTEST_SKIP() << "libstrata built without OpenMP";
  TypeParam P{dims{3, 4}};
  std::vector<std::atomic<int>> slot(12);
  std::atomic<int> wrong{0};
  for_threads(P, [&](thread_context const& t) {
    index_t const row = t.tid(0);
    int const rounds = 50 * static_cast<int>(row + 1);
    for (int r = 1; r <= rounds; ++r) {
      slot[static_cast<std::size_t>(t.tid())].store(r);
      t.sync(1);
      for (index_t c = 0; c < 4; ++c)
        if (slot[static_cast<std::size_t>(row * 4 + c)].load() != r) wrong++;
      t.sync(1);
    }
    t.sync();  // then the whole array
  });
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(slot[0].load(), 50);
  EXPECT_EQ(slot[11].load(), 150);
}

TYPED_TEST(CpuThreadArray, AnExceptionReachesTheCallerAndReleasesThoseInSync) {
  if (!this->available()) GTEST_SKIP() << "libstrata built without OpenMP";
  TypeParam P{8};
  for (int attempt = 0; attempt < 20; ++attempt) {
    try {
      for_threads(P, [&](thread_context const& t) {
        if (t.tid() == 3) throw std::runtime_error("thread 3 failed");
        t.sync();
      });
      FAIL() << "expected the thread's exception";
    } catch (std::runtime_error const& e) {
      EXPECT_STREQ(e.what(), "thread 3 failed");
    }
  }
}

TYPED_TEST(CpuThreadArray, AThreadThatReturnsBeforeASyncIsAnErrorNotAHang) {
  if (!this->available()) GTEST_SKIP() << "libstrata built without OpenMP";
  TypeParam P{dims{2, 3}};
  try {
    for_threads(P, [&](thread_context const& t) {
      t.sync(1);
      if (t.tid() == 4) return;  // row 1 loses a thread before its second sync
      t.sync(1);
    });
    FAIL() << "expected an error";
  } catch (error const& e) {
    EXPECT_NE(std::string(e.what()).find("has returned without reaching it"), std::string::npos)
        << e.what();
  }
  // Row 0 alone syncs more often than row 1: allowed.
  for_threads(P, [&](thread_context const& t) {
    for (int r = 0; r < (t.tid(0) == 0 ? 3 : 1); ++r) t.sync(1);
  });
}

TYPED_TEST(CpuThreadArray, BadPathsAreClearErrors) {
  if (!this->available()) GTEST_SKIP() << "libstrata built without OpenMP";
  TypeParam P{dims{2, 2}};
  EXPECT_THROW(for_threads(P, [](thread_context const& t) { (void)t.tid(2); }), invalid_argument);
  EXPECT_THROW(for_threads(P, [](thread_context const& t) { t.sync(0, 0); }), invalid_argument);
}

TEST(ThreadArray, ThousandsOfLaunchesReuseTheTeam) {
  pthd P{4};
  std::atomic<long> sum{0};
  for (int i = 0; i < 2000; ++i)
    for_threads(P, [&](thread_context const& t) {
      sum += t.tid();
      t.sync();
    });
  EXPECT_EQ(sum.load(), 2000L * 6);
}

// Many callers launch at once (each its own array): the team hands out threads to all.
TEST(ThreadArray, ConcurrentCallersEachGetTheirOwnArray) {
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      pthd P{c + 2};
      for (int i = 0; i < 100; ++i) {
        std::atomic<int> ran{0};
        for_threads(P, [&](thread_context const& t) {
          ran++;
          t.sync();
          if (ran.load() != c + 2) wrong++;
        });
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// PARRAY §4.11: two arrays started together, joined once. Each waits for the other, so
// they must run at the same time.
TEST(ThreadArray, AParallelContextRunsItsArraysTogether) {
  std::atomic<int> a{0}, b{0};
  parallel_context ctx;
  ctx.start(pthd{3}, [&](thread_context const&) {
    a++;
    while (b.load() < 2) std::this_thread::yield();
  });
  ctx.start(pthd{2}, [&](thread_context const&) {
    b++;
    while (a.load() < 3) std::this_thread::yield();
  });
  ctx.join();
  EXPECT_EQ(a.load() + b.load(), 5);
  parallel_context failing;
  failing.start(pthd{2}, [](thread_context const& t) {
    if (t.tid() == 1) throw invalid_argument("second array failed");
  });
  EXPECT_THROW(failing.join(), invalid_argument);
}

// Thread arrays nest (PARRAY Fig. 8): a CPU thread launches CPU threads and a device
// thread array on a sim device, and waits for both inside the outer array.
TEST(ThreadArray, CpuThreadsLaunchNestedCpuAndDeviceArrays) {
  runtime rt{runtime_options{.sim_devices = "1"}};
  place sim = rt.machine().slice(isa::sim).descendants(place_type::device)[0];
  pthd P{2};
  std::vector<std::atomic<int>> inner(2 * 3);
  std::vector<std::vector<int>> device(2, std::vector<int>(64));
  for_threads(P, [&](thread_context const& t) {
    index_t const me = t.tid();
    for_threads(pthd{3}, [&](thread_context const& u) {
      inner[static_cast<std::size_t>(me * 3 + u.tid())]++;
    });
    auto d = allocate<int, sim_space>(sim, 64);
    launch(
        sim, cuda{4, 16},
        [](auto const& th, int* out, index_t base) {
          out[th.tid()] = static_cast<int>(base + th.tid(0) * 100 + th.tid(1));
        },
        d, me * 1000)
        .wait();
    copy(ptr<int>(device[static_cast<std::size_t>(me)].data(), 0), d, 64).wait();
    deallocate(d);
  });
  for (auto& i : inner) EXPECT_EQ(i.load(), 1);
  for (int me = 0; me < 2; ++me)
    for (int k = 0; k < 64; ++k)
      EXPECT_EQ(device[static_cast<std::size_t>(me)][static_cast<std::size_t>(k)],
                me * 1000 + k / 16 * 100 + k % 16);
}

// Listing 43's shape of SGEMM: a cuda thread array [[bm][bn]][[ty][tx]] whose blocks load
// tiles of A and B into padded smem types (itile), and whose threads keep their piece of
// C in a private (rmem) array, reading tid per sub-dimension and meeting at sync(1).
constexpr index_t gm = 64, gn = 48, gk = 40, bm = 16, bn = 16, bk = 8, ry = 4, rx = 2;

struct tiled_gemm {
  array_type<float> A, B, C;
  array_type<float, smem_space> SA, SB;  // [bm][bk] in [bm][bk + 1] (no bank conflicts)
  array_type<float, rmem_space> R;       // [ry][rx]
  template <class Thread>
  void operator()(Thread const& t, float const* a, float const* b, float* c) const {
    auto block = t.self().block();
    auto sa = create_shared(block, SA);
    auto sb = create_shared(block, SB);
    private_array<float, ry * rx> acc(R);
    acc.fill(0.0f);
    index_t const i0 = t.tid(0, 0) * bm, j0 = t.tid(0, 1) * bn;
    index_t const y = t.tid(1, 0) * ry, x = t.tid(1, 1) * rx;
    for (index_t k0 = 0; k0 < gk; k0 += bk) {
      itile(block, sa.data().get(), SA, a, A, vec<2>{i0, k0}, vec<2>{bm, bk});
      itile(block, sb.data().get(), SB, b, B, vec<2>{k0, j0}, vec<2>{bk, bn});
      for (index_t kk = 0; kk < bk; ++kk)
        for (index_t r = 0; r < ry; ++r)
          for (index_t q = 0; q < rx; ++q) acc(r, q) += sa(y + r, kk) * sb(kk, x + q);
      t.sync(1);  // the tiles are read before the next itile overwrites them
    }
    for (index_t r = 0; r < ry; ++r)
      for (index_t q = 0; q < rx; ++q) c[C(i0 + y + r, j0 + x + q)] = acc(r, q);
  }
};

TEST(ThreadArray, Listing43TiledGemmWithSmemTilesAndRmemAccumulators) {
  runtime rt{runtime_options{.sim_devices = "1"}};
  array_type<float, smem_space> const padded_a{bm, bk + 1}, padded_b{bk, bn + 1};
  tiled_gemm k{array_type<float>{gm, gk},
               array_type<float>{gk, gn},
               array_type<float>{gm, gn},
               array_type<float, smem_space>{bm | padded_a[0], bk | padded_a[1]},
               array_type<float, smem_space>{bk | padded_b[0], bn | padded_b[1]},
               array_type<float, rmem_space>{ry, rx}};
  EXPECT_EQ(k.SA(1, 0), bk + 1);  // rows padded
  cuda C = cuda{dims{gm / bm, gn / bn}, dims{bm / ry, bn / rx}}.scratchpad(
      (bm * (bk + 1) + bk * (bn + 1)) * sizeof(float));
  std::vector<float> a(gm * gk), b(gk * gn), want(gm * gn, 0.0f);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3.0f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.5f;
  for (index_t i = 0; i < gm; ++i)
    for (index_t j = 0; j < gn; ++j)
      for (index_t l = 0; l < gk; ++l)
        want[static_cast<std::size_t>(i * gn + j)] +=
            a[static_cast<std::size_t>(i * gk + l)] * b[static_cast<std::size_t>(l * gn + j)];
  for (auto backend : {backend_id::serial, backend_id::threads}) {
    std::vector<float> c(gm * gn, -1.0f);
    launch(on(rt.machine(), backend), C, k, a.data(), b.data(), c.data()).wait();
    for (std::size_t i = 0; i < c.size(); ++i) ASSERT_EQ(c[i], want[i]) << i;
  }
  place sim = rt.machine().slice(isa::sim).descendants(place_type::device)[0];
  auto da = allocate<float, sim_space>(sim, a.size()),
       db = allocate<float, sim_space>(sim, b.size()),
       dc = allocate<float, sim_space>(sim, want.size());
  copy(da, ptr<float const>(a.data(), 0), a.size()).wait();
  copy(db, ptr<float const>(b.data(), 0), b.size()).wait();
  launch(sim, C, k, da, db, dc).wait();
  std::vector<float> c(want.size());
  copy(ptr<float>(c.data(), 0), dc, c.size()).wait();
  for (auto p : {da, db, dc}) deallocate(p);
  EXPECT_EQ(c, want);
}

class DeviceThreadArray : public testing::TestWithParam<int> {};

TEST_P(DeviceThreadArray, BlocksRowsAndLanesSyncOnEveryPlace) {
  runtime rt{runtime_options{.sim_devices = "1"}};
  std::vector<int> in(3 * 32);
  std::iota(in.begin(), in.end(), 0);
  cuda C = cuda{3, dims{4, 8}}.scratchpad(32 * sizeof(int));
  std::vector<int> out(in.size());
  if (GetParam() == 3) {
    place sim = rt.machine().slice(isa::sim).descendants(place_type::device)[0];
    auto d = allocate<int, sim_space>(sim, in.size());
    copy(d, ptr<int const>(in.data(), 0), in.size()).wait();
    launch(sim, C, reverse_rows{}, d).wait();
    copy(ptr<int>(out.data(), 0), d, in.size()).wait();
    deallocate(d);
  } else {
    auto backend =
        std::vector<backend_id>{backend_id::serial, backend_id::threads,
                                backend_id::openmp}[static_cast<std::size_t>(GetParam())];
    if (backend == backend_id::openmp && !detail::openmp_built()) GTEST_SKIP();
    out = in;
    launch(on(rt.machine(), backend), C, reverse_rows{}, out.data()).wait();
  }
  for (int k = 0; k < 96; ++k) EXPECT_EQ(out[static_cast<std::size_t>(k)], reversed_rows_value(k));
}
INSTANTIATE_TEST_SUITE_P(Places, DeviceThreadArray, testing::Values(0, 1, 2, 3));

TEST(ThreadArray, ADeviceArrayOfOneDimensionIsRegroupedAndMasked) {
  runtime rt;
  std::vector<std::atomic<int>> hits(1000);
  launch(
      on(rt.machine(), backend_id::threads), cuda{1000},
      [](auto const& t, std::atomic<int>* h) { h[t.tid()]++; }, hits.data())
      .wait();
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  // No block to sync or share in a regrouped array; syncs across blocks never exist.
  EXPECT_THROW(launch(rt.machine(), cuda{64}, [](auto const& t) { t.sync(0); }).wait(),
               invalid_argument);
  EXPECT_THROW(
      launch(rt.machine(), cuda{2, dims{2, 4}}, [](auto const& t) { t.sync(1, 0); }).wait(),
      invalid_argument);
  EXPECT_THROW(launch(rt.machine(), cuda{64}.scratchpad(64), [](auto const&) {}), invalid_argument);
  EXPECT_THROW(launch(rt.machine(), cuda{2, 2, 2}, [](auto const&) {}), invalid_argument);
}

TEST(ThreadArray, TypesAreSizesOnly) {
  array_type<int> A{4, 4};
  EXPECT_THROW(pthd({A[0]}), invalid_argument);
  EXPECT_THROW(pthd({4 | disp(1)}), invalid_argument);
  EXPECT_THROW((pthd{dims{1, 1, 1, 1}, dims{1, 1, 1, 1}, dims{1, 1, 1, 1}, dims{1, 1, 1, 1}}),
               invalid_argument);  // 21 nodes
  pthd P{dims{3, 4}};
  EXPECT_EQ(P[1].size(), 4);
  EXPECT_THROW(P[2], invalid_argument);
  EXPECT_THROW(P[0][0], invalid_argument);
}

// Listing 40: [#PTHD][DMEM]: element 4098 is on thread 1, at offset 2 of its part.
TEST(DistributedType, OffsetsOnThreadsAndInLocalMemory) {
  pthd P{4};
  array_type<float> DMEM{4096};
  distributed_type<float> DATA{P, DMEM};
  EXPECT_EQ(DATA.size(), 4 * 4096);
  EXPECT_EQ(DATA.thread_offset(4098), 1);
  EXPECT_EQ(DATA.local_offset(4098), 2);
  EXPECT_TRUE(DATA.owns(1, 4098));
  EXPECT_FALSE(DATA.owns(2, 4098));
  // Columns over threads: [HMEM_0][#P] gives element k to thread k % 4.
  array_type<int> HMEM{8, 4};
  distributed_type<int> COLS{HMEM[0], P};
  EXPECT_EQ(COLS.thread_offset(13), 1);
  EXPECT_EQ(COLS.local_offset(13), 12);  // HMEM_0's own offsets: 3 * 4
  distributed_type<int> PACKED{8, P};    // [8][#P]: each thread's column packed
  EXPECT_EQ(PACKED.local_offset(13), 3);
  // A thread sub-dimension: [[2][2]] threads, rows follow P2_0, so two threads share them.
  pthd P2{dims{2, 2}};
  distributed_type<int> ROWS{P2[0], 16};
  EXPECT_TRUE(ROWS.owns(2, 20) && ROWS.owns(3, 20) && !ROWS.owns(0, 20));
  EXPECT_THROW(DATA.thread_offset(4 * 4096), invalid_argument);
  EXPECT_THROW((void)DATA.owns(4, 0), invalid_argument);  // P has threads 0..3
  EXPECT_THROW(DATA.window(array_type<float>{4, 4096}, -1), invalid_argument);
  EXPECT_THROW((distributed_type<int>{HMEM[0], HMEM[1]}), invalid_argument);  // no threads
  EXPECT_THROW((distributed_type<int>{P, P2}), invalid_argument);             // no memory
  EXPECT_THROW(DATA.window(array_type<float>{4, 4095}, 0), invalid_argument);
  EXPECT_THROW(DATA.window(array_type<float>{4 * 4096}, 0), invalid_argument);
}

// Listing 41: each thread of [#PTHD][HMEM_1] copies its row of HMEM into its own local
// array, changes it, and copies it back into a transposed global array.
TEST(DistributedType, EachThreadCopiesItsPartInAndOut) {
  runtime rt;
  pthd P{4};
  index_t const n = 4096;
  array_type<int> HMEM{4, n};
  distributed_type<int> DATA{P, HMEM[1]};
  std::vector<int> data(static_cast<std::size_t>(4 * n));
  std::iota(data.begin(), data.end(), 0);
  array_type<int> B{n, 4};
  array_type<int> TT{B[1], B[0]};  // transposed: element (i, j) at j * 4 + i
  std::vector<int> back(data.size(), -1);
  std::vector<int> first(4);
  for_threads(P, [&](thread_context const& t) {
    std::vector<int> mine(static_cast<std::size_t>(n));
    copy(DATA.local_type().on(mine.data()), DATA.window(HMEM, t.tid()).on(data.data())).wait();
    first[static_cast<std::size_t>(t.tid())] = mine[0];
    for (auto& v : mine) v = -v;
    copy(DATA.window(TT, t.tid()).on(back.data()), DATA.local_type().on(mine.data())).wait();
  });
  for (int k = 0; k < 4; ++k) EXPECT_EQ(first[static_cast<std::size_t>(k)], k * n);
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < n; ++j)
      ASSERT_EQ(back[static_cast<std::size_t>(j * 4 + i)], -static_cast<int>(i * n + j));
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

TEST(ThreadArray, AnOmpArrayWithoutOpenMPIsAClearError) {
  if (detail::openmp_built()) GTEST_SKIP() << "libstrata has OpenMP (the typed tests run omp)";
  EXPECT_THROW(for_threads(thread_array<thread_kind::omp>{2}, [](thread_context const&) {}),
               not_supported);
}

}  // namespace
}  // namespace strata
