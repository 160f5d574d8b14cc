// Building the place tree of the machine this process runs on.
#pragma once

#include <strata/machine/place.hpp>

#include <string>
#include <vector>

namespace strata {

struct machine_options {
  /// Empty for this machine; "synthetic:<hwloc synthetic description>" (e.g.
  /// "synthetic:pack:2 numa:1 l3:1 core:4 pu:2") or "xml:<file>" (an lstopo --of xml
  /// export) to describe another one, for tests and planning.
  std::string topology;
  /// Emulated devices in STRATA_SIM_DEVICES syntax (see sim_config.hpp); empty for none.
  std::string sim_devices;
  /// Ask the CUDA runtime for GPUs (builds with CUDA only).
  bool cuda = true;
  /// Where `topology` and `sim_devices` came from, named in error messages.
  std::string topology_source = "STRATA_TOPOLOGY";
  std::string sim_devices_source = "STRATA_SIM_DEVICES";
};

struct discovered_machine {
  place machine;
  /// One line per thing worth knowing that is not an error, e.g. "no CUDA device: ...".
  std::vector<std::string> notes;
};

/// Discovers the host with hwloc (machine → package → NUMA memory → caches → cores → PUs),
/// CUDA GPUs when built with CUDA and a device answers (device → SMs + device memory), and
/// the configured sim devices (device → compute units + device memory). Throws
/// `strata::config_error` for a malformed option and `strata::backend_error` when hwloc
/// fails.
discovered_machine discover_machine(machine_options const& options = {});

}  // namespace strata
