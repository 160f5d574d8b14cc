// The CUDA backend (Phalanx §IV-A, Fig. 2; Alpaka §3.3, Table 2): the kernel functors the
// CPU backends run, on NVIDIA GPUs.
//
// Mapping (Alpaka Table 2): Strata's grid of blocks is CUDA's grid, its blocks CUDA's
// blocks (1-3D; Strata's last dimension is CUDA's x, so the fastest-varying index is the
// coalescing one; a grid extent too large for y or z goes to x, plan_grid), and a
// thread's elements a grid-stride loop inside the CUDA thread (domain.hpp). A parallel
// block's barrier() is __syncthreads(), its scratchpad dynamic shared memory sized from
// the shape, and a phase-split kernel runs its phases with __syncthreads() between them
// (the per-thread State lives in registers). Atomics and fences (atomic.hpp) are CUDA's
// under __CUDA_ARCH__.
//
// A CUDA launch needs the kernel compiled by nvcc, and strata::launch is a template
// instantiated in the user's translation unit, so — as in alpaka and Kokkos — device code
// exists only for kernels whose launch an nvcc unit (__CUDACC__) instantiated. Each such
// unit registers its launcher at static initialization (launch.hpp, cuda_registrar), so
// the same launch from a file the host compiler built runs it too; a kernel no nvcc unit
// launched throws strata::not_supported naming the kernel. Kernels for CUDA are functors whose
// operator() is a STRATA_FN template over `self` (whose type differs between backends; nvcc
// rejects generic `__host__ __device__` extended lambdas, docs/cuda.md).
//
// Streams and events (Phalanx §IV-A): each launch goes to a stream of the device's pool
// and records a cudaEvent; launching after events that carry one makes the stream wait on
// the device (cudaStreamWaitEvent), never the host. A completion worker per device turns
// the cudaEvent into the strata::event (a kernel fault fails it, and surfaces at wait).
// A place holding several GPUs splits the grid's first dimension over them (Phalanx's
// multi-grid); the launch's event completes when every part has.
#pragma once

#include <strata/config.hpp>
#include <strata/exec/backend.hpp>
#include <strata/exec/domain.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/phases.hpp>
#include <strata/exec/shape.hpp>
#include <strata/exec/trace.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <typeinfo>
#include <utility>
#include <vector>

namespace strata::detail::cuda {

/// What a launch checks its shape against, per device (cudaDeviceProp).
struct device_limits {
  int max_threads_per_block;
  int max_block[3];  // x, y, z
  int max_grid[3];
  std::size_t shared_per_block;        // without opting in
  std::size_t shared_per_block_optin;  // the most a kernel may opt in to
};

/// Throws backend_error "<call>: <CUDA's message>" (with `context` first, if any).
[[noreturn]] void fail(char const* call, int code, std::string const& context = {});
/// The limits of CUDA device `device` (its ordinal).
device_limits const& limits(int device);
/// Whether every event of `deps` not yet complete carries a CUDA marker, so that device
/// work after them can wait on the device.
bool chainable(after const& deps) noexcept;
/// The next stream of device `device`'s pool, with `device` made current; the stream
/// waits (on the device) for the markers of `deps`' pending events, which must all have
/// one (chainable). Returns a cudaStream_t.
void* stream_for(int device, after const* deps);
/// Records the end of the work just queued on `stream` and returns its event, completed
/// by the device's completion worker; `what` names the work in error messages.
event finish(int device, void* stream, std::string what);
/// The CUDA ordinals of the devices in `mask`, in order.
std::vector<int> devices_of(std::uint64_t mask);

/// Restores the calling thread's current CUDA device when it leaves scope: Strata's calls
/// switch devices (cudaSetDevice) to launch, copy, allocate and free, and must not
/// redirect the caller's own CUDA calls (cuBLAS, cudaMalloc) to another GPU.
class device_guard {
 public:
  device_guard() noexcept;
  ~device_guard();
  device_guard(device_guard const&) = delete;
  device_guard& operator=(device_guard const&) = delete;

