#include "exec/cuda/spin_window.hpp"

#include "exec/spin.hpp"
#include "machine/units.hpp"

#include <strata/error.hpp>

#include <cstdlib>
#include <string>

namespace strata::detail::cuda {

std::chrono::microseconds spin_window() {
  long us = static_cast<long>(spin::before_gpu_sleep.count());
  if (char const* v = std::getenv("STRATA_CUDA_SPIN_US")) {
    auto const parsed = parse_count(v, 0, 1000000);
    if (!parsed)
      throw config_error("STRATA_CUDA_SPIN_US=\"" + std::string(v) +
                         "\": expected microseconds between 0 and 1000000 (how long a CUDA "
                         "device's completion worker polls before it sleeps)");
    us = *parsed;
  }
  return std::chrono::microseconds(us);
}

}  // namespace strata::detail::cuda
