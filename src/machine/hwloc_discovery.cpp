// Host discovery with hwloc (Phalanx §III-A: "a NUMA-aware runtime might present the
// CPU's storage as one memory per NUMA domain" — Strata does).
#include <strata/error.hpp>

#include "machine/discovery_parts.hpp"

#include <fmt/format.h>
#include <hwloc.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include <unistd.h>

namespace strata::detail {
namespace {

struct topology_deleter {
  void operator()(hwloc_topology* t) const noexcept { hwloc_topology_destroy(t); }
};
using topology_ptr = std::unique_ptr<hwloc_topology, topology_deleter>;

[[noreturn]] void hwloc_failed(char const* call, std::string const& detail = {}) {
  throw backend_error(
      fmt::format("hwloc: {} failed{}{}", call, detail.empty() ? "" : ": ", detail));
}

// A process bound to some CPUs (taskset, mpirun --bind-to, a batch scheduler) owns only
// those: the machine it sees is restricted to them, so that "all processors" means what
// the process may use (and the PU count equals `nproc`).
void restrict_to_binding(hwloc_topology_t topo) {
  hwloc_bitmap_t bound = hwloc_bitmap_alloc();
  if (hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(bound) &&
      !hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(topo), bound) &&
      hwloc_topology_restrict(topo, bound, HWLOC_RESTRICT_FLAG_ADAPT_IO) != 0) {
    hwloc_bitmap_free(bound);
    hwloc_failed("hwloc_topology_restrict",
                 "could not restrict the machine to this process's CPUs");
  }
  hwloc_bitmap_free(bound);
}

// One of several MPI ranks on this node, none of them bound (Open MPI binds nothing when
// it oversubscribes; a user may ask for no binding): left alone every rank would start a
// worker per PU of the node, L ranks x P workers on P PUs. Each rank takes its share
// instead, as `--bind-to core` would give it: P / L consecutive PUs (cores stay together),
// or, with more ranks than PUs, PU r mod P. STRATA_SHARE_NODE=0 keeps the whole node.
int env_int(char const* name) {
  char const* v = std::getenv(name);
  if (!v || !*v) return -1;
  char* end = nullptr;
  long const x = std::strtol(v, &end, 10);
  return *end || x < 0 || x > 1 << 20 ? -1 : static_cast<int>(x);
}

void share_node_among_ranks(hwloc_topology_t topo) {
  if (char const* v = std::getenv("STRATA_SHARE_NODE")) {
    std::string const s(v);
    if (s == "0") return;
    if (s != "1")
      throw config_error(fmt::format(
          "STRATA_SHARE_NODE=\"{}\": expected 1 (each MPI rank on a node takes its share of "
          "its PUs, the default) or 0 (every rank sees the whole node)",
          s));
  }
  // Open MPI's and MPICH's (Hydra's) names for the ranks on this node.
  int rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK"), size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (rank < 0 || size < 0) {
    rank = env_int("MPI_LOCALRANKID");
    size = env_int("MPI_LOCALNRANKS");
  }
  if (size < 2 || rank < 0 || rank >= size) return;
  hwloc_bitmap_t bound = hwloc_bitmap_alloc();
  bool const whole = hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) != 0 ||
                     hwloc_bitmap_iszero(bound) ||
                     hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(topo), bound);
  hwloc_bitmap_free(bound);
  if (!whole) return;  // bound by the launcher or the user: restrict_to_binding did it
  int const pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  if (pus < 2) return;
  hwloc_bitmap_t share = hwloc_bitmap_alloc();
  int first = 0, last = 0;  // [first, last) in logical PU order
  if (size <= pus) {
    first = static_cast<int>(static_cast<long>(rank) * pus / size);
    last = static_cast<int>(static_cast<long>(rank + 1) * pus / size);
  } else {
    first = rank % pus;
    last = first + 1;
  }
  for (int k = first; k < last; ++k)
    hwloc_bitmap_or(share, share,
                    hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, static_cast<unsigned>(k))->cpuset);
  int const rc = hwloc_topology_restrict(topo, share, HWLOC_RESTRICT_FLAG_ADAPT_IO);
  hwloc_bitmap_free(share);
  if (rc != 0)
    hwloc_failed("hwloc_topology_restrict",
                 "could not restrict the machine to this rank's share of the node");
}

topology_ptr load_topology(machine_options const& options, bool io) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) hwloc_failed("hwloc_topology_init");
  topology_ptr topo(raw);
  auto const& spec = options.topology;
  auto bad_spec = [&](std::string const& what) {
    throw config_error(
        fmt::format("{}=\"{}\": {}; expected \"synthetic:<hwloc synthetic description>\" (e.g. "
                    "\"synthetic:pack:2 numa:1 core:4 pu:2\") or \"xml:<file exported by lstopo>\"",
                    options.topology_source, spec, what));
  };
  if (spec.rfind("synthetic:", 0) == 0) {
    if (hwloc_topology_set_synthetic(raw, spec.c_str() + 10) != 0)
      bad_spec("hwloc rejected the synthetic description");
  } else if (spec.rfind("xml:", 0) == 0) {
    if (hwloc_topology_set_xml(raw, spec.c_str() + 4) != 0)
      bad_spec("hwloc could not read that XML file");
  } else if (!spec.empty()) {
    bad_spec("unknown topology source");
  }
  // Instruction caches would double every cache level in the tree without telling a
  // program anything about where its data lives.
  hwloc_topology_set_icache_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_NONE);
  // PCI devices (GPUs, NICs) and the bridges above them, for their locality; they carry
  // no places of their own (info_of). Only when the caller places GPUs by them: the PCI
  // scan (hwloc's pci plugin, libpciaccess) costs time at every start and leaves
  // allocations of its own that leak checkers report.
  if (io) hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(raw) != 0) {
    if (!spec.empty()) bad_spec("hwloc could not load it");
    hwloc_failed("hwloc_topology_load");
  }
  if (spec.empty()) {
    restrict_to_binding(raw);
    share_node_among_ranks(raw);
  }
  return topo;
}

