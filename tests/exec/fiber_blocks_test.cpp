// Parallel blocks on fibers when one run of fibers serves many blocks (a chunk): the end
// of a block is a block-wide arrival (the scratchpad and shared variables are reused by
// the next block), blocks pass different numbers of barriers, groups and block barriers
// mix, and an exception or a barrier mistake in a middle block unwinds every other thread
// of the chunk. On every CPU backend, on one PU, and on sim.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cfenv>
#include <stdexcept>
#include <string>
#include <vector>

#include "exec/backends.hpp"

namespace strata {
namespace {

class FiberBlocks : public test::on_every_backend {};

// Block k passes rounds[k] rounds of (counting barrier, plain barrier), a count that is
// the same for all its threads and differs between blocks (zero too). After the closing
// barrier each thread reads the slot of the thread before it: a thread that began the
// next block early would have overwritten it.
struct uneven_rounds_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, int const* rounds, long* out) const {
    auto b = self.block();
    index_t const t = b.linear_index(), n = b.linear_size(), k = self.block_index()[0];
    long* s = b.template scratchpad<long>(static_cast<std::size_t>(n));
    int& first = b.template shared_var<int, 21>();
    if (t == 0) first = static_cast<int>(k);
    s[t] = t + 1 + k;
    long acc = 0;
    for (int r = 0; r < rounds[k]; ++r) {
      acc += b.barrier_count((t + r) % 3 == 0);
      for (index_t i = 0; i < n; ++i) acc += s[i];
      b.barrier();
      s[t] += 1;
    }
    b.barrier();
    long* o = out + (k * n + t) * 3;
    o[0] = acc;
    o[1] = s[(t + n - 1) % n];
    o[2] = first;
  }
};

inline constexpr index_t uneven_blocks = 150, uneven_threads = 12;

std::vector<int> uneven_rounds() {
  std::vector<int> r(uneven_blocks);
  for (index_t k = 0; k < uneven_blocks; ++k)
    r[static_cast<std::size_t>(k)] = static_cast<int>((k * 7 + k / 5) % 6);
  return r;
}

auto uneven_shape() {
  return grid(uneven_blocks)
      .block(parallel, uneven_threads)
      .scratchpad(uneven_threads * sizeof(long));
}

void check_uneven(std::vector<int> const& rounds, std::vector<long> const& out) {
  index_t const n = uneven_threads;
  for (index_t k = 0; k < uneven_blocks; ++k) {
    int const rk = rounds[static_cast<std::size_t>(k)];
    long acc = 0;
    for (int r = 0; r < rk; ++r) {
      for (index_t i = 0; i < n; ++i) acc += (i + r) % 3 == 0 ? 1 : 0;
      acc += n * (n + 1) / 2 + n * k + n * r;
    }
    for (index_t t = 0; t < n; ++t) {
      auto const* o = out.data() + (k * n + t) * 3;
      SCOPED_TRACE("block " + std::to_string(k) + ", thread " + std::to_string(t));
      EXPECT_EQ(o[0], acc);
      EXPECT_EQ(o[1], (t + n - 1) % n + 1 + k + rk);
      EXPECT_EQ(o[2], k);
    }
  }
}

TEST_P(FiberBlocks, ManyBlocksPassDifferentNumbersOfBarriers) {
  auto const rounds = uneven_rounds();
  std::vector<long> out(static_cast<std::size_t>(uneven_blocks * uneven_threads * 3), -1);
  launch(here(), uneven_shape(), uneven_rounds_k{}, rounds.data(), out.data()).wait();
  check_uneven(rounds, out);
  // One PU: every chunk on the same OS thread, one after the other.
  std::fill(out.begin(), out.end(), -1);
  launch(on_first_pu(), uneven_shape(), uneven_rounds_k{}, rounds.data(), out.data()).wait();
  check_uneven(rounds, out);
}

