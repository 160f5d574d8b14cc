// launch(place, shape, kernel, args...) -> event (Phalanx async; Alpaka's enqueue of a
// kernel executor). The kernel is called as kernel(self, args...) for every thread, with
// `self` the domain handle (domain.hpp); arguments are copied, as CUDA copies kernel
// parameters. launch(after(e...), ...) starts once the events complete (Phalanx
// async_after) without blocking the caller.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/cpu/run.hpp>
#include <strata/exec/cuda/backend.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/kernel_body.hpp>
#include <strata/exec/openmp/backend.hpp>
#include <strata/exec/serial/backend.hpp>
#include <strata/exec/shape.hpp>
#include <strata/exec/sim/backend.hpp>
#include <strata/exec/threads/backend.hpp>
#include <strata/exec/trace.hpp>
#include <strata/memory/ptr.hpp>

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <new>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace strata {

namespace detail {

/// Throws not_supported: a launch on a CUDA place of a kernel no nvcc unit compiled.
[[noreturn]] void cuda_not_compiled(char const* kernel);

// One definition per template (issue 13): the body of `launch<S, K, Args...>` must be the
// same in every translation unit, whatever compiled it (g++ with or without -fopenmp,
// nvcc), because the linker keeps one copy. So what it reaches is the same everywhere:
// the CPU backends are compiled in libstrata (src/exec/cpu/launch.cpp), and
// the CUDA backend is reached through a table that nvcc units fill in at static
// initialization: kernels have device code only where nvcc compiled their launch, so each
// such unit registers its launcher for that kernel, shape and argument types (alpaka and
// Kokkos also choose the backend when the kernel's file is compiled; the table makes that
// choice survive the linker).

/// A kernel's CUDA launcher, instantiated in a unit nvcc compiled.
template <class S, class K, class Args>
using cuda_launcher = event (*)(placement const&, S const&, K const&, Args&, after const*);

/// The registered launcher of kernel K with shape S and arguments Args: null until an nvcc
/// unit that launches it has been initialized. Constant-initialized, so its definition is
/// the same in every unit.
template <class S, class K, class Args>
struct cuda_entry {
  static inline std::atomic<cuda_launcher<S, K, Args>> fn{nullptr};
};

#if defined(__CUDACC__)
namespace {
// One registrar per nvcc translation unit (internal linkage): naming it in launch() makes
// this unit register its launcher before main, whichever unit's copy of launch() the
// linker keeps.
template <class S, class K, class Args>
struct cuda_registrar {
  static inline bool const done =
      (cuda_entry<S, K, Args>::fn.store(
           static_cast<cuda_launcher<S, K, Args>>(&::strata::cuda::backend::template launch<
                                                  S::rank, typename S::block_policy, K, Args>),
           std::memory_order_release),
       true);
};
}  // namespace
#endif

/// The CUDA backend as every translation unit sees it: the registered launcher, or the
/// error that says where device code comes from.
struct cuda_dispatch {
  static constexpr backend_id id = backend_id::cuda;
  template <class S, class K, class Args>
  static bool compiled() noexcept {
    return cuda_entry<S, K, Args>::fn.load(std::memory_order_acquire) != nullptr;
  }
  template <class S, class K, class Args>
  static event launch(placement const& p, S const& s, K const& k, Args& args,
                      after const* deps = nullptr) {
    auto fn = cuda_entry<S, K, Args>::fn.load(std::memory_order_acquire);
    if (!fn) cuda_not_compiled(trace::detail::type_name(typeid(K)));
    return fn(p, s, k, args, deps);
  }
};

/// A launch's kernel, shape and arguments, typed: what each launch instantiates. The
/// backends run it through kernel_body's virtual calls (kernel_body.hpp says why).
template <class S, class K, class Args>
class kernel_body_of final : public kernel_body {
 public:
  kernel_body_of(S const& s, K const& k, Args&& args)
      : kernel_body(s.blocks(), typeid(K)), s_(s), k_(k), args_(std::move(args)) {}

  void run(index_t b0, index_t b1) const override {
    Args local = args_;
    run_blocks(s_, b0, b1, k_, local);
  }
  event cuda(placement const& p, after const* deps) const override {
    Args local = args_;
    return cuda_dispatch::launch(p, s_, k_, local, deps);
  }
  bool cuda_compiled() const noexcept override { return cuda_dispatch::compiled<S, K, Args>(); }

 private:
  S s_;
  K k_;
  Args args_;
};

/// References to a launch's shape, kernel and arguments: the erased form of a launch that
/// runs in the calling thread (inline_kernel), and what the threads backend builds the
/// kernel_body from in its job's own storage (launch_placed).
template <class S, class K, class Args>
struct inline_parts {
  S const& s;
  K const& k;
  Args& args;

  static void run(void const* launch, index_t b0, index_t b1, bool copy_args) {
    auto const& self = *static_cast<inline_parts const*>(launch);
    if (copy_args) {
      Args local = self.args;
      run_blocks(self.s, b0, b1, self.k, local);
    } else {
      run_blocks(self.s, b0, b1, self.k, self.args);
    }
  }
};

/// Runs `k` on the serial or openmp backend of `p`, in the calling thread: the event is
/// complete (or failed) on return.
event launch_inline(placement const& p, inline_kernel const& k);
/// Launches `body` on any backend of `p`; the backend keeps it until the kernel has run.
event launch_shared(placement const& p, std::shared_ptr<kernel_body const> body);
/// launch(after(deps), ...) of `body` on `p`: on the device after CUDA markers where it
/// can, else started by whoever completes the last event (through the pool for the backends
/// that run kernels inline, so that a long chain does not recurse), and recorded as pending
/// work of a sim device so that frees of its memory wait for it.
event launch_after(after const& deps, placement const& p, std::shared_ptr<kernel_body const> body);

/// Whether launches on `t` run their kernels in the launching thread.
bool runs_inline(target const& t);
/// Whether `b` runs a launch's kernel in the launching thread (serial, openmp).
constexpr bool runs_inline(backend_id b) noexcept {
  return b == backend_id::serial || b == backend_id::openmp;
}
/// Whether `t` names the CUDA backend explicitly. Out of line: inlined, GCC at -O1 warns
/// that the optional's payload may be read uninitialized when a place converts to a
/// target (a false positive; the engaged flag guards it).
bool names_cuda(target const& t) noexcept;
/// Runs `fn` on the runtime's pool, soon, on any processor.
void defer(std::function<void()> fn);

/// The one "after" wrapper of launch, copy and queue (Phalanx async_after): returns an
/// event for the operation `start` queues once `deps` have completed (at once if they
/// have). `start` returns the operation's own event. A failed dependency fails the result
/// without starting; so does `start` throwing. With `inline_start` (the operation runs
/// in the thread that starts it and is complete on return: host copies, serial and
/// OpenMP kernels), a deferred start goes through the pool, so that a long chain
/// completing at once does not recurse one stack frame per operation. The trace's flow
/// arrow is kept from the caller to the deferred operation. A `small` inline operation (a
/// host copy of a few KiB) starts in the completing thread instead, up to a few levels of
/// such starts inside each other.
event start_after(after const& deps, bool inline_start, std::function<event()> start,
                  bool small = false);

/// Records a deferred operation on a sim device (by index) until `result` completes, so
/// that freeing the device's memory waits for it (docs/memory.md).
void track_device_work(placement const& p, event const& result);

/// Checks a pointer argument against the launch's backend: memory of another space or
/// another device is an error. `typed` pointers (ptr<T, S>) are checked in every build;
/// in builds without NDEBUG, raw pointers are looked up in the allocation registry too,
/// and typed ones must still be live (not freed).
void check_kernel_pointer(placement const& p, void const* address, space_id space, bool typed,
                          std::uint32_t place_id, std::size_t index);

/// Kernels receive plain pointers: ptr<T, S> arguments arrive as T*.
template <class A>
struct kernel_arg {
  using type = std::decay_t<A>;
};
template <class T, class S>
struct kernel_arg<ptr<T, S>> {
  using type = T*;
};
template <class A>
using kernel_arg_t = typename kernel_arg<std::decay_t<A>>::type;

template <class A>
kernel_arg_t<A> to_kernel_arg(placement const& p, A&& a, std::size_t index) {
  using D = std::decay_t<A>;
  if constexpr (is_ptr_v<D>) {
    if (a) check_kernel_pointer(p, a.get(), D::space::id, true, a.place_id(), index);
    return a.get();
  } else {
#if !defined(NDEBUG)
    if constexpr (std::is_pointer_v<D>) {
      using pointee = std::remove_cv_t<std::remove_pointer_t<D>>;
      if constexpr (std::is_object_v<pointee> || std::is_void_v<pointee>)
        if (a)
          check_kernel_pointer(p, const_cast<void const*>(static_cast<void const volatile*>(a)),
                               space_id::host, false, 0, index);
    }
#endif
    (void)p;
    (void)index;
    return std::forward<A>(a);
  }
}

template <class... Args, std::size_t... I>
auto kernel_args(placement const& p, std::index_sequence<I...>, Args&&... args) {
  return std::tuple<kernel_arg_t<Args>...>(to_kernel_arg(p, std::forward<Args>(args), I)...);
}

/// The kernel_body of a launch on `p` that starts later (launch(after(...), ...)).
template <class S, class K, class Args>
std::shared_ptr<kernel_body const> make_kernel_body(placement const& p, S const& s, K const& k,
                                                    Args&& args) {
  if (p.backend != backend_id::cuda) check_cpu_shape(s, p.backend);
  return std::make_shared<kernel_body_of<S, K, Args> const>(s, k, std::move(args));
}

/// The launch of `args` (already converted by kernel_args) on the resolved `p`: CUDA
/// through the registered launcher, the CPU backends through kernel_body.
template <class S, class K, class Args>
event launch_placed(placement const& p, S const& s, K const& k, Args&& args) {
  if (p.backend == backend_id::cuda) return cuda_dispatch::launch(p, s, k, args);
  check_cpu_shape(s, p.backend);
  using body = kernel_body_of<S, K, Args>;
  if constexpr (sizeof(body) <= threads::job_body_bytes &&
                alignof(body) <= alignof(std::max_align_t)) {
    if (p.backend == backend_id::threads) {
      inline_parts<S, K, Args> from{s, k, args};
      return threads::backend::launch(
          p, s.blocks(), typeid(K),
          [](void* at, void* ctx) -> kernel_body* {
            auto& f = *static_cast<inline_parts<S, K, Args>*>(ctx);
            return new (at) body(f.s, f.k, std::move(f.args));
          },
          &from);
    }
  }
  if (runs_inline(p.backend)) {
    using parts = inline_parts<S, K, Args>;
    parts const from{s, k, args};
    return launch_inline(p, inline_kernel{s.blocks(), &typeid(K), &parts::run, &from});
  }
  return launch_shared(p,
                       std::make_shared<kernel_body_of<S, K, Args> const>(s, k, std::move(args)));
}

}  // namespace detail

namespace detail {
/// The argument tuple a kernel receives for launch arguments Args.
template <class... Args>
using kernel_tuple = std::tuple<kernel_arg_t<Args>...>;

/// Names the CUDA launcher of this kernel (see cuda_registrar); nothing at run time.
template <class S, class K, class Args>
inline void register_cuda_launcher() noexcept {
#if defined(__CUDACC__)
  (void)cuda_registrar<S, K, Args>::done;
  // nvcc's device pass does not instantiate a static member's initializer, so the
  // registrar alone leaves the kernels out of the device image (every launch on a GPU
  // then fails with cudaErrorInvalidDeviceFunction: first seen on an H100 in session
  // 24). Naming the launcher here, in a function body, instantiates it and its kernels
  // in both passes.
  (void)&::strata::cuda::backend::template launch<S::rank, typename S::block_policy, K, Args>;
#endif
}
}  // namespace detail

template <shape_type S, class Kernel, class... Args>
event launch(target const& where, S const& s, Kernel&& kernel, Args&&... args) {
  using K = std::decay_t<Kernel>;
  using tuple = detail::kernel_tuple<Args...>;
  detail::register_cuda_launcher<S, K, tuple>();
  // Named explicitly, the CUDA backend fails here, whether or not a GPU exists, if no nvcc
  // unit compiled this kernel.
  if (detail::names_cuda(where) && !detail::cuda_dispatch::compiled<S, K, tuple>())
    detail::cuda_not_compiled(trace::detail::type_name(typeid(K)));
  auto p = detail::resolve(where);
  K const& k = kernel;
  return detail::launch_placed(
      p, s, k,
      detail::kernel_args(p, std::index_sequence_for<Args...>{}, std::forward<Args>(args)...));
}

/// launch, then wait: returns when the kernel has run, rethrowing its exception (Alpaka's
/// kernel on a blocking queue; what `launch(...).wait()` does, minus a wake-up). The calling
/// thread takes part as OpenMP's master thread does: it runs the first PU's share, so a
/// launch on the first PU alone runs on the caller without waking the pool's reserve
/// worker (tens of microseconds on a VM whose PUs have gone idle, against 4-9 us for a
/// whole small kernel).
template <shape_type S, class Kernel, class... Args>
void launch_and_wait(target const& where, S const& s, Kernel&& kernel, Args&&... args) {
  // Not around a kernel that runs inside launch (serial, OpenMP): while it runs, the
  // caller helps nobody, and a kernel waiting for another thread's first-PU work would
  // then wait for a reserve that is never woken.
  std::optional<detail::caller_waits> helping;
  if (!detail::runs_inline(where)) helping.emplace();
  launch(where, s, std::forward<Kernel>(kernel), std::forward<Args>(args)...).wait();
}

template <shape_type S, class Kernel, class... Args>
event launch(after const& deps, target const& where, S const& s, Kernel&& kernel, Args&&... args) {
  if (deps.ready()) {
    if (auto err = deps.error()) return event::failed(err);
    return launch(where, s, std::forward<Kernel>(kernel), std::forward<Args>(args)...);
  }
  using K = std::decay_t<Kernel>;
  using tuple = detail::kernel_tuple<Args...>;
  detail::register_cuda_launcher<S, K, tuple>();
  if (detail::names_cuda(where) && !detail::cuda_dispatch::compiled<S, K, tuple>())
    detail::cuda_not_compiled(trace::detail::type_name(typeid(K)));
  // A bad target, a pointer of another memory or an oversized block fail now, in the
  // caller, not later.
  auto placed = detail::resolve(where);
  if (placed.backend == backend_id::cuda && !detail::cuda_dispatch::compiled<S, K, tuple>())
    detail::cuda_not_compiled(trace::detail::type_name(typeid(K)));
  K const& k = kernel;
  return detail::launch_after(
      deps, placed,
      detail::make_kernel_body(placed, s, k,
                               detail::kernel_args(placed, std::index_sequence_for<Args...>{},
                                                   std::forward<Args>(args)...)));
}

}  // namespace strata
