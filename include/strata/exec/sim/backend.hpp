// The sim backend: kernels launched on an emulated sim device run on that device's own
// worker threads (its compute units), one kernel at a time per device, in the order they
// arrive; the device's `speed` stretches their duration (speed 0.5 takes twice as long).
// It is an emulator for testing and planning multi-device code, not a model of a GPU.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/kernel_body.hpp>
#include <strata/vec.hpp>

#include <memory>

namespace strata::detail {
/// Chunks per unit to cut a launch on sim device `device` into: 16 on a device slower than
/// the host, whose units pace themselves between chunks (src/exec/sim/device.cpp; smaller
/// chunks spread its CPU more evenly over the kernel's modeled time: ripple-scaling weak,
/// 8 devices on 2 cores, 0.79-0.81 with 4 per unit, 0.88-0.95 with 16), else 4 (each
/// chunk costs a little: a 2-device halo exchange at 32 KiB rows lost 2-5% with 16).
index_t sim_chunks_per_unit(int device);
}  // namespace strata::detail

namespace strata::sim {

struct backend {
  static constexpr backend_id id = backend_id::sim;

  /// Queues `body` on the sim device of `where`, cut into sim_chunks_per_unit chunks per
  /// unit; returns at once (src/exec/cpu/launch.cpp).
  static event launch(detail::placement const& where,
                      std::shared_ptr<detail::kernel_body const> body);
};

}  // namespace strata::sim
