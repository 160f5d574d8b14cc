// Block barriers with a predicate (barrier_count / barrier_and / barrier_or; CUDA's
// __syncthreads_count/_and/_or, Alpaka's syncBlockThreadsPredicate), written once and
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

}  // namespace strata::test
