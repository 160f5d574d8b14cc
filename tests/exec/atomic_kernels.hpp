// The contended-atomics kernel of the kernel suites, written once (Kokkos' habit) and
// compiled for every backend: the CPU backends and sim in tests/exec/kernel_suite_test.cpp,
// CUDA (nvcc device code) in tests/cuda/kernel_suite_test.cu. Every thread of every block
// updates the same counters, each with one operation and type; the checks are exact,
// including the old values the operations return.
#pragma once

#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace strata::test {

// The shape of the contended launch: several blocks of several threads, several
// elements each; n = 20000 operations per counter.
inline constexpr index_t atomic_blocks = 40, atomic_threads = 25, atomic_elements = 20;
inline constexpr index_t atomic_n = atomic_blocks * atomic_threads * atomic_elements;
inline constexpr index_t atomic_per_block = atomic_threads * atomic_elements;

inline shape<1> atomic_shape() {
  return grid(atomic_blocks).block(atomic_threads).elements(atomic_elements);
}

inline constexpr unsigned inc_limit = 9, dec_limit = 6;
inline constexpr unsigned long long big_inc_start = (1ull << 32) - 100, big_inc_limit = 1ull << 33;
inline constexpr unsigned long long big_dec_start = 5, big_dec_limit = 1ull << 35;

/// Counters the whole grid races on (the scope under test, device or system).
struct atomic_totals {
  int add_i;
  long long add_ll;
  long sub_l;
  unsigned long long sub_u64;
  float add_f, sub_f;
  double add_d, sub_d;
  int min_i, max_i;
  unsigned min_u, max_u;
  long min_l, max_l;
  unsigned long long min_u64, max_u64;
  float min_f, max_f;
  double min_d, max_d;
  unsigned or_u;
  int or_first;  // operations that found their bit clear: one per bit
  unsigned long long and_u64;
  int and_first;  // operations that found their bit set: one per bit
  int xor_i;
  long long xor_ll;
  unsigned inc_u, dec_u;
  unsigned long long inc_u64, dec_u64;
  int exchange_i;
  int cas_count;
  float cas_f;  // a float made of compare-and-swap retries
  // Single-thread edge cases of inc/dec: old value above the limit.
  unsigned inc_over, inc_over_old, dec_over, dec_over_old, dec_zero, dec_zero_old;
};

/// Counters only the threads of one block race on (scope::block).
struct atomic_block_totals {
  int add_i;
  unsigned long long sub_u64;
  int max_i;
  float min_f;
  double add_d;
  unsigned or_u;
  long long xor_ll;
  unsigned inc_u;
  unsigned long long dec_u64;
  int exchange_i;
  int cas_count;
};

inline atomic_totals atomic_totals_initial() {
  atomic_totals t{};
  t.sub_u64 = static_cast<unsigned long long>(atomic_n);
  t.sub_f = static_cast<float>(atomic_n);
  t.min_i = 1 << 30;
  t.max_i = -(1 << 30);
  t.min_u = ~0u;
  t.min_l = 1l << 62;
  t.max_l = -(1l << 62);
  t.min_u64 = ~0ull;
  t.min_f = 1e30f;
  t.max_f = -1e30f;
  t.min_d = 1e300;
  t.max_d = -1e300;
  t.and_u64 = ~0ull;
  t.inc_u64 = big_inc_start;
  t.dec_u64 = big_dec_start;
  t.exchange_i = -1;
  t.inc_over = 100;
  t.dec_over = 100;
  return t;
}

inline atomic_block_totals atomic_block_totals_initial() {
  atomic_block_totals b{};
  b.sub_u64 = static_cast<unsigned long long>(atomic_per_block);
  b.max_i = -1;
  b.min_f = 1e30f;
  b.exchange_i = -1;
  return b;
}

