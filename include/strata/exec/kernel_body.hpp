// A launch with its types erased: the kernel, its shape and its arguments behind a few
// virtual calls. The CPU backends (serial, threads, openmp, sim) and the deferred start of
// launch(after(...), ...) are compiled once, in libstrata (src/exec/cpu/launch.cpp),
// against this interface; what a translation unit instantiates per kernel is only the typed
// body (kernel_body_of in launch.hpp: its loop over blocks and its CUDA launcher's entry).
//
// Why: Strata picks a launch's backend at run time, so every launch used to instantiate
// each backend's launch path (four CPU backends, their chunk closures, a std::function for
// the sim queue and one for the deferred start), and that plumbing, not the kernels, was
// most of the code: in tests/tensor/record_test.cpp, 93 kernels made 2.5 MB of text, of
// which the kernels' own loops were 46 KB, and CI (build and tests, three times) took 49-52
// minutes on a 2-core VM (docs/status.md, session 63). The price is one virtual call per
// chunk of blocks (threads, sim), per OpenMP thread or per serial launch; the threads
// backend builds the body inside its job, so a launch on the pool is still one allocation.
#pragma once

#include <strata/vec.hpp>

#include <typeinfo>

namespace strata {

class event;
struct after;

namespace detail {

struct placement;

/// A launch that runs in the calling thread (serial, openmp), erased without an allocation
/// or a copy of the kernel: `run` runs blocks [b0, b1) of the launch at `launch` on its own
/// arguments (serial, one caller) or on a copy of its own (`copy_args`: OpenMP threads).
struct inline_kernel {
  index_t blocks;
  std::type_info const* kernel;
  void (*run)(void const* launch, index_t b0, index_t b1, bool copy_args);
  void const* launch;
};

/// A launch that outlives the call (threads, sim, launch after events): it owns copies of
/// the kernel and its arguments.
class kernel_body {
 public:
  kernel_body(index_t blocks, std::type_info const& kernel) noexcept
      : blocks_(blocks), kernel_(&kernel) {}
  virtual ~kernel_body();  // out of line: its vtable is emitted once, in libstrata
  kernel_body(kernel_body const&) = delete;
  kernel_body& operator=(kernel_body const&) = delete;

  /// Runs blocks [b0, b1) of the launch in the calling thread, with a copy of the launch's
  /// arguments of its own (chunks of one launch run concurrently). May throw.
  virtual void run(index_t b0, index_t b1) const = 0;
  /// Launches it on the CUDA placement `p` (after `deps` on the device when given) through
  /// the launcher an nvcc unit registered; throws not_supported if none did.
  virtual event cuda(placement const& p, after const* deps) const = 0;
  /// Whether an nvcc unit registered this kernel's CUDA launcher.
  virtual bool cuda_compiled() const noexcept = 0;

  /// The launch's blocks.
  index_t blocks() const noexcept { return blocks_; }
  /// The kernel's type, which names it in traces.
  std::type_info const& kernel_type() const noexcept { return *kernel_; }

 private:
  index_t blocks_;
  std::type_info const* kernel_;
};

}  // namespace detail
}  // namespace strata
