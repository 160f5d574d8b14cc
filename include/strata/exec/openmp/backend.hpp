// The openmp backend (Phalanx §IV-B): blocks are split over the threads of an OpenMP
// parallel region, so Strata kernels and the user's own OpenMP code share one runtime and
// nest the way OpenMP nests. The launch has finished when it returns.
//
// The parallel region is opened by libstrata (src/exec/openmp/parallel.cpp, built with
// OpenMP), not in a header: every translation unit compiles `launch<...>` the same way,
// with or without -fopenmp, and under nvcc. A backend that existed only in -fopenmp units
// would make one `launch<...>` instantiation differ between units, and the linker keeps
// one of them (issue 13, "one definition per template"). The cost is two indirect calls
// per thread of the region (the region's body, the kernel's erased loop).
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/kernel_body.hpp>

namespace strata {

namespace detail {

/// The body of one thread of an OpenMP region: `thread` of `threads`. Must not throw.
using openmp_body = void (*)(void* ctx, int thread, int threads) noexcept;

/// Runs `body` on every thread of an OpenMP parallel region of `threads` threads (OpenMP
/// may give fewer, e.g. when nested in a user's region) and returns when all have.
/// Throws not_supported if this libstrata was built without OpenMP.
void openmp_parallel(int threads, openmp_body body, void* ctx);

/// Whether this libstrata was built with the openmp backend.
bool openmp_built() noexcept;

}  // namespace detail

namespace openmp {

struct backend {
  static constexpr backend_id id = backend_id::openmp;

  /// Runs the blocks of `k` over the threads of an OpenMP parallel region, one contiguous
  /// range per thread (schedule(static), as the `omp parallel for` a user would write),
  /// each thread with a copy of the arguments of its own; the first exception fails the
  /// event (src/exec/cpu/launch.cpp).
  static event launch(detail::placement const& where, detail::inline_kernel const& k);
};

}  // namespace openmp
}  // namespace strata
