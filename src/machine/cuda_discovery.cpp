// CUDA GPUs as device places: SMs as processors, device memory attached (Phalanx Fig. 1),
// each under the host place of its PCI locality (hwloc), not the machine root.
// Compiled by the host compiler against cudart; only in builds with STRATA_ENABLE_CUDA.
#include "machine/discovery_parts.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <string>

namespace strata::detail {

int count_cuda_devices(std::vector<std::string>& notes) {
  int count = 0;
  if (auto err = cudaGetDeviceCount(&count); err != cudaSuccess) {
    // No driver, an old driver or no device: GPUs are simply absent (issue: one info line).
    // Without any NVIDIA driver CUDA says "driver version is insufficient", which reads as
    // an old driver: the note says what it usually means first.
    notes.push_back(
        fmt::format("no CUDA device: {}cudaGetDeviceCount: {}",
                    err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice
                        ? "no NVIDIA GPU or driver found (or the driver is older than CUDA " +
                              std::to_string(CUDART_VERSION / 1000) + "." +
                              std::to_string(CUDART_VERSION % 1000 / 10) + " needs); "
                        : std::string(),
                    cudaGetErrorString(err)));
    (void)cudaGetLastError();  // clear the sticky error for later CUDA use
    return 0;
  }
  if (count == 0) notes.emplace_back("no CUDA device: the CUDA runtime reports 0 devices");
  return count;
}

void discover_cuda(machine_builder& builder, std::vector<pci_locality> const& pci, int count,
                   std::vector<std::string>& notes) {
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (auto err = cudaGetDeviceProperties(&prop, d); err != cudaSuccess) {
      notes.push_back(fmt::format("CUDA device {} skipped: cudaGetDeviceProperties: {}", d,
                                  cudaGetErrorString(err)));
      continue;
    }
    auto name = "cuda" + std::to_string(d);
    place_info dev{
        .type = place_type::device,
        .isa = isa::cuda,
        .name = name,
        .os_index = d,
        .attributes = {{"model", prop.name},
                       {"compute_capability", fmt::format("{}.{}", prop.major, prop.minor)},
                       {"pci_bus", fmt::format("{:04x}:{:02x}:{:02x}", prop.pciDomainID,
                                               prop.pciBusID, prop.pciDeviceID)}}};
    auto const parent = pci_parent(pci, static_cast<unsigned>(prop.pciDomainID),
                                   static_cast<unsigned>(prop.pciBusID),
                                   static_cast<unsigned>(prop.pciDeviceID), builder.root());
    auto id = builder.add(parent, std::move(dev));
    builder.add(id, {.type = place_type::device_memory,
                     .isa = isa::cuda,
                     .name = name + " memory",
                     .os_index = d,
                     .capacity = prop.totalGlobalMem});
    for (int sm = 0; sm < prop.multiProcessorCount; ++sm)
      builder.add(id, {.type = place_type::compute_unit,
                       .isa = isa::cuda,
                       .name = name + " SM " + std::to_string(sm),
                       .os_index = sm});
  }
}

}  // namespace strata::detail