TEST(FiberBlocksSim, ManyBlocksPassDifferentNumbersOfBarriers) {
  runtime rt{runtime_options{.sim_devices = "1:units=2"}};
  place sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  auto rounds = uneven_rounds();
  auto const n = static_cast<std::size_t>(uneven_blocks * uneven_threads * 3);
  auto d_rounds = allocate<int, sim_space>(sim0, rounds.size());
  auto d_out = allocate<long, sim_space>(sim0, n);
  copy(d_rounds, ptr<int>(rounds.data(), 0), rounds.size()).wait();
  launch(sim0, uneven_shape(), uneven_rounds_k{}, d_rounds, d_out).wait();
  std::vector<long> out(n, -1);
  copy(ptr<long>(out.data(), 0), d_out, n).wait();
  deallocate(d_rounds);
  deallocate(d_out);
  check_uneven(rounds, out);
}

// Counts the kernel threads alive (constructed, not yet destroyed): zero after a failed
// launch means every suspended fiber was unwound.
struct alive_guard {
  std::atomic<int>* alive;
  explicit alive_guard(std::atomic<int>* a) : alive(a) { alive->fetch_add(1); }
  ~alive_guard() { alive->fetch_sub(1); }
  alive_guard(alive_guard const&) = delete;
  alive_guard& operator=(alive_guard const&) = delete;
};

// fail_block's thread 5 throws between barriers (mistake 0), or its even threads return
// while the odd ones wait at a barrier (mistake 1); other blocks pass their barriers.
struct failing_k {
  template <class Self>
  void operator()(Self const& self, index_t fail_block, int mistake, std::atomic<int>* alive,
                  int* out) const {
    alive_guard guard(alive);
    auto b = self.block();
    index_t const t = b.linear_index(), k = self.block_index()[0];
    b.barrier();
    if (k == fail_block && mistake == 0 && t == 5)
      throw std::runtime_error("thread 5 of block " + std::to_string(k));
    if (k == fail_block && mistake == 1 && t % 2 == 0) return;
    b.barrier();
    b.barrier_count(1);
    out[k * b.linear_size() + t] += 1;
  }
};

TEST_P(FiberBlocks, ExceptionInAMiddleBlockUnwindsTheOthers) {
  index_t const blocks = 64, threads = 16;
  auto s = grid(blocks).block(parallel, threads);
  std::vector<int> out(static_cast<std::size_t>(blocks * threads), 0);
  std::atomic<int> alive{0};
  for (auto where : {here(), on_first_pu()}) {
    try {
      launch(where, s, failing_k{}, index_t{blocks / 2}, 0, &alive, out.data()).wait();
      FAIL() << "no exception";
    } catch (std::runtime_error const& e) {
      EXPECT_STREQ(e.what(), "thread 5 of block 32");
    }
    EXPECT_EQ(alive.load(), 0);
    // The next launch on this thread works.
    std::fill(out.begin(), out.end(), 0);
    launch(where, s, failing_k{}, index_t{-1}, 0, &alive, out.data()).wait();
    EXPECT_EQ(std::count(out.begin(), out.end(), 1), blocks * threads);
    EXPECT_EQ(alive.load(), 0);
  }
}

