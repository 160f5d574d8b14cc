// The pieces discover_machine() assembles; one file per source of places.
#pragma once

#include <strata/machine/discovery.hpp>
#include <strata/machine/sim_config.hpp>

#include <string>
#include <vector>

namespace strata::detail {

/// Where a PCI device sits in the host hierarchy: the place (a package, a group, the
/// machine) holding the NUMA node and processors hwloc reports as its locality.
struct pci_locality {
  unsigned domain, bus, device;
  machine_builder::node_id parent;
};

/// The host hierarchy from hwloc, as a builder whose root is the machine; `pci`, if given,
/// receives the locality of every PCI device hwloc found.
machine_builder discover_host(machine_options const& options,
                              std::vector<pci_locality>* pci = nullptr);

/// The place a device at PCI address domain:bus:device hangs from: its locality, or
/// `root` when hwloc did not see it (no PCI discovery, a container without /sys).
inline machine_builder::node_id pci_parent(std::vector<pci_locality> const& pci, unsigned domain,
                                           unsigned bus, unsigned device,
                                           machine_builder::node_id root) {
  for (auto const& p : pci)
    if (p.domain == domain && p.bus == bus && p.device == device) return p.parent;
  return root;
}

/// How many CUDA GPUs the runtime reports; 0, with a note saying why, when there are
/// none. Asked before the host scan: only GPUs need hwloc's PCI scan, which reads every
/// device's configuration space (a runtime's start on a VM: 26 ms with it, 7 without).
int count_cuda_devices(std::vector<std::string>& notes);

/// Adds one device place per CUDA GPU (`count`, from count_cuda_devices), under the place
/// of its PCI locality (pci_parent) so that its nearest host memory is its own socket's.
void discover_cuda(machine_builder& builder, std::vector<pci_locality> const& pci, int count,
                   std::vector<std::string>& notes);

/// Adds one device place per sim device under the root.
void add_sim_devices(machine_builder& builder, std::vector<sim_device_spec> const& devices);

}  // namespace strata::detail
