#include "machine/discovery_parts.hpp"

namespace strata {

namespace detail {

void add_sim_devices(machine_builder& builder, std::vector<sim_device_spec> const& devices) {
  for (std::size_t d = 0; d < devices.size(); ++d) {
    auto const& spec = devices[d];
    auto name = "sim" + std::to_string(d);
    place_info dev{.type = place_type::device,
                   .isa = isa::sim,
                   .name = name,
                   .os_index = static_cast<std::int32_t>(d),
                   .link = {spec.bandwidth, spec.latency},
                   .speed = spec.speed,
                   .attributes = {{"emulated", "true"}, {"config", to_string(spec)}}};
    auto id = builder.add(builder.root(), std::move(dev));
    // Memory first, as hwloc lists a group's memory before its other children.
    builder.add(id, {.type = place_type::device_memory,
                     .isa = isa::sim,
                     .name = name + " memory",
                     .os_index = static_cast<std::int32_t>(d),
                     .capacity = spec.memory});
    for (std::uint32_t u = 0; u < spec.units; ++u)
      builder.add(id, {.type = place_type::compute_unit,
                       .isa = isa::sim,
                       .name = name + " CU " + std::to_string(u),
                       .os_index = static_cast<std::int32_t>(u)});
  }
}

}  // namespace detail

discovered_machine discover_machine(machine_options const& options) {
  // Parse everything before touching hardware, so bad input fails fast and alone.
  auto sims = parse_sim_devices(options.sim_devices, options.sim_devices_source);
  discovered_machine out;
  std::vector<detail::pci_locality> pci;
  // GPUs hang from the host place of their PCI locality; without a GPU (CUDA not built,
  // not asked for, or no device) nothing needs the PCI scan.
  int const gpus = options.cuda ? detail::count_cuda_devices(out.notes) : 0;
  auto builder = detail::discover_host(options, gpus > 0 ? &pci : nullptr);
  if (gpus > 0) detail::discover_cuda(builder, pci, gpus, out.notes);
  detail::add_sim_devices(builder, sims);
  out.machine = builder.build();
  return out;
}

}  // namespace strata
