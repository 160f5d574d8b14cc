// The domain handle a kernel receives first (Phalanx's `self`, Alpaka's `acc`).
//
// Phalanx §III-B: `size()` and `index()` give the number of subgroups of a level and the
// caller's position; `subdomain()` is the subgroup holding the caller; only parallel
// levels have `barrier()` and `scratchpad()`. The grid's members (blocks) are always
// independent (Alpaka §3.2.2), so the grid level is streaming; a block is streaming or
// parallel as its shape says. Elements are the thread's own (Alpaka §3.2.4).
//
// The handle is backend-neutral: a backend supplies a context `Ctx` with the extents,
// the caller's block and thread index, and for parallel blocks `barrier()` and the
// scratchpad. CPU backends store these values; a GPU backend reads them from builtins.
#pragma once

#include <strata/exec/shape.hpp>
#include <strata/vec.hpp>

#include <cstddef>
#include <type_traits>

namespace strata {

namespace detail {

/// Raised (on the host) when a kernel asks for more scratchpad than its shape provides.
[[noreturn]] void scratchpad_overflow(std::size_t requested, std::size_t available);
/// Raised (on the host) when a kernel cuts a block or group into groups of a size that
/// does not divide it.
[[noreturn]] void bad_group_size(index_t size, index_t parent);

/// A type-dependent false, for static_asserts that fire only when instantiated.
template <class...>
inline constexpr bool always_false = false;

/// Whether a backend's context hands each thread its elements in grid-stride order
/// (`static constexpr bool grid_stride_elements = true`, the CUDA backend) rather than
/// as one contiguous chunk (the CPU backends, where a thread's chunk is its cache lines
/// and its SIMD loop).
template <class Ctx>
inline constexpr bool grid_stride_elements_v = requires {
  requires Ctx::grid_stride_elements;
};

/// How many of `count` elements first, first + stride, ... lie below `bound`. Every GPU
/// thread computes this before its first element: the division (a 64-bit one is a long
/// instruction sequence on GPUs) is needed only for the threads whose last element is
/// past the bound. `(count - 1) * stride` cannot overflow: it is below the launch's
/// grid x block x elements, which shape's constructor keeps below 2^63.
STRATA_FN constexpr index_t strided_count(index_t first, index_t stride, index_t count,
                                          index_t bound) noexcept {
  if (first >= bound) return 0;
  if (count <= 1 || (count - 1) * stride < bound - first) return count;
  index_t const fit = (bound - first + stride - 1) / stride;
  return fit < count ? fit : count;
}

}  // namespace detail

template <std::size_t D, class Ctx>
class thread_domain;
template <std::size_t D, level_policy BlockPolicy, class Ctx>
class block_domain;

/// A group of a parallel block's threads, and groups inside groups (Phalanx §III-B: a
/// task's hierarchy has any depth, and any level may be parallel; CUDA's tiled
/// partitions): `block().group(k)` cuts the block's threads, in linear order, into groups
/// of k consecutive threads (k must divide the block), `group(k)` on a group cuts it
/// again. `barrier()` waits for the caller's group only, so groups move on independently.
/// On the CPU backends groups are fibers of the block like the rest; on CUDA a group of
/// at most 32 threads (a power of two) synchronizes with __syncwarp and a larger one
/// (a multiple of 32: one level of such groups, at most 15 per block) with a named
/// barrier.
template <class Ctx>
class group_domain {
 public:
  STRATA_FN group_domain(Ctx const& ctx, index_t first, index_t size, index_t me, index_t parent)
      : ctx_(ctx), first_(first), size_(size), me_(me), parent_(parent) {}
  /// Threads in the group.
  STRATA_FN index_t size() const { return size_; }
  /// The caller's position in the group.
  STRATA_FN index_t index() const { return me_ - first_; }
  /// The group's position among its parent's groups, and their number.
  STRATA_FN index_t group_index() const { return (first_ % parent_) / size_; }
  STRATA_FN index_t groups() const { return parent_ / size_; }
  /// Waits until every thread of this group has arrived.
  STRATA_FN void barrier() const { ctx_.group_barrier(first_, size_); }
  /// This group cut into groups of `size` threads (`size` divides size()).
  STRATA_FN group_domain group(index_t size) const {
    if (size < 1 || size_ % size != 0) {
#if STRATA_DEVICE_CODE
      __trap();
#else
      detail::bad_group_size(size, size_);
#endif
    }
    return group_domain(ctx_, first_ + (me_ - first_) / size * size, size, me_, size_);
  }

