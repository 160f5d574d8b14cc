// What the CPU backends hand a kernel's domain: extents and indices stored as values,
// plus the block's synchronization (none, fibers, or phases).
#pragma once

#include <strata/exec/domain.hpp>
#include <strata/vec.hpp>

#include <cstddef>

namespace strata::detail {

struct fiber_block;
/// Suspends the calling fiber until all fibers of its block arrive (src/exec/cpu).
void fiber_barrier(fiber_block* block);
/// fiber_barrier that also counts the block's threads that passed a non-zero `predicate`
/// (CUDA's __syncthreads_count; every thread gets the count).
int fiber_barrier_count(fiber_block* block, int predicate);

/// Synchronization of a streaming block: none (barrier() does not compile before here).
struct no_sync {
  void barrier() const {}
  int barrier_count(int predicate) const { return predicate != 0 ? 1 : 0; }
};

/// A parallel block whose threads are fibers.
struct fiber_sync {
  fiber_block* block;
  void barrier() const { fiber_barrier(block); }
  int barrier_count(int predicate) const { return fiber_barrier_count(block, predicate); }
};

/// A parallel block run as phases: the barriers are the phase boundaries.
struct phase_sync {
  template <class T = void>
  void barrier() const {
    static_assert(always_false<T>,
                  "barrier(): a phase-split kernel is already cut at its barriers; end the "
                  "phase and continue in the next one instead");
  }
  template <class T = void>
  int barrier_count(int) const {
    static_assert(always_false<T>,
                  "barrier_count(): a phase-split kernel is already cut at its barriers; "
                  "count in the scratchpad and read it in the next phase instead");
    return 0;
  }
};

/// A single-thread parallel block: its barrier has nobody to wait for.
using single_sync = no_sync;

template <std::size_t D, class Sync>
struct cpu_context {
  vec<D> grid;
  vec<D> block;
  vec<D> elements;
  vec<D> block_idx;
  vec<D> thread_idx;
  Sync sync{};
  std::byte* scratch = nullptr;
  std::size_t scratch_bytes = 0;
  mutable std::size_t scratchpad_used = 0;

  // STRATA_FN because the domain handle's functions are: in an nvcc translation unit the
  // same kernel is instantiated for host and GPU contexts. This context only runs on host.
  STRATA_FN vec<D> grid_extent() const { return grid; }
  STRATA_FN vec<D> block_extent() const { return block; }
  STRATA_FN vec<D> element_extent() const { return elements; }
  STRATA_FN vec<D> block_index() const { return block_idx; }
  STRATA_FN vec<D> thread_index() const { return thread_idx; }
  template <class S = Sync>
  STRATA_FN void barrier() const {
#if !STRATA_DEVICE_CODE
    sync.barrier();
#endif
  }
  template <class S = Sync>
  STRATA_FN int barrier_count(int predicate) const {
#if !STRATA_DEVICE_CODE
    return sync.barrier_count(predicate);
#else
    return predicate;
#endif
  }
  STRATA_FN std::byte* scratchpad_base() const {
    return scratch;
  }
  STRATA_FN std::size_t scratchpad_size() const {
    return scratch_bytes;
  }
};

}  // namespace strata::detail
