// Kernels of cuda thread arrays shared by the CPU tests (thread_array_test.cpp) and the
// CUDA suite (tests/cuda/kernel_suite_test.cu), so nvcc compiles the same device code.
#pragma once

#include <strata/strata.hpp>

namespace strata {

struct reverse_rows {
  template <class Thread>
  STRATA_FN void operator()(Thread const& t, int* data) const {
    // [blocks][[rows][lanes]]: each row of lanes reverses itself through the scratchpad
    // with sync(1, 1) (a row), then the block rotates its rows with sync(1).
    auto block = t.self().block();
    int* pad = block.template scratchpad<int>(32);
    index_t const local = t.tid(1), row = t.tid(1, 0), lane = t.tid(1, 1);
    pad[local] = data[t.tid()];
    t.sync(1, 1);
    int const mine = pad[row * 8 + (7 - lane)];
    t.sync(1);
    pad[local] = mine;
    t.sync(1);
    data[t.tid()] = pad[((row + 1) % 4) * 8 + lane];
  }
};

/// What reverse_rows leaves in element k of `blocks` blocks of [[4][8]] threads.
inline int reversed_rows_value(int k) {
  int const b = k / 32, row = k % 32 / 8, lane = k % 8;
  return b * 32 + ((row + 1) % 4) * 8 + (7 - lane);
}

}  // namespace strata
