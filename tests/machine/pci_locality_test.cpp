// Issue 13, item 9: a GPU hangs from the host place of its PCI locality (hwloc), so its
// nearest host memory is its own socket's. Tested on an XML topology of two sockets
// with a GPU behind socket 1 (tests/machine/data/two_sockets_gpu.xml); the CUDA query
// of the GPU's PCI address is the only part left to a GPU machine.
#include <strata/machine/discovery.hpp>

#include <gtest/gtest.h>

#include "machine/discovery_parts.hpp"

namespace strata {
namespace {

std::string const topology = std::string("xml:") + STRATA_TEST_DATA + "/two_sockets_gpu.xml";

TEST(PciLocality, GpuBehindSocketOneGetsItsNumaNode) {
  machine_options o;
  o.topology = topology;
  std::vector<detail::pci_locality> pci;
  auto b = detail::discover_host(o, &pci);
  ASSERT_EQ(pci.size(), 1u) << "hwloc kept no PCI device of " << topology;
  EXPECT_EQ(pci[0].domain, 0u);
  EXPECT_EQ(pci[0].bus, 0x81u);
  EXPECT_EQ(pci[0].device, 0u);
  // What discover_cuda does with a GPU's cudaDeviceProp pciDomainID/pciBusID/pciDeviceID.
  auto parent = detail::pci_parent(pci, 0, 0x81, 0, b.root());
  b.add(parent, {.type = place_type::device, .isa = isa::sim, .name = "gpu"});
  auto m = b.build();
  auto devices = m.descendants(place_type::device);
  ASSERT_EQ(devices.size(), 1u);
  auto const& gpu = devices[0];
  ASSERT_TRUE(gpu.parent());
  EXPECT_EQ(gpu.parent()->name(), "Package 1");
  auto memories = gpu.memories_above();
  ASSERT_FALSE(memories.empty());
  EXPECT_EQ(memories[0].name(), "NUMA 1");
}

TEST(PciLocality, UnknownAddressesHangFromTheRoot) {
  machine_options o;
  o.topology = topology;
  std::vector<detail::pci_locality> pci;
  auto b = detail::discover_host(o, &pci);
  EXPECT_EQ(detail::pci_parent(pci, 0, 0x82, 0, b.root()), b.root());
  EXPECT_EQ(detail::pci_parent({}, 0, 0x81, 0, b.root()), b.root());
}

}  // namespace
}  // namespace strata