std::optional<place_info> info_of(hwloc_obj_t obj) {
  place_info info;
  info.os_index = obj->os_index == HWLOC_UNKNOWN_INDEX ? -1 : static_cast<int>(obj->os_index);
  auto logical = std::to_string(obj->logical_index);
  switch (obj->type) {
    case HWLOC_OBJ_PACKAGE:
      info.type = place_type::package;
      info.name = "Package " + logical;
      break;
    case HWLOC_OBJ_DIE:
      info.type = place_type::die;
      info.name = "Die " + logical;
      break;
    case HWLOC_OBJ_GROUP:
      info.type = place_type::group;
      info.name = "Group " + logical;
      break;
    case HWLOC_OBJ_L1CACHE:
    case HWLOC_OBJ_L2CACHE:
    case HWLOC_OBJ_L3CACHE:
    case HWLOC_OBJ_L4CACHE:
    case HWLOC_OBJ_L5CACHE:
      info.type = place_type::cache;
      info.cache_level = static_cast<std::uint8_t>(obj->attr->cache.depth);
      info.capacity = obj->attr->cache.size;
      info.name = fmt::format("L{}{} {}", obj->attr->cache.depth,
                              obj->attr->cache.type == HWLOC_OBJ_CACHE_DATA ? "d" : "", logical);
      info.attributes.emplace_back("line_size", std::to_string(obj->attr->cache.linesize));
      break;
    case HWLOC_OBJ_CORE:
      info.type = place_type::core;
      info.name = "Core " + logical;
      break;
    case HWLOC_OBJ_PU:
      info.type = place_type::pu;
      info.name = "PU " + logical;
      break;
    case HWLOC_OBJ_NUMANODE:
      info.type = place_type::host_memory;
      info.name = "NUMA " + logical;
      info.capacity = obj->attr->numanode.local_memory;
      break;
    default:
      return std::nullopt;  // I/O, Misc and memory-side caches carry no places
  }
  return info;
}

void add_memories(machine_builder& b, machine_builder::node_id at, hwloc_obj_t obj) {
  // Memory children may sit below memory-side caches; NUMA nodes are what we keep.
  for (auto m = obj->memory_first_child; m; m = m->next_sibling) {
    if (m->type == HWLOC_OBJ_NUMANODE)
      b.add(at, *info_of(m));
    else
      add_memories(b, at, m);
  }
}

// `placed` maps each hwloc object to the place that stands for it (its own, or for a
// filtered-out level the place its children were lifted to).
void add_children(machine_builder& b, machine_builder::node_id at, hwloc_obj_t obj,
                  std::map<hwloc_obj_t, machine_builder::node_id>& placed) {
  placed[obj] = at;
  add_memories(b, at, obj);
  for (auto c = obj->first_child; c; c = c->next_sibling) {
    if (auto info = info_of(c)) {
      auto id = b.add(at, std::move(*info));
      add_children(b, id, c, placed);
    } else {
      add_children(b, at, c, placed);  // a filtered-out level: lift its children
    }
  }
}

// Each PCI device's locality: its first non-I/O ancestor (the object whose CPUs and NUMA
// node are nearest to it), as the place that stands for that object.
std::vector<pci_locality> pci_localities(
    hwloc_topology_t topo, std::map<hwloc_obj_t, machine_builder::node_id> const& placed,
    machine_builder::node_id root) {
  std::vector<pci_locality> out;
  for (auto dev = hwloc_get_next_pcidev(topo, nullptr); dev;
       dev = hwloc_get_next_pcidev(topo, dev)) {
    auto parent = root;
    for (auto a = hwloc_get_non_io_ancestor_obj(topo, dev); a; a = a->parent)
      if (auto it = placed.find(a); it != placed.end()) {
        parent = it->second;
        break;
      }
    auto const& pci = dev->attr->pcidev;
    out.push_back({pci.domain, pci.bus, pci.dev, parent});
  }
  return out;
}

}  // namespace

machine_builder discover_host(machine_options const& options, std::vector<pci_locality>* pci) {
  auto topo = load_topology(options, pci != nullptr);
  auto root = hwloc_get_root_obj(topo.get());
  place_info info{.type = place_type::machine, .isa = isa::host, .name = "Machine"};
  if (auto host = hwloc_obj_get_info_by_name(root, "HostName"))
    info.attributes.emplace_back("hostname", host);
  auto package = hwloc_get_obj_by_type(topo.get(), HWLOC_OBJ_PACKAGE, 0);
  if (auto cpu = hwloc_obj_get_info_by_name(package ? package : root, "CPUModel"))
    info.attributes.emplace_back("cpu_model", cpu);
  if (!options.topology.empty()) info.attributes.emplace_back("topology", options.topology);
  // Some virtual machines give their NUMA nodes less memory than the OS has in all;
  // keeping the OS figure lets `strata info` show both instead of hiding the gap.
  if (auto pages = sysconf(_SC_PHYS_PAGES); options.topology.empty() && pages > 0)
    info.attributes.emplace_back(
        "os_memory_bytes", std::to_string(static_cast<std::uint64_t>(pages) *
                                          static_cast<std::uint64_t>(sysconf(_SC_PAGE_SIZE))));
  machine_builder b(std::move(info));
  std::map<hwloc_obj_t, machine_builder::node_id> placed;
  add_children(b, b.root(), root, placed);
  if (pci) *pci = pci_localities(topo.get(), placed, b.root());
  return b;
}

}  // namespace strata::detail