struct atomics_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, scope s, atomic_totals* t,
                            atomic_block_totals* blocks, int* add_olds,
                            unsigned long long* sub_olds, unsigned* inc_olds,
                            int* exchange_olds) const {
    atomic_block_totals* b = blocks + self.block_index()[0];
    for (auto i : self.elements()) {
      int const ii = static_cast<int>(i);
      int const centred = ii - static_cast<int>(atomic_n / 2);
      add_olds[i] = atomic_add(s, &t->add_i, 1);
      atomic_add(s, &t->add_ll, static_cast<long long>(i));
      atomic_sub(s, &t->sub_l, static_cast<long>(i));
      sub_olds[i] = atomic_sub(s, &t->sub_u64, 1ull);
      atomic_add(s, &t->add_f, 0.5f);
      atomic_sub(s, &t->sub_f, 1.0f);
      atomic_add(s, &t->add_d, 0.25 * static_cast<double>(i % 8));
      atomic_sub(s, &t->sub_d, 1.5);
      atomic_min(s, &t->min_i, centred);
      atomic_max(s, &t->max_i, centred);
      atomic_min(s, &t->min_u, static_cast<unsigned>(ii) + 7u);
      atomic_max(s, &t->max_u, static_cast<unsigned>(ii) + 7u);
      atomic_min(s, &t->min_l, static_cast<long>(centred) * (1l << 33));
      atomic_max(s, &t->max_l, static_cast<long>(centred) * (1l << 33));
      atomic_min(s, &t->min_u64, static_cast<unsigned long long>(i) << 33);
      atomic_max(s, &t->max_u64, static_cast<unsigned long long>(i) << 33);
      atomic_min(s, &t->min_f, static_cast<float>(centred) * 0.5f);
      atomic_max(s, &t->max_f, static_cast<float>(centred) * 0.5f);
      atomic_min(s, &t->min_d, static_cast<double>(centred) * 0.25);
      atomic_max(s, &t->max_d, static_cast<double>(centred) * 0.25);
      unsigned const bit = 1u << (i % 32);
      if ((atomic_or(s, &t->or_u, bit) & bit) == 0) atomic_add(s, &t->or_first, 1);
      unsigned long long const bit64 = 1ull << (i % 64);
      if ((atomic_and(s, &t->and_u64, ~bit64) & bit64) != 0) atomic_add(s, &t->and_first, 1);
      atomic_xor(s, &t->xor_i, ii);
      atomic_xor(s, &t->xor_ll, static_cast<long long>(i) << 31);
      inc_olds[i] = atomic_inc(s, &t->inc_u, inc_limit);
      atomic_dec(s, &t->dec_u, dec_limit);
      atomic_inc(s, &t->inc_u64, big_inc_limit);
      atomic_dec(s, &t->dec_u64, big_dec_limit);
      exchange_olds[i] = atomic_exchange(s, &t->exchange_i, ii);
      int old = atomic_load(&t->cas_count), seen;
      while ((seen = atomic_cas(s, &t->cas_count, old, old + 1)) != old) old = seen;
      float oldf = atomic_load(&t->cas_f), seenf;
      while ((seenf = atomic_cas(s, &t->cas_f, oldf, oldf + 1.0f)) != oldf) oldf = seenf;
      if (i == 0) {
        t->inc_over_old = atomic_inc(s, &t->inc_over, 9u);  // 100 >= 9: wraps to 0
        t->dec_over_old = atomic_dec(s, &t->dec_over, 9u);  // 100 > 9: back to the limit
        t->dec_zero_old = atomic_dec(s, &t->dec_zero, 9u);  // 0: to the limit
      }

      // The same operations on the block's own counters, scope::block.
      atomic_add(scope::block, &b->add_i, 1);
      atomic_sub(scope::block, &b->sub_u64, 1ull);
      atomic_max(scope::block, &b->max_i, ii);
      atomic_min(scope::block, &b->min_f, static_cast<float>(ii));
      atomic_add(scope::block, &b->add_d, 0.5);
      atomic_or(scope::block, &b->or_u, 1u << (i % 32));
      atomic_xor(scope::block, &b->xor_ll, static_cast<long long>(i));
      atomic_inc(scope::block, &b->inc_u, inc_limit);
      atomic_dec(scope::block, &b->dec_u64, big_dec_limit);
      atomic_exchange(scope::block, &b->exchange_i, ii);
      int bold = atomic_load(&b->cas_count), bseen;
      while ((bseen = atomic_cas(scope::block, &b->cas_count, bold, bold + 1)) != bold)
        bold = bseen;
    }
  }
};

/// The value a wrapping down-counter (atomic_dec with `limit`) holds after k steps from 0.
inline unsigned long long after_decrements(unsigned long long k, unsigned long long limit) {
  auto period = limit + 1;
  return (period - k % period) % period;
}