 private:
  Ctx const& ctx_;
  index_t first_, size_, me_, parent_;
};

/// The kernel's view of the whole launch: the grid level, and Alpaka-style shortcuts
/// (global indices, element ranges) for the calling thread.
template <std::size_t D, level_policy BlockPolicy, class Ctx>
class domain {
 public:
  static constexpr std::size_t rank = D;
  using block_policy = BlockPolicy;

  STRATA_FN explicit domain(Ctx const& ctx) : ctx_(ctx) {}

  // Phalanx, grid level: blocks.
  STRATA_FN vec<D> size() const { return ctx_.grid_extent(); }
  STRATA_FN vec<D> index() const { return ctx_.block_index(); }
  STRATA_FN block_domain<D, BlockPolicy, Ctx> subdomain() const {
    return block_domain<D, BlockPolicy, Ctx>(ctx_);
  }
  /// The same as subdomain(): the caller's block.
  STRATA_FN block_domain<D, BlockPolicy, Ctx> block() const { return subdomain(); }

  // Alpaka-style queries (getIdx / getWorkDiv).
  STRATA_FN vec<D> grid_extent() const { return ctx_.grid_extent(); }
  STRATA_FN vec<D> block_extent() const { return ctx_.block_extent(); }
  STRATA_FN vec<D> element_extent() const { return ctx_.element_extent(); }
  STRATA_FN vec<D> block_index() const { return ctx_.block_index(); }
  STRATA_FN vec<D> thread_index() const { return ctx_.thread_index(); }
  /// The caller's thread index in the whole grid.
  STRATA_FN vec<D> global_index() const {
    return ctx_.block_index() * ctx_.block_extent() + ctx_.thread_index();
  }
  /// Threads in the whole grid.
  STRATA_FN vec<D> global_extent() const { return ctx_.grid_extent() * ctx_.block_extent(); }
  STRATA_FN index_t global_linear_index() const {
    return linearize(global_index(), global_extent());
  }
  /// Elements covered by the whole launch.
  STRATA_FN vec<D> global_element_extent() const { return global_extent() * ctx_.element_extent(); }
  /// The first element of the caller's contiguous chunk (element_chunk()), in the
  /// launch's global element space.
  STRATA_FN vec<D> first_element() const { return global_index() * ctx_.element_extent(); }

  /// The caller's elements as global element indices: integers in 1-D, points otherwise.
  /// Every backend covers the launch's global element extent once, each thread
  /// element_extent() elements of it, in the order that suits the backend: on CPUs a
  /// contiguous chunk (element_chunk(): the thread's cache lines, a SIMD loop); on GPUs
  /// grid-stride order, global_index() + k * global_extent() (each step of the loop has
  /// neighbouring threads on neighbouring elements, so their accesses coalesce). Kernels
  /// that only iterate the range run unchanged on both.
  STRATA_FN auto elements() const {
    if constexpr (detail::grid_stride_elements_v<Ctx>) {
      if constexpr (D == 1)
        return strided_range{global_index()[0], ctx_.element_extent()[0], global_extent()[0]};
      else
        return strided_box_range<D>{global_index(), ctx_.element_extent(), global_extent()};
    } else {
      return element_chunk();
    }
  }
  /// The caller's elements clipped to [0, bound): the usual `i < n` guard, hoisted out of
  /// the loop so that it stays vectorizable.
  STRATA_FN auto elements(vec<D> const& bound) const {
    if constexpr (detail::grid_stride_elements_v<Ctx>) {
      vec<D> const first = global_index(), stride = global_extent();
      vec<D> count = ctx_.element_extent();
      for (std::size_t i = 0; i < D; ++i)
        count[i] = detail::strided_count(first[i], stride[i], count[i], bound[i]);
      if constexpr (D == 1)
        return strided_range{first[0], count[0], stride[0]};
      else
        return strided_box_range<D>{first, count, stride};
    } else {
      return element_chunk(bound);
    }
  }
  STRATA_FN auto elements(index_t bound) const requires(D == 1) { return elements(vec<1>{bound}); }

