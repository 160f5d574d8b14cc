#include <strata/exec/sim/speed.hpp>

#include <strata/error.hpp>
#include <strata/machine/sim_config.hpp>

#include <fmt/format.h>

#include "exec/exec_state.hpp"
#include "exec/sim/device.hpp"

#include <cmath>
#include <string>

namespace strata::sim {

namespace {
detail::sim_device& device_of(place const& p, char const* what) {
  auto& exec = detail::current_exec();
  int const index = exec.sims.of_place(p);
  if (index < 0)
    throw invalid_argument(std::string(what) + ": place " + p.name() +
                           " is not in a sim device; expected a sim device or a place inside one");
  return exec.sims.device(index);
}
}  // namespace

double speed(place const& device) {
  return device_of(device, "sim::speed").speed();
}

void set_speed(place const& device, double speed) {
  if (!(speed >= sim_min_speed) || !std::isfinite(speed))
    throw invalid_argument("sim::set_speed: speed " + fmt::format("{:g}", speed) +
                           "; expected a finite factor of at least 1e-6");
  device_of(device, "sim::set_speed").set_speed(speed);
}

}  // namespace strata::sim
