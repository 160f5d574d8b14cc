// How long a CUDA device's completion worker polls a work's marker before it sleeps in the
// driver (streams.cpp). Read once when the runtime starts (exec_state::cuda_spin), in
// every build, so that a bad STRATA_CUDA_SPIN_US is the same clear error on a machine with
// or without a GPU.
#pragma once

#include <chrono>

namespace strata::detail::cuda {

/// STRATA_CUDA_SPIN_US in microseconds, spin::before_gpu_sleep when unset; throws config_error
/// naming the variable for anything but decimal digits worth 0..1000000 (0: sleep at once).
std::chrono::microseconds spin_window();

}  // namespace strata::detail::cuda