 private:
  [[maybe_unused]] int saved_ = -1;  // -1: cudaGetDevice failed (unused without CUDA)
};

/// Where a launch's grid goes on CUDA's grid axes. Strata's last dimension is x when the
/// extents fit the axes' limits (x takes 2^31-1 blocks, y and z 65535); otherwise the
/// largest extent takes x and the others y, then z, in Strata's order. Threads keep
/// their own mapping (the last dimension is threadIdx.x, for coalescing); which axis a
/// block index comes from changes only the order blocks are scheduled in.
struct grid_plan {
  unsigned extent[3];           // x, y, z of the CUDA grid
  std::uint8_t axis_of_dim[3];  // Strata dimension i uses CUDA axis axis_of_dim[i]
};

template <std::size_t D>
grid_plan plan_grid(vec<D> const& grid, device_limits const& lim) {
  grid_plan plan{{1, 1, 1}, {0, 0, 0}};
  for (std::size_t i = 0; i < D; ++i) plan.axis_of_dim[i] = static_cast<std::uint8_t>(D - 1 - i);
  bool fits = true;
  for (std::size_t i = 0; i < D; ++i)
    if (grid[i] > lim.max_grid[D - 1 - i]) fits = false;
  if (!fits) {
    std::size_t largest = 0;
    for (std::size_t i = 1; i < D; ++i)
      if (grid[i] > grid[largest]) largest = i;
    std::uint8_t next = 1;
    for (std::size_t i = 0; i < D; ++i) plan.axis_of_dim[i] = i == largest ? 0 : next++;
  }
  for (std::size_t i = 0; i < D; ++i)
    plan.extent[plan.axis_of_dim[i]] = static_cast<unsigned>(grid[i]);
  return plan;
}

/// Checks a launch's grid, block and scratchpad against device `device`'s limits `lim`
/// (invalid_argument naming the limit) and returns where its grid goes (plan_grid).
template <std::size_t D>
grid_plan check_shape(int device, device_limits const& lim, vec<D> const& grid, vec<D> const& block,
                      std::size_t scratch) {
  char const* axis = "xyz";
  auto const plan = plan_grid(grid, lim);
  auto too_big = [&](char const* what, std::size_t i, index_t v, int a, int max) {
    throw invalid_argument("launch on CUDA device " + std::to_string(device) + ": " + what +
                           " extent " + std::to_string(v) + " in dimension " + std::to_string(i) +
                           " (CUDA's " + axis[a] + ") exceeds the device's limit of " +
                           std::to_string(max));
  };
  for (std::size_t i = 0; i < D; ++i) {
    int const b = static_cast<int>(D - 1 - i), g = plan.axis_of_dim[i];
    if (block[i] > lim.max_block[b]) too_big("block", i, block[i], b, lim.max_block[b]);
    if (grid[i] > lim.max_grid[g]) too_big("grid", i, grid[i], g, lim.max_grid[g]);
  }
  if (block.product() > lim.max_threads_per_block)
    throw invalid_argument("launch on CUDA device " + std::to_string(device) + ": block of " +
                           std::to_string(block.product()) + " threads exceeds the limit of " +
                           std::to_string(lim.max_threads_per_block) + " threads per block");
  if (scratch > lim.shared_per_block_optin)
    throw invalid_argument("launch on CUDA device " + std::to_string(device) + ": scratchpad of " +
                           std::to_string(scratch) + " bytes exceeds the " +
                           std::to_string(lim.shared_per_block_optin) +
                           " bytes of shared memory a block may have");
  return plan;
}

}  // namespace strata::detail::cuda

#if defined(__CUDACC__)
#include <cuda_runtime.h>

namespace strata::detail::cuda {

/// Component `a` (0 = x, 1 = y, 2 = z) of a CUDA index.
STRATA_FN inline unsigned component(dim3 const& v, unsigned a) {
  return a == 0 ? v.x : (a == 1 ? v.y : v.z);
}

/// A block's static shared variable (T, Id): CUDA's static __shared__, one per
/// specialization of this function, per block.
template <class T, std::size_t Id>
STRATA_FN T& shared_var() {
#if STRATA_DEVICE_CODE
  struct alignas(T) cell {
    unsigned char bytes[sizeof(T)];
  };
  __shared__ cell storage;
  return *reinterpret_cast<T*>(&storage);
#else
  // (Never runs: the context exists on the GPU only; this keeps the host pass compiling.)
  return *static_cast<T*>(nullptr);
#endif
}

/// The domain's context on the GPU: extents passed by value, indices read from builtins
/// (a thread's dimension i is threadIdx's axis D-1-i; a block's is blockIdx's
/// grid_axis[i], see plan_grid). `offset0` is the first block (in dimension 0) of this
/// device's part of a multi-GPU grid. Phases: barrier() is the phase boundary and does
/// not compile inside a phase.
template <std::size_t D, bool Phases>
struct context {
  /// A thread's elements are grid-strided (domain.hpp): consecutive threads touch
  /// consecutive elements in each step, so their loads coalesce.
  static constexpr bool grid_stride_elements = true;

  vec<D> grid, block, elements;
  index_t offset0;
  std::uint8_t grid_axis[3];
  std::byte* scratch;
  std::size_t scratch_bytes;
  mutable std::size_t scratchpad_used = 0;

