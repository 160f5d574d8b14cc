// The sim backend: kernels launched on an emulated sim device run on that device's own
// worker threads (its compute units), one kernel at a time per device, in the order they
// arrive; the device's `speed` stretches their duration (speed 0.5 takes twice as long).
// It is an emulator for testing and planning multi-device code, not a model of a GPU.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/cpu/run.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/trace.hpp>

#include <functional>
#include <typeinfo>

namespace strata::detail {
/// Chunks per unit to cut a launch on sim device `device` into: 16 on a device slower than
/// the host, whose units pace themselves between chunks (src/exec/sim/device.cpp; smaller
/// chunks spread its CPU more evenly over the kernel's modeled time: ripple-scaling weak,
/// 8 devices on 2 cores, 0.79-0.81 with 4 per unit, 0.88-0.95 with 16), else 4 (each
/// chunk costs a little: a 2-device halo exchange at 32 KiB rows lost 2-5% with 16).
index_t sim_chunks_per_unit(int device);
/// Queues `chunks` chunks of `body` on sim device `device`; returns its completion.
/// `name` (static storage) names the kernel in the trace.
event sim_launch(int device, index_t chunks, std::function<void(index_t)> body,
                 char const* name = "kernel");
}  // namespace strata::detail

namespace strata::sim {

struct backend {
  static constexpr backend_id id = backend_id::sim;

  template <std::size_t D, class P, class Kernel, class Args>
  static event launch(detail::placement const& where, shape<D, P> const& s, Kernel const& k,
                      Args& args) {
    detail::check_cpu_shape(s, "sim");
    detail::chunking plan(s.blocks(), where.threads, detail::sim_chunks_per_unit(where.device));
    // The kernel's type names its span on the sim unit's lane, as on the CPU backends.
    return detail::sim_launch(
        where.device, plan.chunks, detail::chunk_body(s, k, args, plan),
        trace::enabled() ? trace::detail::type_name(typeid(Kernel)) : "kernel");
  }
};

}  // namespace strata::sim
