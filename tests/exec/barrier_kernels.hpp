// Block barriers with a predicate (barrier_count / barrier_and / barrier_or; CUDA's
// __syncthreads_count/_and/_or, Alpaka's syncBlockThreadsPredicate) and static
// block-shared variables (shared_var; Alpaka's declareSharedVar) and groups inside a
// block with barriers of their own (block().group(k); Phalanx's deeper domains), written once and
// compiled for every backend: the CPU backends and sim in tests/exec/kernel_suite_test.cpp,
// CUDA (nvcc device code) in tests/cuda/kernel_suite_test.cu.
#pragma once

#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace strata::test {

inline constexpr index_t predicate_blocks = 7, predicate_threads = 40;
inline constexpr int predicate_results = 5;  // per thread

inline auto predicate_shape() {
  return grid(predicate_blocks).block(parallel, predicate_threads);
}

// Each thread records what five barriers in a row told it: two counting barriers back to
// back (the tallies of consecutive barriers must not mix), one after a plain barrier, an
// all and an any whose truth depends on the block.
struct block_predicates_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, int* out) const {
    auto b = self.block();
    auto const t = b.linear_index();
    auto const k = self.block_index()[0];
    int* o = out + self.global_linear_index() * predicate_results;
    o[0] = b.barrier_count(t % 3 == 0);
    o[1] = b.barrier_count(t <= k);
    b.barrier();
    o[2] = b.barrier_count(true);
    o[3] = b.barrier_and(t >= 0 && !(k == 3 && t == predicate_threads - 1)) ? 1 : 0;
    o[4] = b.barrier_or(k % 2 == 0 && t == predicate_threads / 2) ? 1 : 0;
  }
};

inline void check_predicates(std::vector<int> const& out) {
  int const by3 = static_cast<int>((predicate_threads + 2) / 3);
  for (index_t k = 0; k < predicate_blocks; ++k)
    for (index_t t = 0; t < predicate_threads; ++t) {
      auto const* o = out.data() + (k * predicate_threads + t) * predicate_results;
      SCOPED_TRACE("block " + std::to_string(k) + ", thread " + std::to_string(t));
      EXPECT_EQ(o[0], by3);
      EXPECT_EQ(o[1], static_cast<int>(k + 1));
      EXPECT_EQ(o[2], static_cast<int>(predicate_threads));
      EXPECT_EQ(o[3], k == 3 ? 0 : 1);
      EXPECT_EQ(o[4], k % 2 == 0 ? 1 : 0);
    }
}

// Static block-shared variables: three per block (two ints told apart by their id, a
// struct), set by thread 0, then every thread adds into one of them; each thread records
// what it sees and whether the variables are one object per (type, id).
struct shared_pair {
  int block;
  double half;
};
inline constexpr int shared_var_results = 5;  // per thread

struct block_shared_vars_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, long* out) const {
    auto b = self.block();
    auto const t = b.linear_index();
    auto const k = self.block_index()[0];
    int& total = b.template shared_var<int, 0>();
    int& other = b.template shared_var<int, 1>();
    shared_pair& p = b.template shared_var<shared_pair>();
    if (t == 0) {
      total = 0;
      other = static_cast<int>(k) * 1000;
      p = {static_cast<int>(k), 0.5 * static_cast<double>(k)};
    }
    b.barrier();
    atomic_add(&total, static_cast<int>(t) + 1);
    b.barrier();
    long* o = out + self.global_linear_index() * shared_var_results;
    o[0] = total;
    o[1] = other;
    o[2] = p.block;
    o[3] = p.half == 0.5 * static_cast<double>(k) ? 1 : 0;
    o[4] = &b.template shared_var<int, 0>() == &total && &total != &other &&
                   static_cast<void*>(&p) != static_cast<void*>(&total)
               ? 1
               : 0;
  }
};

inline void check_shared_vars(std::vector<long> const& out) {
  long const sum = predicate_threads * (predicate_threads + 1) / 2;
  for (index_t k = 0; k < predicate_blocks; ++k)
    for (index_t t = 0; t < predicate_threads; ++t) {
      auto const* o = out.data() + (k * predicate_threads + t) * shared_var_results;
      SCOPED_TRACE("block " + std::to_string(k) + ", thread " + std::to_string(t));
      EXPECT_EQ(o[0], sum);
      EXPECT_EQ(o[1], k * 1000);
      EXPECT_EQ(o[2], k);
      EXPECT_EQ(o[3], 1);
      EXPECT_EQ(o[4], 1);
    }
}

// Groups inside a block, two levels deep (block -> groups of g1 -> groups of g2): each
// thread puts t + 1 in the scratchpad; each inner group sums its values after its own
// barrier; the outer group's leaders' sums add up after the outer group's barriers. Odd
// outer groups wait at extra barriers of their own (groups move on independently; on
// the CPU a barrier releases a group once all its threads arrived, whatever the others
// do). Per thread: inner sum, outer sum, inner group's index and count, outer's.
inline constexpr int group_results = 6;

struct block_groups_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, long* out, index_t g1, index_t g2) const {
    auto b = self.block();
    auto const t = b.linear_index();
    long* s = b.template scratchpad<long>(static_cast<std::size_t>(b.linear_size()));
    auto g = b.group(g1);
    auto h = g.group(g2);
    s[t] = t + 1;
    h.barrier();
    long hs = 0;
    for (index_t i = 0; i < h.size(); ++i) hs += s[t - h.index() + i];
    if (g.group_index() % 2 == 1)
      for (int k = 0; k < 3; ++k) g.barrier();
    g.barrier();
    if (h.index() == 0) s[t] = hs;
    g.barrier();
    long gs = 0;
    for (index_t j = 0; j < g.size(); j += h.size()) gs += s[t - g.index() + j];
    b.barrier();
    long* o = out + self.global_linear_index() * group_results;
    o[0] = hs;
    o[1] = gs;
    o[2] = h.group_index();
    o[3] = h.groups();
    o[4] = g.group_index();
    o[5] = g.groups();
  }
};

inline void check_groups(std::vector<long> const& out, index_t blocks, index_t threads, index_t g1,
                         index_t g2) {
  auto range_sum = [](index_t first, index_t n) {  // (first + 1) + ... + (first + n)
    return static_cast<long>(n * (2 * first + n + 1) / 2);
  };
  for (index_t k = 0; k < blocks; ++k)
    for (index_t t = 0; t < threads; ++t) {
      auto const* o = out.data() + (k * threads + t) * group_results;
      SCOPED_TRACE("block " + std::to_string(k) + ", thread " + std::to_string(t));
      EXPECT_EQ(o[0], range_sum(t / g2 * g2, g2));
      EXPECT_EQ(o[1], range_sum(t / g1 * g1, g1));
      EXPECT_EQ(o[2], (t % g1) / g2);
      EXPECT_EQ(o[3], g1 / g2);
      EXPECT_EQ(o[4], t / g1);
      EXPECT_EQ(o[5], threads / g1);
    }
}

}  // namespace strata::test
