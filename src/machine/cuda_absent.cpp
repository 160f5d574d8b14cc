// Builds without CUDA have no GPU places; discovery says so once.
#include "machine/discovery_parts.hpp"

namespace strata::detail {

void discover_cuda(machine_builder&, std::vector<pci_locality> const&,
                   std::vector<std::string>& notes) {
  notes.emplace_back("no CUDA devices: this libstrata was built without CUDA");
}

}  // namespace strata::detail