  /// The caller's elements as one contiguous chunk on every backend, for kernels that walk
  /// rows themselves (first/extent, or first/last in 1-D). On GPUs with several elements
  /// per thread such accesses do not coalesce; elements() is the fast order there.
  STRATA_FN auto element_chunk() const {
    if constexpr (D == 1) {
      index_t first = first_element()[0];
      return index_range{first, first + ctx_.element_extent()[0]};
    } else {
      return box_range<D>{first_element(), ctx_.element_extent()};
    }
  }
  /// The contiguous chunk clipped to [0, bound).
  STRATA_FN auto element_chunk(vec<D> const& bound) const {
    auto first = first_element();
    if constexpr (D == 1) {
      index_t last = first[0] + ctx_.element_extent()[0];
      return index_range{first[0], last < bound[0] ? last : bound[0]};
    } else {
      vec<D> ext = ctx_.element_extent();
      for (std::size_t i = 0; i < D; ++i) {
        index_t room = bound[i] - first[i];
        ext[i] = room < 0 ? 0 : (room < ext[i] ? room : ext[i]);
      }
      return box_range<D>{first, ext};
    }
  }
  STRATA_FN auto element_chunk(index_t bound) const requires(D == 1) {
    return element_chunk(vec<1>{bound});
  }

  /// The grid level is streaming; synchronize inside a block with block().barrier().
  template <class P = BlockPolicy>
  STRATA_FN void barrier() const {
    static_assert(detail::always_false<P>,
                  "barrier(): the grid level is streaming (blocks are independent and cannot "
                  "synchronize); use self.block().barrier() in a parallel block");
  }

  STRATA_FN Ctx const& context() const { return ctx_; }

 private:
  Ctx ctx_;
};

/// The caller's block: its threads, and for parallel blocks a barrier and a scratchpad.
template <std::size_t D, level_policy BlockPolicy, class Ctx>
class block_domain {
 public:
  STRATA_FN explicit block_domain(Ctx const& ctx) : ctx_(ctx) {}

  STRATA_FN vec<D> size() const { return ctx_.block_extent(); }
  STRATA_FN vec<D> index() const { return ctx_.thread_index(); }
  STRATA_FN index_t linear_size() const { return ctx_.block_extent().product(); }
  STRATA_FN index_t linear_index() const {
    return linearize(ctx_.thread_index(), ctx_.block_extent());
  }
  STRATA_FN thread_domain<D, Ctx> subdomain() const { return thread_domain<D, Ctx>(ctx_); }

  /// Waits until every thread of the block has arrived (CUDA __syncthreads()).
  STRATA_FN void barrier() const {
    static_assert(is_parallel_v<BlockPolicy>,
                  "barrier(): this block is streaming (its threads are independent); build "
                  "the shape with .block(strata::parallel, ...) to synchronize threads");
    ctx_.barrier();
  }

  /// The block's threads in groups of `size` consecutive threads (linear order; `size`
  /// divides the block), the caller's group: group_domain.
  STRATA_FN group_domain<Ctx> group(index_t size) const {
    static_assert(is_parallel_v<BlockPolicy>,
                  "group(): this block is streaming (its threads are independent); build "
                  "the shape with .block(strata::parallel, ...) to synchronize groups");
    // The whole block as one group, cut.
    index_t const n = linear_size();
    return group_domain<Ctx>(ctx_, 0, n, linear_index(), n).group(size);
  }

