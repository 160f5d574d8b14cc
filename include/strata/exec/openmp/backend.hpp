// The openmp backend (Phalanx §IV-B): blocks are the iterations of an OpenMP worksharing
// loop, so Strata kernels and the user's own OpenMP code share one runtime and nest the
// way OpenMP nests. The launch has finished when it returns.
#pragma once

#if !defined(_OPENMP)
#error \
    "strata/exec/openmp/backend.hpp needs OpenMP: compile with -fopenmp (linking strata::strata adds it)"
#endif

#include <strata/exec/backend.hpp>
#include <strata/exec/cpu/run.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/trace.hpp>

#include <omp.h>

#include <atomic>
#include <exception>

namespace strata::openmp {

struct backend {
  static constexpr backend_id id = backend_id::openmp;

  template <std::size_t D, class P, class Kernel, class Args>
  static event launch(detail::placement const& where, shape<D, P> const& s, Kernel const& k,
                      Args& args) {
    detail::check_cpu_shape(s, "openmp");
    trace::span traced(trace::enabled() ? trace::detail::type_name(typeid(Kernel)) : "", "kernel",
                       "openmp");
    index_t const blocks = s.blocks();
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    // Exceptions must not leave a parallel region: the first is kept and the event
    // carries it.
#pragma omp parallel num_threads(where.threads)
    {
      // schedule(static) by hand: one contiguous range of blocks per thread, as the raw
      // `omp parallel for` a user would write.
      index_t const nth = omp_get_num_threads();
      index_t const tid = omp_get_thread_num();
      // blocks * tid / nth without the overflow of blocks * tid.
      auto split = [&](index_t t) { return blocks / nth * t + blocks % nth * t / nth; };
      index_t const b0 = split(tid);
      index_t const b1 = split(tid + 1);
      Args local = args;  // each thread its own copy of the arguments
      try {
        if (b0 < b1) detail::run_blocks(s, b0, b1, k, local);
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
    return failed ? event::failed(error) : event::completed();
  }
};

}  // namespace strata::openmp