TEST_P(FiberBlocks, ThreadsReturningEarlyInAMiddleBlockAreAnError) {
  index_t const blocks = 64, threads = 16;
  auto s = grid(blocks).block(parallel, threads);
  std::vector<int> out(static_cast<std::size_t>(blocks * threads), 0);
  std::atomic<int> alive{0};
  for (auto where : {here(), on_first_pu()}) {
    try {
      launch(where, s, failing_k{}, index_t{blocks / 2 + 1}, 1, &alive, out.data()).wait();
      FAIL() << "no error";
    } catch (error const& e) {
      EXPECT_NE(std::string(e.what()).find("8 of the block's 16 threads returned while 8 wait"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(alive.load(), 0);
    std::fill(out.begin(), out.end(), 0);
    launch(where, s, failing_k{}, index_t{-1}, 1, &alive, out.data()).wait();
    EXPECT_EQ(std::count(out.begin(), out.end(), 1), blocks * threads);
  }
}

// Every thread of every outer block (fibers) passes barriers around a launch+wait of an
// inner kernel with barriers of its own: the inner blocks run on the waiting fiber's OS
// thread with their own fibers, stacks and scratchpad, and the outer block goes on.
TEST_P(FiberBlocks, NestedLaunchesFromInsideFibers) {
  index_t const outer = 10, outer_threads = 6, inner = 4, inner_threads = 5;
  std::vector<long> out(static_cast<std::size_t>(outer * outer_threads), -1);
  std::vector<long> inner_out(static_cast<std::size_t>(outer * outer_threads * inner), -1);
  auto where = here();
  auto inner_shape = grid(inner).block(parallel, inner_threads).scratchpad(inner_threads * 8);
  launch(
      where, grid(outer).block(parallel, outer_threads).scratchpad(outer_threads * 8),
      [=](auto const& self, long* out, long* inner_out) {
        auto b = self.block();
        index_t const t = b.linear_index(), k = self.block_index()[0];
        long* s = b.template scratchpad<long>(outer_threads);
        s[t] = 100 * k + t;
        b.barrier();
        long* mine = inner_out + (k * outer_threads + t) * inner;
        if (t % 2 == 0 || k % 3 == 0)
          launch(
              where, inner_shape,
              [](auto const& in, long* o, long base) {
                auto ib = in.block();
                long* is = ib.template scratchpad<long>(inner_threads);
                is[ib.linear_index()] = base + ib.linear_index();
                ib.barrier();
                if (ib.linear_index() == 0) {
                  long sum = 0;
                  for (index_t i = 0; i < inner_threads; ++i) sum += is[i];
                  o[in.block_index()[0]] = sum;
                }
                ib.barrier();
              },
              mine, s[(t + 1) % outer_threads])
              .wait();
        b.barrier();
        out[k * outer_threads + t] = s[(t + 1) % outer_threads];
      },
      out.data(), inner_out.data())
      .wait();
  for (index_t k = 0; k < outer; ++k)
    for (index_t t = 0; t < outer_threads; ++t) {
      SCOPED_TRACE("block " + std::to_string(k) + ", thread " + std::to_string(t));
      long const next = 100 * k + (t + 1) % outer_threads;
      EXPECT_EQ(out[static_cast<std::size_t>(k * outer_threads + t)], next);
      bool const launched = t % 2 == 0 || k % 3 == 0;
      for (index_t i = 0; i < inner; ++i)
        EXPECT_EQ(inner_out[static_cast<std::size_t>((k * outer_threads + t) * inner + i)],
                  launched ? inner_threads * next + inner_threads * (inner_threads - 1) / 2 : -1);
    }
}

// Blocks of one chunk alternate between group barriers (groups moving on independently),
// groups where one returns at once while the others pass group barriers only, and block
// barriers alone (a number that differs between blocks): the fibers go from a block
// scheduled by groups back to one with block barriers.
struct mixed_groups_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, long* out) const {
    auto b = self.block();
    index_t const t = b.linear_index(), n = b.linear_size(), k = self.block_index()[0];
    long* s = b.template scratchpad<long>(static_cast<std::size_t>(n));
    long* o = out + (k * n + t) * 2;
    s[t] = t + k;
    auto g = b.group(4);
    long gs = 0;
    if (k % 3 == 0) {
      g.barrier();
      for (index_t i = 0; i < g.size(); ++i) gs += s[t - g.index() + i];
      if (g.group_index() % 2 == 1) {
        g.barrier();
        g.barrier();
      }
      b.barrier();
    } else if (k % 3 == 1) {
      if (g.group_index() == 0) {
        o[0] = o[1] = -1;
        return;
      }
      for (int r = 0; r < 3; ++r) g.barrier();
      for (index_t i = 0; i < g.size(); ++i) gs += s[t - g.index() + i];
      o[0] = gs;
      o[1] = -2;
      return;
    } else {
      for (index_t r = 0; r < k % 4; ++r) b.barrier();
      b.barrier();
      for (index_t i = 0; i < n; ++i) gs += s[i];
    }
    b.barrier();
    o[0] = gs;
    o[1] = s[(t + n - 1) % n];
  }
};

void check_mixed_groups(std::vector<long> const& out, index_t blocks, index_t n) {
  for (index_t k = 0; k < blocks; ++k)
    for (index_t t = 0; t < n; ++t) {
      SCOPED_TRACE("block " + std::to_string(k) + ", thread " + std::to_string(t));
      auto const* o = out.data() + (k * n + t) * 2;
      index_t const g0 = t / 4 * 4;
      long const group_sum = 4 * (g0 + k) + 6;
      if (k % 3 == 0) {
        EXPECT_EQ(o[0], group_sum);
        EXPECT_EQ(o[1], (t + n - 1) % n + k);
      } else if (k % 3 == 1) {
        EXPECT_EQ(o[0], g0 == 0 ? -1 : group_sum);
        EXPECT_EQ(o[1], g0 == 0 ? -1 : -2);
      } else {
        EXPECT_EQ(o[0], n * (n - 1) / 2 + n * k);
        EXPECT_EQ(o[1], (t + n - 1) % n + k);
      }
    }
}

TEST_P(FiberBlocks, GroupBarriersMixWithBlockBarriers) {
  index_t const blocks = 40, threads = 16;
  auto s = grid(blocks).block(parallel, threads).scratchpad(threads * sizeof(long));
  for (auto where : {here(), on_first_pu()}) {
    std::vector<long> out(static_cast<std::size_t>(blocks * threads * 2), 0);
    launch(where, s, mixed_groups_k{}, out.data()).wait();
    check_mixed_groups(out, blocks, threads);
  }
}

TEST(FiberBlocksSim, GroupBarriersMixWithBlockBarriers) {
  runtime rt{runtime_options{.sim_devices = "1:units=2"}};
  place sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  index_t const blocks = 40, threads = 16;
  auto const n = static_cast<std::size_t>(blocks * threads * 2);
  auto d = allocate<long, sim_space>(sim0, n);
  launch(sim0, grid(blocks).block(parallel, threads).scratchpad(threads * sizeof(long)),
         mixed_groups_k{}, d)
      .wait();
  std::vector<long> out(n, 0);
  copy(ptr<long>(out.data(), 0), d, n).wait();
  deallocate(d);
  check_mixed_groups(out, blocks, threads);
}

// A group barrier that part of its group skips, in a middle block after blocks that used
// groups correctly: an error, and the launch after it works.
TEST_P(FiberBlocks, GroupMistakeInAMiddleBlockIsAnError) {
  index_t const blocks = 30, threads = 8;
  auto kernel = [](auto const& self, index_t bad) {
    auto g = self.block().group(4);
    g.barrier();
    if (self.block_index()[0] == bad && g.index() == 3) return;
    g.barrier();
    self.block().barrier();
  };
  EXPECT_THROW(launch(here(), grid(blocks).block(parallel, threads), kernel, index_t{17}).wait(),
               error);
  EXPECT_NO_THROW(
      launch(here(), grid(blocks).block(parallel, threads), kernel, index_t{-1}).wait());
}

// The threads of a block share the OS thread's floating-point modes (as on a GPU), but a
// kernel that changes them does not change them for the code that launched it.
TEST_P(FiberBlocks, RoundingModeSetByAKernelStaysInside) {
  ASSERT_EQ(std::fegetround(), FE_TONEAREST);
  std::vector<int> seen(4 * 8, -1);
  launch(
      here(), grid(4).block(parallel, 8),
      [](auto const& self, int* seen) {
        if (self.block().linear_index() == 0) std::fesetround(FE_UPWARD);
        self.block().barrier();
        seen[self.global_linear_index()] = std::fegetround() == FE_UPWARD ? 1 : 0;
      },
      seen.data())
      .wait();
  EXPECT_EQ(std::fegetround(), FE_TONEAREST);
#if defined(__x86_64__)  // (elsewhere Boost's switch keeps each fiber's modes)
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), 4 * 8);
#endif
  std::fesetround(FE_TONEAREST);
}

