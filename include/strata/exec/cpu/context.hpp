// What the CPU backends hand a kernel's domain: extents and indices stored as values,
// plus the block's synchronization (none, fibers, or phases).
#pragma once

#include <strata/exec/cpu/fiber.hpp>
#include <strata/exec/domain.hpp>
#include <strata/vec.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::detail {

/// The key of a block's static shared variable (T, Id): the address of this variable,
/// one per specialization in the whole program.
template <class T, std::size_t Id>
inline constexpr char block_var_key = 0;

/// The static shared variables of the block that runs on this CPU thread (Alpaka's
/// declareSharedVar, CUDA's static __shared__; block_domain::shared_var): one piece of
/// storage per key, made when the block's first thread asks for it, the same for all its
/// threads. Storage comes in chunks that never move (a reference handed out stays valid
/// while later variables are made) and is kept from block to block: next_block() forgets
/// the variables, not the memory. One per run of blocks on a thread, so nested runs (a
/// kernel that waits may run another block on its thread) have their own.
class block_vars {
 public:
  block_vars() = default;
  ~block_vars();
  block_vars(block_vars const&) = delete;
  block_vars& operator=(block_vars const&) = delete;
  /// The storage of variable `key` in this block: `bytes` bytes aligned to `align`.
  void* get(void const* key, std::size_t bytes, std::size_t align);
  void next_block() noexcept {
    count_ = 0;
    chunk_ = 0;
    used_ = 0;
  }

 private:
  struct entry {
    void const* key;
    void* where;
  };
  struct chunk {
    std::byte* data;
    std::size_t size;
  };
  std::vector<entry> entries_;  // the block's variables so far (few: a linear search)
  std::size_t count_ = 0;       // entries_[0, count_) are this block's
  std::vector<chunk> chunks_;
  std::size_t chunk_ = 0, used_ = 0;  // filling chunks_[chunk_] at used_
};

/// Synchronization of a streaming block: none (barrier() does not compile before here).
struct no_sync {
  void barrier() const {}
  int barrier_count(int predicate) const { return predicate != 0 ? 1 : 0; }
  void group_barrier(index_t, index_t) const {}
};

/// A parallel block whose threads are fibers.
struct fiber_sync {
  fiber_state* block;
  void barrier() const { (void)fiber_pass(block, fiber_arrival::barrier); }
  int barrier_count(int predicate) const {
    return static_cast<int>(fiber_arrive(block, fiber_arrival::barrier_count, predicate, 0, 0));
  }
  void group_barrier(index_t first, index_t size) const {
    (void)fiber_arrive(block, fiber_arrival::group_barrier, 0, first, size);
  }
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
  template <class T = void>
  void group_barrier(index_t, index_t) const {
    static_assert(always_false<T>,
                  "group barrier(): a phase-split kernel runs each phase for every thread "
                  "before the next; cut it at block barriers (phases) instead");
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
  block_vars* vars = nullptr;  // parallel blocks: the block's static shared variables

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
  STRATA_FN void group_barrier(index_t first, index_t size) const {
#if !STRATA_DEVICE_CODE
    sync.group_barrier(first, size);
#else
    (void)first;
    (void)size;
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
  template <class T, std::size_t Id>
  STRATA_FN T& shared_var() const {
#if STRATA_DEVICE_CODE
    // (Never runs: a CPU context is host-only; this keeps nvcc's device pass compiling.)
    return *reinterpret_cast<T*>(scratch);
#else
    return *static_cast<T*>(vars->get(&block_var_key<T, Id>, sizeof(T), alignof(T)));
#endif
  }
};

}  // namespace strata::detail
