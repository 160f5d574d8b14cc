// Arenas: linear allocation from one buffer (Ripple §5.1, "Allocators").
//
// Ripple measured that dynamic allocation in the middle of a computation (cudaMalloc and
// cudaFree synchronize the device) cost up to 30% of an application's time even when it
// was 2% of its memory, and answered with `MultiarchAllocator`: one buffer allocated up
// front per CPU thread and per GPU, carved linearly, thread safe. An `arena` is one such
// buffer; a `multiarch_allocator` hands out one arena per calling thread (`cpu()`) and
// one per device (`device()`).
//
// An arena never frees single objects: `reset()` gives all of its memory back at once.
#pragma once

#include <strata/error.hpp>
#include <strata/memory/allocate.hpp>
#include <strata/memory/ptr.hpp>
#include <strata/memory/space.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

namespace strata {

namespace detail {
/// Throws out_of_memory for a request that does not fit (cold path, out of line).
[[noreturn]] void arena_exhausted(std::uint32_t place_id, space_id space, std::size_t requested,
                                  std::size_t alignment, std::size_t used, std::size_t capacity);
/// Throws invalid_argument for an alignment that is not a power of two >= alignof(T).
[[noreturn]] void arena_bad_alignment(std::size_t alignment, std::size_t minimum);
/// Throws invalid_argument for a capacity of zero.
[[noreturn]] void arena_empty_capacity(place const& where);
struct multiarch_state;
}  // namespace detail

/// A buffer of `capacity()` bytes in `Space`, allocated once at construction and handed
/// out linearly by `allocate`, which is lock-free and safe to call from many threads at
/// once. Move-only; moving an arena is not safe while other threads allocate from it.
template <memory_space Space = host_space>
class arena {
 public:
  using space = Space;
  /// The alignment of the arena's buffer; larger alignments are honored by padding.
  static constexpr std::size_t base_alignment = 64;

  /// An empty arena (capacity 0); every allocation from it fails.
  arena() = default;
  /// Allocates `capacity_bytes` (> 0) of `Space` at or near `where`, as `allocate` does;
  /// throws invalid_argument (no such memory there, zero capacity) or out_of_memory (a
  /// device memory without room: the buffer counts against the device's capacity).
  arena(place const& where, std::size_t capacity_bytes) : capacity_(capacity_bytes) {
    if (capacity_bytes == 0) detail::arena_empty_capacity(where);
    auto raw = detail::allocate_bytes(where, capacity_bytes, base_alignment, Space::id);
    base_ = static_cast<std::byte*>(raw.address);
    place_id_ = raw.place_id;
  }