  /// A barrier that also counts the block's threads whose `predicate` is true; every
  /// thread gets the count (CUDA __syncthreads_count; Alpaka's syncBlockThreadsPredicate
  /// with BlockCount). Every thread of the block must call it, like barrier().
  STRATA_FN int barrier_count(bool predicate) const {
    static_assert(is_parallel_v<BlockPolicy>,
                  "barrier_count(): this block is streaming (its threads are independent); "
                  "build the shape with .block(strata::parallel, ...) to synchronize threads");
    return ctx_.barrier_count(predicate ? 1 : 0);
  }
  /// A barrier that tells every thread whether all of the block's threads passed a true
  /// `predicate` (CUDA __syncthreads_and; Alpaka's BlockAnd).
  STRATA_FN bool barrier_and(bool predicate) const {
    return static_cast<index_t>(barrier_count(predicate)) == linear_size();
  }
  /// A barrier that tells every thread whether any thread passed a true `predicate`
  /// (CUDA __syncthreads_or; Alpaka's BlockOr).
  STRATA_FN bool barrier_or(bool predicate) const { return barrier_count(predicate) != 0; }

  /// The block's shared scratchpad as `n` objects of T. Every thread makes the same calls
  /// in the same order (SPMD), so the k-th call returns the same storage in every thread;
  /// each call takes the next suitably aligned piece of the shape's scratchpad bytes.
  template <class T>
  STRATA_FN T* scratchpad(std::size_t n) const {
    static_assert(is_parallel_v<BlockPolicy>,
                  "scratchpad(): this block is streaming (its threads share nothing); build "
                  "the shape with .block(strata::parallel, ...).scratchpad(bytes)");
    static_assert(std::is_trivially_destructible_v<T>,
                  "scratchpad(): T must be trivially destructible (scratchpads are raw storage)");
    std::size_t offset = (ctx_.scratchpad_used + alignof(T) - 1) / alignof(T) * alignof(T);
    // n * sizeof(T) may wrap (a huge n): the request is then reported as the largest size.
    std::size_t const end =
        n > (~std::size_t{0} - offset) / sizeof(T) ? ~std::size_t{0} : offset + n * sizeof(T);
    if (end > ctx_.scratchpad_size()) {
#if STRATA_DEVICE_CODE
      __trap();
#else
      detail::scratchpad_overflow(end, ctx_.scratchpad_size());
#endif
    }
    ctx_.scratchpad_used = end;
    return reinterpret_cast<T*>(ctx_.scratchpad_base() + offset);
  }

  /// A variable of type T shared by the block's threads (Alpaka's declareSharedVar<T,
  /// id>, CUDA's static __shared__): one object per (T, Id) per block, the same object
  /// for every thread of the block whenever it asks, alive while the block runs; `Id`
  /// tells apart variables of one type (a literal, or __COUNTER__). Like __shared__, it
  /// starts uninitialized: one thread writes it, then a barrier, then all read. Needs no
  /// scratchpad bytes in the shape (the backends size it: CUDA statically, the CPU
  /// backends per block as it is asked for).
  template <class T, std::size_t Id = 0>
  STRATA_FN T& shared_var() const {
    static_assert(is_parallel_v<BlockPolicy>,
                  "shared_var(): this block is streaming (its threads share nothing); build "
                  "the shape with .block(strata::parallel, ...)");
    static_assert(
        std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
        "shared_var(): T must be trivially default-constructible and destructible "
        "(block-shared variables start uninitialized and are never destroyed, as "
        "CUDA's __shared__)");
    return ctx_.template shared_var<T, Id>();
  }

 private:
  Ctx const& ctx_;
};

/// The caller's thread: its elements (Alpaka §3.2.4).
template <std::size_t D, class Ctx>
class thread_domain {
 public:
  STRATA_FN explicit thread_domain(Ctx const& ctx) : ctx_(ctx) {}
  STRATA_FN vec<D> size() const { return ctx_.element_extent(); }
  STRATA_FN vec<D> first() const {
    return (ctx_.block_index() * ctx_.block_extent() + ctx_.thread_index()) * ctx_.element_extent();
  }

 private:
  Ctx const& ctx_;
};

}  // namespace strata