// Each thread keeps many values of its own (integers, doubles, a vector of doubles, a long
// double on the x87 stack) live across barriers at different call sites (no loop: each
// thread resumes at the barrier before the one the thread switching to it calls): the
// inline switch (fiber.hpp) declares every register clobbered, so the compiler keeps them
// in the thread's own frame. Every 5th block also throws from thread 3 after the third
// barrier, which must unwind through those frames.
struct live_values_k {
  template <class Self>
  void operator()(Self const& self, double* out) const {
    auto b = self.block();
    index_t const t = b.linear_index(), k = self.block_index()[0];
    long i0 = t * 7 + k, i1 = t * 11 - k, i2 = t ^ k, i3 = t * t + 3;
    double d0 = 0.5 * static_cast<double>(t), d1 = static_cast<double>(k) + 0.25;
    double v[8];
    for (int j = 0; j < 8; ++j)
      v[j] = static_cast<double>(t * 8 + j) + 0.125 * static_cast<double>(k);
    long double x = static_cast<long double>(t) / 3.0L;
    b.barrier();
    i0 += 1;
    d0 *= 2;
    b.barrier();
    i1 -= 1;
    for (int j = 0; j < 8; ++j) v[j] += 1;
    b.barrier();
    if (k % 5 == 4 && t == 3) throw std::runtime_error("block " + std::to_string(k));
    x *= 3.0L;
    d1 += 1;
    b.barrier();
    double sum_v = 0;
    for (int j = 0; j < 8; ++j) sum_v += v[j];
    double* o = out + self.global_linear_index() * 4;
    o[0] = static_cast<double>(i0 + i1 + i2 + i3);
    o[1] = d0 + d1;
    o[2] = sum_v;
    o[3] = static_cast<double>(x);
  }
};

