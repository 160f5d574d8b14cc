// The pieces discover_machine() assembles; one file per source of places.
#pragma once

#include <strata/machine/discovery.hpp>
#include <strata/machine/sim_config.hpp>

#include <string>
#include <vector>

namespace strata::detail {

/// The host hierarchy from hwloc, as a builder whose root is the machine.
machine_builder discover_host(machine_options const& options);

/// Adds one device place per CUDA GPU under the root, or a note saying why there is none.
void discover_cuda(machine_builder& builder, std::vector<std::string>& notes);

/// Adds one device place per sim device under the root.
void add_sim_devices(machine_builder& builder, std::vector<sim_device_spec> const& devices);

}  // namespace strata::detail