/// Checks everything atomics_k left behind.
inline void check_atomics(atomic_totals const& t, std::vector<atomic_block_totals> const& blocks,
                          std::vector<int> add_olds, std::vector<unsigned long long> sub_olds,
                          std::vector<unsigned> const& inc_olds, std::vector<int> exchange_olds,
                          bool grid_strided = false) {
  long long const n = atomic_n;
  EXPECT_EQ(t.add_i, n);
  EXPECT_EQ(t.add_ll, n * (n - 1) / 2);
  EXPECT_EQ(t.sub_l, -n * (n - 1) / 2);
  EXPECT_EQ(t.sub_u64, 0u);
  EXPECT_EQ(t.add_f, static_cast<float>(n) / 2);
  EXPECT_EQ(t.sub_f, 0.0f);
  EXPECT_EQ(t.add_d, static_cast<double>(n / 8) * 0.25 * 28);
  EXPECT_EQ(t.sub_d, -1.5 * static_cast<double>(n));
  EXPECT_EQ(t.min_i, -n / 2);
  EXPECT_EQ(t.max_i, n - 1 - n / 2);
  EXPECT_EQ(t.min_u, 7u);
  EXPECT_EQ(t.max_u, static_cast<unsigned>(n - 1 + 7));
  EXPECT_EQ(t.min_l, -(n / 2) * (1l << 33));
  EXPECT_EQ(t.max_l, (n - 1 - n / 2) * (1l << 33));
  EXPECT_EQ(t.min_u64, 0u);
  EXPECT_EQ(t.max_u64, static_cast<unsigned long long>(n - 1) << 33);
  EXPECT_EQ(t.min_f, static_cast<float>(-n / 2) * 0.5f);
  EXPECT_EQ(t.max_f, static_cast<float>(n - 1 - n / 2) * 0.5f);
  EXPECT_EQ(t.min_d, static_cast<double>(-n / 2) * 0.25);
  EXPECT_EQ(t.max_d, static_cast<double>(n - 1 - n / 2) * 0.25);
  EXPECT_EQ(t.or_u, ~0u);
  EXPECT_EQ(t.or_first, 32) << "atomic_or's old values";
  EXPECT_EQ(t.and_u64, 0u);
  EXPECT_EQ(t.and_first, 64) << "atomic_and's old values";
  int xor_i = 0;
  long long xor_ll = 0;
  for (long long i = 0; i < n; ++i) xor_i ^= static_cast<int>(i), xor_ll ^= i << 31;
  EXPECT_EQ(t.xor_i, xor_i);
  EXPECT_EQ(t.xor_ll, xor_ll);
  EXPECT_EQ(t.inc_u, static_cast<unsigned>(n % (inc_limit + 1)));
  EXPECT_EQ(t.dec_u, after_decrements(n, dec_limit));
  EXPECT_EQ(t.inc_u64, big_inc_start + static_cast<unsigned long long>(n));
  // From 5: 5 steps down to 0, one wrap to the limit, then n - 6 more down.
  EXPECT_EQ(t.dec_u64, big_dec_limit - static_cast<unsigned long long>(n - 6));
  EXPECT_EQ(t.cas_count, n);
  EXPECT_EQ(t.cas_f, static_cast<float>(n));
  EXPECT_EQ(t.inc_over, 0u);
  EXPECT_EQ(t.inc_over_old, 100u);
  EXPECT_EQ(t.dec_over, 9u);
  EXPECT_EQ(t.dec_over_old, 100u);
  EXPECT_EQ(t.dec_zero, 9u);
  EXPECT_EQ(t.dec_zero_old, 0u);

  // Old values: every increment saw a different count, so they are 0..n-1 once each.
  std::sort(add_olds.begin(), add_olds.end());
  for (long long i = 0; i < n; ++i) ASSERT_EQ(add_olds[i], i) << "atomic_add's old values";
  std::sort(sub_olds.begin(), sub_olds.end());
  for (long long i = 0; i < n; ++i)
    ASSERT_EQ(sub_olds[i], static_cast<unsigned long long>(i + 1)) << "atomic_sub's old values";
  std::vector<long long> seen(inc_limit + 1, 0);
  for (unsigned v : inc_olds) {
    ASSERT_LE(v, inc_limit);
    ++seen[v];
  }
  for (unsigned v = 0; v <= inc_limit; ++v)
    EXPECT_EQ(seen[v], n / (inc_limit + 1)) << "atomic_inc returned " << v;
  // The exchanged-out values and the last one stored are -1 (the start) and every index.
  exchange_olds.push_back(t.exchange_i);
  std::sort(exchange_olds.begin(), exchange_olds.end());
  for (long long i = 0; i <= n; ++i)
    ASSERT_EQ(exchange_olds[i], i - 1) << "atomic_exchange's old values";

  ASSERT_EQ(static_cast<index_t>(blocks.size()), atomic_blocks);
  for (index_t k = 0; k < atomic_blocks; ++k) {
    auto const& b = blocks[k];
    // The elements block k ran: a contiguous chunk on the CPU backends, every
    // (blocks x threads)-th run of `threads` elements on a GPU (grid-stride order).
    auto in_block = [&](long long i) {
      return grid_strided ? i % (atomic_blocks * atomic_threads) / atomic_threads == k
                          : i / atomic_per_block == k;
    };
    long long first = -1, last = -1, xor_b = 0;
    for (long long i = 0; i < n; ++i)
      if (in_block(i)) {
        if (first < 0) first = i;
        last = i;
        xor_b ^= i;
      }
    EXPECT_EQ(b.add_i, atomic_per_block) << "block " << k;
    EXPECT_EQ(b.sub_u64, 0u) << "block " << k;
    EXPECT_EQ(b.max_i, last) << "block " << k;
    EXPECT_EQ(b.min_f, static_cast<float>(first)) << "block " << k;
    EXPECT_EQ(b.add_d, 0.5 * atomic_per_block) << "block " << k;
    EXPECT_EQ(b.or_u, ~0u) << "block " << k;
    EXPECT_EQ(b.xor_ll, xor_b) << "block " << k;
    EXPECT_EQ(b.inc_u, static_cast<unsigned>(atomic_per_block % (inc_limit + 1))) << "block " << k;
    EXPECT_EQ(b.dec_u64, after_decrements(atomic_per_block, big_dec_limit)) << "block " << k;
    EXPECT_TRUE(in_block(b.exchange_i)) << "block " << k;
    EXPECT_EQ(b.cas_count, atomic_per_block) << "block " << k;
  }
}

}  // namespace strata::test
