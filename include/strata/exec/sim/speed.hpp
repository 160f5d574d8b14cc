// The compute speed of an emulated sim device, read and changed while a program runs: a
// device that slows down (thermal throttling, a co-tenant) is what dynamic load balancing
// must react to (hybrid-2d-stencil-scheme §9), and sim devices let a test or benchmark
// make that happen on purpose.
#pragma once

#include <strata/machine/place.hpp>

namespace strata::sim {

/// The speed factor of the sim device at or above `device` now: its configured `speed`
/// (place::info().speed) until set_speed changes it. invalid_argument for a place that is
/// not in a sim device; strata::error without a live runtime.
double speed(place const& device);

/// Sets the speed factor of the sim device at or above `device` (finite, at least
/// sim_min_speed = 1e-6; as the `speed` key: below 1 a kernel's host time is stretched by
/// 1 / speed, above 1 takes real time); invalid_argument otherwise. Thread-safe, callable
/// while kernels run: each kernel is timed with the speed read when it finishes.
/// place::info().speed keeps the configured value.
void set_speed(place const& device, double speed);

}  // namespace strata::sim
