// The serial backend: every block on the calling thread, in order (Alpaka's sequential
// accelerator). The launch has finished when it returns; its event is complete.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/cpu/run.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/trace.hpp>

#include <exception>

namespace strata::serial {

struct backend {
  static constexpr backend_id id = backend_id::serial;

  template <std::size_t D, class P, class Kernel, class Args>
  static event launch(detail::placement const&, shape<D, P> const& s, Kernel const& k, Args& args) {
    detail::check_cpu_shape(s, "serial");
    trace::span traced(trace::enabled() ? trace::detail::type_name(typeid(Kernel)) : "", "kernel",
                       "serial");
    try {
      detail::run_blocks(s, 0, s.blocks(), k, args);
    } catch (...) {
      return event::failed(std::current_exception());
    }
    return event::completed();
  }
};

}  // namespace strata::serial