  STRATA_FN vec<D> grid_extent() const { return grid; }
  STRATA_FN vec<D> block_extent() const { return block; }
  STRATA_FN vec<D> element_extent() const { return elements; }
  STRATA_FN vec<D> block_index() const {
    vec<D> r{};
#if STRATA_DEVICE_CODE
    for (std::size_t i = 0; i < D; ++i)
      r[i] = static_cast<index_t>(component(blockIdx, grid_axis[i]));
    r[0] += offset0;
#endif
    return r;
  }
  STRATA_FN vec<D> thread_index() const {
    vec<D> r{};
#if STRATA_DEVICE_CODE
    for (std::size_t i = 0; i < D; ++i)
      r[i] = static_cast<index_t>(component(threadIdx, static_cast<unsigned>(D - 1 - i)));
#endif
    return r;
  }
  template <bool P = Phases>
  STRATA_FN void barrier() const {
    static_assert(!P,
                  "barrier(): a phase-split kernel is already cut at its barriers; end the "
                  "phase and continue in the next one instead");
#if STRATA_DEVICE_CODE
    __syncthreads();
#endif
  }
  // A group's barrier (domain.hpp's group_domain): the block's, a warp's lanes, or a
  // named barrier (ids 1-15, by the group's position) for a group of whole warps.
  template <bool P = Phases>
  STRATA_FN void group_barrier(index_t first, index_t size) const {
    static_assert(!P,
                  "group barrier(): a phase-split kernel runs each phase for every thread "
                  "before the next; cut it at block barriers (phases) instead");
#if STRATA_DEVICE_CODE
    if (size == block.product()) {
      __syncthreads();
    } else if (size <= 32 && (size & (size - 1)) == 0) {
      unsigned const lanes = size == 32 ? 0xffffffffu : ((1u << size) - 1u) << (first % 32);
      __syncwarp(lanes);
    } else if (size % 32 == 0 && first / size < 15) {
      asm volatile("bar.sync %0, %1;" ::"r"(static_cast<unsigned>(1 + first / size)),
                   "r"(static_cast<unsigned>(size))
                   : "memory");
    } else {
      __trap();
    }
#else
    (void)first;
    (void)size;
#endif
  }
  template <bool P = Phases>
  STRATA_FN int barrier_count(int predicate) const {
    static_assert(!P,
                  "barrier_count(): a phase-split kernel is already cut at its barriers; "
                  "count in the scratchpad and read it in the next phase instead");
#if STRATA_DEVICE_CODE
    return __syncthreads_count(predicate);
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
    return cuda::shared_var<T, Id>();
  }
};

template <std::size_t D>
struct launch_desc {
  vec<D> grid, block, elements;
  index_t offset0;
  std::uint8_t grid_axis[3];
  std::size_t scratch_bytes;
};

// The kernel entry points, with short names so that profiler output stays readable
// (nsys/ncu show `strata::k::run<...>`).
namespace k {

template <std::size_t D, class P, class Kernel, class... A>
__global__ void run(launch_desc<D> d, Kernel kernel, A... a) {
  extern __shared__ __align__(16) std::byte strata_shared[];
  context<D, false> ctx{d.grid,
                        d.block,
                        d.elements,
                        d.offset0,
                        {d.grid_axis[0], d.grid_axis[1], d.grid_axis[2]},
                        strata_shared,
                        d.scratch_bytes};
  kernel(domain<D, P, context<D, false>>(ctx), a...);
}

template <std::size_t D, class PhasedKernel, class... A>
__global__ void phases(launch_desc<D> d, PhasedKernel kernel, A... a) {
  using State = typename PhasedKernel::state_type;
  extern __shared__ __align__(16) std::byte strata_shared[];
  context<D, true> ctx{d.grid,
                       d.block,
                       d.elements,
                       d.offset0,
                       {d.grid_axis[0], d.grid_axis[1], d.grid_axis[2]},
                       strata_shared,
                       d.scratch_bytes};
  State state{};
  // Each phase for this thread, then the block's barrier: the CPU backends' phase loop,
  // turned inside out.
  std::apply(
      [&](auto const&... phase) {
        ((ctx.scratchpad_used = 0,
          phase(domain<D, parallel_group, context<D, true>>(ctx), state, a...), __syncthreads()),
         ...);
      },
      kernel.phases);
}

}  // namespace k

template <std::size_t D>
dim3 to_dim3(vec<D> const& v) {
  unsigned e[3] = {1, 1, 1};
  for (std::size_t i = 0; i < D; ++i) e[D - 1 - i] = static_cast<unsigned>(v[i]);
  return dim3(e[0], e[1], e[2]);
}

template <class Fn>
void allow_shared(Fn* fn, std::size_t bytes, int device) {
  if (bytes <= limits(device).shared_per_block) return;
  auto e =
      cudaFuncSetAttribute(reinterpret_cast<void const*>(fn),
                           cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e != cudaSuccess) fail("cudaFuncSetAttribute(MaxDynamicSharedMemorySize)", e);
}

template <class Kernel>
std::string kernel_name() {
  return trace::detail::type_name(typeid(Kernel));
}

}  // namespace strata::detail::cuda

