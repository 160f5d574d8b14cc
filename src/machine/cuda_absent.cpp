// Builds without CUDA have no GPU places; discovery says so once.
#include "machine/discovery_parts.hpp"

namespace strata::detail {

int count_cuda_devices(std::vector<std::string>& notes) {
  notes.emplace_back("no CUDA devices: this libstrata was built without CUDA");
  return 0;
}

void discover_cuda(machine_builder&, std::vector<pci_locality> const&, int,
                   std::vector<std::string>&) {}

}  // namespace strata::detail