TEST_P(FiberBlocks, ValuesLiveAcrossBarriersAtDifferentSitesStayPerThread) {
  index_t const blocks = 4, threads = 24;
  for (bool failing : {false, true}) {
    SCOPED_TRACE(failing ? "with a throwing block" : "no throw");
    index_t const used = failing ? 5 : blocks;
    std::vector<double> out(static_cast<std::size_t>(used * threads * 4), -1);
    auto ev = launch(here(), grid(used).block(parallel, threads), live_values_k{}, out.data());
    if (failing) {
      EXPECT_THROW(ev.wait(), std::runtime_error);
      continue;
    }
    ev.wait();
    for (index_t k = 0; k < blocks; ++k)
      for (index_t t = 0; t < threads; ++t) {
        SCOPED_TRACE("block " + std::to_string(k) + ", thread " + std::to_string(t));
        double const* o = out.data() + (k * threads + t) * 4;
        EXPECT_EQ(o[0],
                  static_cast<double>((t * 7 + k + 1) + (t * 11 - k - 1) + (t ^ k) + (t * t + 3)));
        EXPECT_EQ(o[1], static_cast<double>(t) + static_cast<double>(k) + 1.25);
        double sum_v = 0;
        for (int j = 0; j < 8; ++j)
          sum_v += static_cast<double>(t * 8 + j) + 0.125 * static_cast<double>(k) + 1;
        EXPECT_EQ(o[2], sum_v);
        EXPECT_NEAR(o[3], static_cast<double>(t), 1e-12);
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, FiberBlocks, testing::ValuesIn(test::cpu_backends()),
                         test::backend_name);

}  // namespace
}  // namespace strata