namespace strata::cuda {

struct backend {
  static constexpr backend_id id = backend_id::cuda;

  template <std::size_t D, class P, class Kernel, class Args>
  static event launch(detail::placement const& where, shape<D, P> const& s, Kernel const& kernel,
                      Args& args, after const* deps = nullptr) {
    return launch_impl(where, s, kernel, args, deps,
                       std::make_index_sequence<std::tuple_size_v<Args>>{});
  }

 private:
  template <std::size_t D, class P, class Kernel, class Args, std::size_t... I>
  static event launch_impl(detail::placement const& where, shape<D, P> const& s,
                           Kernel const& kernel, Args& args, after const* deps,
                           std::index_sequence<I...>) {
    namespace dc = detail::cuda;
    if constexpr (is_phased_kernel_v<Kernel>)
      static_assert(is_parallel_v<P>,
                    "phases: a phase-split kernel needs parallel blocks, "
                    "shape.block(strata::parallel, ...)");
    auto devices = dc::devices_of(where.devices);
    // Phalanx's multi-grid: dimension 0 of the grid is cut into one part per GPU.
    index_t const rows = s.grid_extent()[0];
    index_t const n =
        static_cast<index_t>(devices.size()) < rows ? static_cast<index_t>(devices.size()) : rows;
    std::size_t const scratch = s.scratchpad_bytes();
    auto part_grid = [&](index_t part) {
      vec<D> g = s.grid_extent();
      g[0] = rows / n + (part < rows % n ? 1 : 0);
      return g;
    };
    // The caller's current device is restored on return (stream_for switches devices).
    dc::device_guard const keep_device;
    // Every part is checked before any is queued: a shape one GPU rejects must not leave
    // the other GPUs' parts running with no event to wait for.
    std::vector<dc::grid_plan> plans;
    for (index_t part = 0; part < n; ++part) {
      int const device = devices[static_cast<std::size_t>(part)];
      plans.push_back(
          dc::check_shape(device, dc::limits(device), part_grid(part), s.block_extent(), scratch));
    }
    std::vector<event> parts;
    index_t first = 0;
    for (index_t part = 0; part < n; ++part) {
      int const device = devices[static_cast<std::size_t>(part)];
      auto const& plan = plans[static_cast<std::size_t>(part)];
      index_t const count = part_grid(part)[0];
      void* stream = dc::stream_for(device, deps);
      dc::launch_desc<D> d{s.grid_extent(),
                           s.block_extent(),
                           s.element_extent(),
                           first,
                           {plan.axis_of_dim[0], plan.axis_of_dim[1], plan.axis_of_dim[2]},
                           scratch};
      dim3 const grid_dim(plan.extent[0], plan.extent[1], plan.extent[2]);
      dim3 const block_dim = dc::to_dim3(s.block_extent());
      auto cs = static_cast<cudaStream_t>(stream);
      // cudaGetLastError below must report this launch, not a non-sticky error an earlier
      // CUDA call left in this thread (a sticky fault is reported again anyway).
      (void)cudaGetLastError();
      if constexpr (is_phased_kernel_v<Kernel>) {
        launch_phases(kernel, d, grid_dim, block_dim, scratch, device, cs, std::get<I>(args)...);
      } else {
        auto* fn = &dc::k::run<D, P, Kernel, std::tuple_element_t<I, Args>...>;
        dc::allow_shared(fn, scratch, device);
        fn<<<grid_dim, block_dim, scratch, cs>>>(d, kernel, std::get<I>(args)...);
      }
      if (auto e = cudaGetLastError(); e != cudaSuccess)
        dc::fail("cudaLaunchKernel", e, "launch of kernel " + dc::kernel_name<Kernel>());
      parts.push_back(dc::finish(device, stream, "kernel " + dc::kernel_name<Kernel>()));
      first += count;
    }
    return parts.size() == 1 ? parts.front() : when_all(after(std::move(parts)));
  }

  template <std::size_t D, class State, class... Phases, class... A>
  static void launch_phases(phased_kernel<State, Phases...> const& kernel,
                            detail::cuda::launch_desc<D> const& d, dim3 grid_dim, dim3 block_dim,
                            std::size_t scratch, int device, cudaStream_t stream, A const&... a) {
    auto* fn = &detail::cuda::k::phases<D, phased_kernel<State, Phases...>, A...>;
    detail::cuda::allow_shared(fn, scratch, device);
    fn<<<grid_dim, block_dim, scratch, stream>>>(d, kernel, a...);
  }
};

}  // namespace strata::cuda
#endif
