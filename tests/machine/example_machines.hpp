// Machines built by hand for deterministic tests of the place tree.
#pragma once

#include <strata/machine/place.hpp>

#include <string>

namespace strata::test {

// Phalanx Fig. 1a: two 4-core CPUs, each with its memory, and two GPUs with 7 and 14 SMs,
// each with its memory.
inline place phalanx_fig1() {
  machine_builder b({.type = place_type::machine, .name = "Machine"});
  for (int p = 0; p < 2; ++p) {
    auto pkg =
        b.add(b.root(),
              {.type = place_type::package, .name = "Package " + std::to_string(p), .os_index = p});
    b.add(pkg, {.type = place_type::host_memory,
                .name = "NUMA " + std::to_string(p),
                .os_index = p,
                .capacity = 64ull << 30});
    for (int c = 0; c < 4; ++c) {
      auto core =
          b.add(pkg, {.type = place_type::core, .name = "Core " + std::to_string(4 * p + c)});
      b.add(core, {.type = place_type::pu,
                   .name = "PU " + std::to_string(4 * p + c),
                   .os_index = 4 * p + c});
    }
  }
  int const sms[2] = {7, 14};
  for (int g = 0; g < 2; ++g) {
    auto name = "cuda" + std::to_string(g);
    auto dev = b.add(b.root(), {.type = place_type::device, .isa = isa::cuda, .name = name});
    b.add(dev, {.type = place_type::device_memory,
                .isa = isa::cuda,
                .name = name + " memory",
                .capacity = 16ull << 30});
    for (int s = 0; s < sms[g]; ++s)
      b.add(dev, {.type = place_type::compute_unit,
                  .isa = isa::cuda,
                  .name = name + " SM " + std::to_string(s)});
  }
  return b.build();
}

inline place find(place const& root, std::string const& name) {
  for (auto const& p : root.descendants())
    if (p.name() == name) return p;
  return {};
}

}  // namespace strata::test
