// The openmp backend (Phalanx §IV-B): blocks are split over the threads of an OpenMP
// parallel region, so Strata kernels and the user's own OpenMP code share one runtime and
// nest the way OpenMP nests. The launch has finished when it returns.
//
// The parallel region is opened by libstrata (src/exec/openmp/parallel.cpp, built with
// OpenMP), not in this header: the header compiles the same way in every translation unit,
// with or without -fopenmp, and under nvcc. A backend that existed only in -fopenmp units
// would make one `launch<...>` instantiation differ between units, and the linker keeps
// one of them (issue 13, "one definition per template"). The cost is one indirect call per
// thread of the region.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/cpu/run.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/first_error.hpp>
#include <strata/exec/trace.hpp>

#include <atomic>
#include <exception>

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

  template <std::size_t D, class P, class Kernel, class Args>
  static event launch(detail::placement const& where, shape<D, P> const& s, Kernel const& k,
                      Args& args) {
    detail::check_cpu_shape(s, "openmp");
    trace::span traced(trace::enabled() ? trace::detail::type_name(typeid(Kernel)) : "", "kernel",
                       "openmp");
    struct region {
      shape<D, P> const& s;
      Kernel const& k;
      Args& args;
      detail::first_error error;
    } r{s, k, args, {}};
    // Exceptions must not leave a parallel region: the first is kept and the event
    // carries it.
    detail::openmp_body body = [](void* ctx, int tid, int nth) noexcept {
      auto& rg = *static_cast<region*>(ctx);
      index_t const blocks = rg.s.blocks();
      // schedule(static) by hand: one contiguous range of blocks per thread, as the raw
      // `omp parallel for` a user would write. blocks * t / nth without the overflow.
      auto split = [&](index_t t) {
        return blocks / nth * t + blocks % nth * t / static_cast<index_t>(nth);
      };
      index_t const b0 = split(tid);
      index_t const b1 = split(tid + 1);
      rg.error.run([&] {
        Args local = rg.args;  // each thread its own copy of the arguments
        if (b0 < b1) detail::run_blocks(rg.s, b0, b1, rg.k, local);
      });
    };
    detail::openmp_parallel(where.threads, body, &r);
    auto const error = r.error.get();
    return error ? event::failed(error) : event::completed();
  }
};

}  // namespace openmp
}  // namespace strata