  arena(arena&& o) noexcept
      : base_(std::exchange(o.base_, nullptr)),
        capacity_(std::exchange(o.capacity_, 0)),
        place_id_(o.place_id_),
        offset_(o.offset_.exchange(0, std::memory_order_relaxed)) {}
  arena& operator=(arena&& o) noexcept {
    if (this != &o) {
      release();
      base_ = std::exchange(o.base_, nullptr);
      capacity_ = std::exchange(o.capacity_, 0);
      place_id_ = o.place_id_;
      offset_.store(o.offset_.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
    }
    return *this;
  }
  arena(arena const&) = delete;
  arena& operator=(arena const&) = delete;
  ~arena() { release(); }

  /// Storage for `n` objects of T aligned to `align` (a power of two, at least
  /// alignof(T)), uninitialized; `n == 0` gives a null pointer, as strata::allocate does.
  /// T must be trivially copyable: reset() runs no destructors, and device memory moves
  /// bytewise. Throws out_of_memory (naming the request, the bytes used and the
  /// capacity) when the rest of the arena cannot hold the request.
  ///
  /// Lock-free: a compare-and-swap loop on the offset, so that the padding for `align`
  /// is computed from the offset actually claimed (a plain fetch_add would need to
  /// reserve `align - 1` spare bytes on every call).
  template <class T>
  ptr<T, Space> allocate(std::size_t n, std::size_t align = alignof(T)) {
    static_assert(std::is_trivially_copyable_v<T>,
                  "arena::allocate: T must be trivially copyable (reset() runs no destructors)");
    if (align < alignof(T) || (align & (align - 1)) != 0)
      detail::arena_bad_alignment(align, alignof(T));
    if (n == 0) return {};
    std::size_t const bytes = detail::bytes_for<T>(n);
    auto const base = reinterpret_cast<std::uintptr_t>(base_);
    std::size_t offset = offset_.load(std::memory_order_relaxed);
    for (;;) {
      // Aligned as an address, not as an offset, so alignments above base_alignment hold.
      std::size_t const start = ((base + offset + align - 1) & ~(align - 1)) - base;
      if (start > capacity_ || bytes > capacity_ - start)
        detail::arena_exhausted(place_id_, Space::id, bytes, align, offset, capacity_);
      // Acquire pairs with reset()'s release: memory reused after a reset in another
      // thread is seen with the writes that happened before that reset.
      if (offset_.compare_exchange_weak(offset, start + bytes, std::memory_order_acquire,
                                        std::memory_order_relaxed))
        return ptr<T, Space>(reinterpret_cast<T*>(base_ + start), place_id_);
    }
  }

  /// Makes the whole capacity available again. Every pointer the arena handed out
  /// before becomes invalid (its bytes are given to later allocations); the caller must
  /// ensure that no thread still uses them, or allocates concurrently with the reset.
  /// A sim arena first waits for the work issued on its device, queued or still waiting
  /// for its dependencies, as freeing device memory does.
  void reset() noexcept {
    if (base_) detail::wait_for_device_users(base_, Space::id);
    offset_.store(0, std::memory_order_release);
  }

  /// Bytes handed out since construction or the last reset, alignment padding included.
  std::size_t used() const noexcept { return offset_.load(std::memory_order_relaxed); }
  std::size_t capacity() const noexcept { return capacity_; }
  /// The memory place holding the buffer.
  place where() const { return detail::place_of_id(place_id_); }

 private:
  void release() noexcept {
    if (base_) {
      try {
        detail::deallocate_bytes(base_, Space::id);
      } catch (...) {
        // The arena frees only what it allocated: a failure is a broken invariant, and a
        // destructor must not throw.
      }
      base_ = nullptr;
    }
  }

  std::byte* base_ = nullptr;
  std::size_t capacity_ = 0;
  std::uint32_t place_id_ = 0;
  std::atomic<std::size_t> offset_{0};
};

/// The spaces of device arenas: a multiarch_allocator's device() takes one of them.
template <class S>
inline constexpr bool is_device_arena_space_v = S::id == space_id::sim || S::id == space_id::cuda;
template <class S>
concept device_arena_space = memory_space<S> && is_device_arena_space_v<S>;

/// Ripple's MultiarchAllocator (§5.1): an arena per CPU thread and one per device, each
/// created on first use and kept until the allocator is destroyed. Thread safe.
///
/// The CPU arenas are host_space memory at or near the constructor's place (pass a NUMA
/// node or a package to keep them local). Ripple pins its CPU buffer for faster transfers;
/// a pinned_space arena (`arena<pinned_space>`) can be built by hand where that matters.
class multiarch_allocator {
 public:
  /// `cpu_bytes` per thread's arena, `device_bytes` per device's arena (both > 0). Memory
  /// is allocated lazily: constructing an allocator allocates nothing.
  multiarch_allocator(place const& where, std::size_t cpu_bytes, std::size_t device_bytes);
  ~multiarch_allocator();
  /// Moves keep the arenas (and every thread's cached arena) valid; the moved-from
  /// allocator cannot be used any more.
  multiarch_allocator(multiarch_allocator&&) noexcept;
  multiarch_allocator& operator=(multiarch_allocator&&) noexcept;
  multiarch_allocator(multiarch_allocator const&) = delete;
  multiarch_allocator& operator=(multiarch_allocator const&) = delete;

  /// The calling thread's host arena (Ripple's cpu_allocator()). The first call on a
  /// thread creates it, or takes over the arena of a thread that has exited (without
  /// resetting it, so memory handed out there stays valid); later calls find it in a
  /// per-thread cache without locking. Several allocators coexist: the cache is keyed by
  /// a number unique to each allocator, never by its address, and never dereferences an
  /// allocator that is gone.
  arena<host_space>& cpu();

  /// The arena of a device (Ripple's gpu_allocator()), given the device, its memory or
  /// one of its compute units; created on the first call for that device (under a mutex:
  /// keep the reference rather than calling this per allocation). Arenas are typed by
  /// their space, so the space is a template argument: `device(p)` is a sim device's
  /// `arena<sim_space>&`, `device<cuda_space>(p)` a CUDA device's. Throws
  /// invalid_argument when `p` is no device of that kind, not_supported for CUDA devices
  /// in a build without CUDA, out_of_memory when the device has no room for the arena.
  template <device_arena_space Space = sim_space>
  arena<Space>& device(place const& device_or_memory);

  /// Resets every arena of this allocator (all threads', all devices'): everything
  /// allocated from it becomes invalid. No thread may use that memory or allocate from
  /// the allocator during the call.
  void reset_all();

  std::size_t cpu_bytes() const noexcept;
  std::size_t device_bytes() const noexcept;

 private:
  detail::multiarch_state& state() const;
  std::shared_ptr<detail::multiarch_state> state_;
};

}  // namespace strata
