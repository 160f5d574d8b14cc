// A work division for a problem size on a target (Alpaka §3.3, Table 2): how many blocks,
// threads per block and elements per thread make a good launch there.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/shape.hpp>

#include <limits>
#include <string>

namespace strata {

namespace detail {
/// The parallelism of a target's processors and whether its backend runs on the host.
struct target_traits {
  int threads;
  bool host;
};
target_traits traits_of(target const& t);
}  // namespace detail

/// Returns a shape that covers `problem` elements (rounded up to whole blocks: kernels
/// clip with self.elements(n)). On CPU backends, streaming kernels get one thread per
/// block and element ranges in multiples of the SIMD width, about 64 blocks per thread
/// for dynamic balance; parallel kernels get 64-thread blocks along the last dimension.
/// On devices, 256-thread blocks with one element each. Throws invalid_argument for an
/// empty or negative problem.
template <level_policy Policy = streaming_group, std::size_t D>
shape<D, Policy> divide_work(target const& where, vec<D> const& problem) {
  for (std::size_t i = 0; i < D; ++i)
    if (problem[i] < 1)
      throw invalid_argument("divide_work: problem extent " + std::to_string(problem[i]) +
                             " in dimension " + std::to_string(i) +
                             " is invalid; expected at least 1");
  // Rounding to whole blocks below must not overflow: at most half the index range.
  index_t total_points = 1;
  for (std::size_t i = 0; i < D; ++i)
    if (__builtin_mul_overflow(total_points, problem[i], &total_points) ||
        total_points > std::numeric_limits<index_t>::max() / 2)
      throw invalid_argument(
          "divide_work: a problem extent of " + std::to_string(problem[i]) + " in dimension " +
          std::to_string(i) + " makes the problem too large; expected at most " +
          std::to_string(std::numeric_limits<index_t>::max() / 2) + " elements in all");
  auto traits = detail::traits_of(where);
  constexpr index_t simd = 16;  // 64 bytes of floats: one AVX-512 register, four of SSE
  auto round_up = [](index_t x, index_t m) { return (x + m - 1) / m * m; };
  auto ceil_div = [](index_t a, index_t b) { return (a + b - 1) / b; };
  index_t const last = problem[D - 1];
  vec<D> grid = problem, block = vec<D>::fill(1), elements = vec<D>::fill(1);
  if (traits.host && !is_parallel_v<Policy>) {
    index_t const target_blocks = static_cast<index_t>(traits.threads) * 64;
    index_t const total = total_points;
    index_t per_block = round_up(ceil_div(total, target_blocks), simd);
    if (per_block < last || D == 1) {
      // Part of a row per block.
      index_t const e = per_block < round_up(last, simd) ? per_block : round_up(last, simd);
      elements[D - 1] = e;
      grid[D - 1] = ceil_div(last, e);
    } else {
      // Whole rows, and as many of them per block as the share allows (a block of one
      // short row would spend more on its call than on its elements).
      elements[D - 1] = round_up(last, simd);
      grid[D - 1] = 1;
      if constexpr (D >= 2) {
        index_t rows = per_block / last;
        if (rows > problem[D - 2]) rows = problem[D - 2];
        elements[D - 2] = rows;
        grid[D - 2] = ceil_div(problem[D - 2], rows);
      }
    }
  } else {
    index_t const b = traits.host ? 64 : 256;
    block[D - 1] = last < b ? last : b;
    grid[D - 1] = ceil_div(last, block[D - 1]);
  }
  return shape<D, Policy>(grid, block, elements);
}

template <level_policy Policy = streaming_group, std::integral I>
shape<1, Policy> divide_work(target const& where, I n) {
  return divide_work<Policy>(where, vec<1>{detail::to_index(n, 2)});
}

}  // namespace strata
