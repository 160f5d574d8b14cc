// Choosing a memory for an allocation, and allocating in each space.
#include <strata/memory/allocate.hpp>
#include <strata/runtime.hpp>

#include "machine/units.hpp"
#include "memory/backends.hpp"
#include "memory/registry.hpp"

#include <fmt/format.h>
#include <hwloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

namespace strata {

std::string_view to_string(space_id s) noexcept {
  constexpr std::array names{"host", "pinned", "mapped", "sim", "cuda", "managed"};
  return names.at(static_cast<std::size_t>(s));
}

namespace detail {
namespace {

struct space_traits {
  place_type memory_type;
  strata::isa arch;
};

space_traits traits_of(space_id s) {
  switch (s) {
    case space_id::sim:
      return {place_type::device_memory, isa::sim};
    case space_id::cuda:
    case space_id::managed:
      return {place_type::device_memory, isa::cuda};
    default:
      return {place_type::host_memory, isa::host};
  }
}

bool matches(place const& m, space_id s) {
  auto t = traits_of(s);
  return m.type() == t.memory_type && m.isa() == t.arch;
}

std::string describe_space(space_id s) {
  switch (s) {
    case space_id::sim:
      return "sim device memory";
    case space_id::cuda:
      return "CUDA device memory";
    case space_id::managed:
      return "CUDA device memory (for managed memory)";
    default:
      return "host memory (a NUMA node)";
  }
}

// Bytes in use per device memory (sim and CUDA have capacities the runtime enforces; host
// memory is the operating system's to refuse).
struct usage {
  std::mutex mutex;
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::uint64_t> used;
};
usage& the_usage() {
  static usage u;
  return u;
}

// Host memory bound to a NUMA node, through hwloc: large allocations only, where the node
// matters more than the cost of an mmap.
constexpr std::size_t bind_threshold = std::size_t{1} << 20;

hwloc_topology_t host_topology() {
  static hwloc_topology_t topo = [] {
    hwloc_topology_t t = nullptr;
    if (hwloc_topology_init(&t) != 0 || hwloc_topology_load(t) != 0) return hwloc_topology_t{};
    return t;
  }();
  return topo;
}

// Large host allocations ask for transparent huge pages (where the system leaves them to
// madvise, as Debian's default does): a 2-D stencil's column of padding or a transposing
// copy touches one 4 KiB page per cell, and each is a TLB miss (the Eikonal solve's
// column edges, 1024 rows of SoA doubles: 52 us a pass with 4 KiB pages). Only the
// 2 MiB-aligned interior can be backed; at 8 MiB and up the rounding costs little.
constexpr std::size_t huge_page = std::size_t{2} << 20;
constexpr std::size_t huge_page_threshold = std::size_t{8} << 20;

// STRATA_HUGE_PAGES=0 turns the advice off (1, the default: on). Read once; a bad value
// is a config_error at the first large allocation.
bool huge_pages_wanted() {
  static bool const on = [] {
    char const* v = std::getenv("STRATA_HUGE_PAGES");
    if (!v) return true;
    std::string const s(v);
    if (s == "0") return false;
    if (s == "1") return true;
    throw config_error("STRATA_HUGE_PAGES=\"" + s +
                       "\": expected 1 (large host allocations ask for transparent huge "
                       "pages: the default) or 0 (they do not)");
  }();
  return on;
}

void advise_huge_pages(void* p, std::size_t bytes) noexcept {
#if defined(MADV_HUGEPAGE)
  if (!p || bytes < huge_page_threshold) return;
  auto const begin = (reinterpret_cast<std::uintptr_t>(p) + huge_page - 1) / huge_page * huge_page;
  auto const end = (reinterpret_cast<std::uintptr_t>(p) + bytes) / huge_page * huge_page;
  // Advice only: a kernel without THP refuses it, and the memory works as before.
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

void* host_alloc(place const& numa, std::size_t bytes, std::size_t alignment, bool bind,
                 std::function<void(void*, std::size_t)>& release) {
  // (The setting is read before anything is allocated: a bad value throws.)
  bool const huge = bytes >= huge_page_threshold && huge_pages_wanted();
  if (bind && bytes >= bind_threshold && numa.os_index() >= 0) {
    if (auto topo = host_topology()) {
      if (auto node =
              hwloc_get_numanode_obj_by_os_index(topo, static_cast<unsigned>(numa.os_index()))) {
        if (void* p = hwloc_alloc_membind(topo, bytes, node->nodeset, HWLOC_MEMBIND_BIND,
                                          HWLOC_MEMBIND_BYNODESET)) {
          release = [topo](void* q, std::size_t n) { hwloc_free(topo, q, n); };
          if (huge) advise_huge_pages(p, bytes);
          return p;
        }
      }
    }
  }
  // Large ones aligned to a huge page, so that all of them can be backed by huge pages.
  if (huge && alignment < huge_page) alignment = huge_page;
  std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, rounded);
  release = [](void* q, std::size_t) { std::free(q); };
  if (huge) advise_huge_pages(p, rounded);
  return p;
}

void* pinned_alloc(std::size_t bytes, std::function<void(void*, std::size_t)>& release) {
  if (void* p = cuda_pinned_alloc(bytes)) {
    release = [](void* q, std::size_t) { cuda_pinned_free(q); };
    return p;
  }
  // No CUDA device: page-aligned memory, locked where RLIMIT_MEMLOCK allows it.
  auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::size_t rounded = (bytes + page - 1) / page * page;
  void* p = std::aligned_alloc(page, rounded);
  if (!p) return nullptr;
  bool locked = mlock(p, rounded) == 0;
  release = [locked, rounded](void* q, std::size_t) {
    if (locked) munlock(q, rounded);
    std::free(q);
  };
  return p;
}

// The memory of `space` for an allocation at `where`: the place itself, the nearest
// above a processor, or the first in the subtree with room.
place choose_memory(place const& where, space_id space, std::size_t bytes,
                    std::uint64_t machine_id) {
  if (where.kind() == place_kind::memory) {
    if (!matches(where, space))
      throw invalid_argument(fmt::format("allocate: '{}' is a {} {} memory; {} memory needs a {}",
                                         where.path(), to_string(where.isa()),
                                         to_string(where.type()), to_string(space),
                                         describe_space(space)));
    return where;
  }
  auto fits = [&](place const& m) {
    if (m.type() != place_type::device_memory || m.capacity() == 0) return true;
    auto& u = the_usage();
    std::lock_guard lock(u.mutex);
    return u.used[{machine_id, m.id()}] + bytes <= m.capacity();
  };
  place first;
  for (auto const& m :
       where.kind() == place_kind::processor ? where.memories_above() : where.memories()) {
    if (!matches(m, space)) continue;
    if (!first.valid()) first = m;
    if (fits(m)) return m;
  }
  if (!first.valid())
    for (auto const& m : where.memories_above())
      if (matches(m, space)) return m;
  if (first.valid()) return first;  // full: the capacity check reports it
  throw invalid_argument(
      fmt::format("allocate: no {} at or near '{}'; expected a place holding a {}",
                  describe_space(space), where.path(), describe_space(space)));
}

}  // namespace

std::uint64_t current_machine_key() {
  return std::hash<place>{}(runtime::current().machine());
}

std::atomic<void (*)(std::uint32_t, std::uint64_t)> device_release_fence{nullptr};

raw_allocation allocate_bytes(place const& where, std::size_t bytes, std::size_t alignment,
                              space_id space) {
  auto& rt = runtime::current();
  check_runtime_place(where, "allocate");
  if (space == space_id::mapped)
    throw invalid_argument("allocate: mapped memory comes from a file; use strata::map_file");
  // Rounded sizes must not wrap around: a request near SIZE_MAX is an error, not 0 bytes.
  std::size_t const rounded = round_up_checked(bytes, alignment, "allocate");
  // Device memory use is counted per runtime's machine (a later runtime starts afresh).
  std::uint64_t const machine_id = std::hash<place>{}(rt.machine());
  auto memory = choose_memory(where, space, bytes, machine_id);
  auto key = std::pair{machine_id, memory.id()};
  bool const accounted = memory.type() == place_type::device_memory && memory.capacity() > 0;
  if (accounted) {
    auto& u = the_usage();
    std::lock_guard lock(u.mutex);
    auto& used = u.used[key];
    if (bytes > memory.capacity() - used)
      throw out_of_memory(fmt::format(
          "allocate: {} do not fit in '{}': {} of its {} are in use; free memory or allocate "
          "elsewhere",
          detail::format_bytes(bytes), memory.path(), detail::format_bytes(used),
          detail::format_bytes(memory.capacity())));
    used += bytes;
  }
  // Until the allocation is recorded, a failure anywhere (an allocator that throws, a
  // bad_alloc while recording) gives the device capacity back.
  struct rollback {
    bool armed;
    std::pair<std::uint64_t, std::uint32_t> key;
    std::size_t bytes;
    ~rollback() {
      if (!armed) return;
      std::lock_guard lock(the_usage().mutex);
      the_usage().used[key] -= bytes;
    }
  } guard{accounted, key, bytes};
  std::function<void(void*, std::size_t)> release;
  void* p = nullptr;
  switch (space) {
    case space_id::host: {
      // Bind to the NUMA node only when the caller pointed at one (or there is only one
      // near `where`); at a wider place, first touch decides, as the OS would.
      bool specific = where.kind() == place_kind::memory;
      if (!specific) {
        int host_memories = 0;
        for (auto const& m :
             where.kind() == place_kind::processor ? where.memories_above() : where.memories())
          host_memories += matches(m, space_id::host);
        specific = host_memories == 1;
      }
      p = host_alloc(memory, bytes, alignment, specific && rt.effective_options().topology.empty(),
                     release);
      break;
    }
    case space_id::pinned:
      p = pinned_alloc(bytes, release);
      break;
    case space_id::sim:
      p = std::aligned_alloc(alignment, rounded);
      release = [](void* q, std::size_t) { std::free(q); };
      break;
    case space_id::cuda:
      p = cuda_device_alloc(memory, bytes);
      release = [](void* q, std::size_t) { cuda_device_free(q); };
      break;
    case space_id::managed:
      p = cuda_managed_alloc(memory, bytes);
      release = [](void* q, std::size_t) { cuda_managed_free(q); };
      break;
    case space_id::mapped:
      break;
  }
  if (!p)
    throw out_of_memory(fmt::format("allocate: {} of {} memory on '{}' could not be allocated",
                                    detail::format_bytes(bytes), to_string(space), memory.path()));
  try {
    register_allocation(p, {bytes, space, memory.id(), machine_id, accounted, std::move(release)});
  } catch (...) {
    release(p, bytes);
    throw;
  }
  guard.armed = false;
  return {p, memory.id()};
}

static void deallocate_bytes_impl(void const* address, space_id space, bool fenced);

void deallocate_bytes(void const* address, space_id space) {
  deallocate_bytes_impl(address, space, true);
}

void deallocate_bytes_used_up(void const* address, space_id space) {
  deallocate_bytes_impl(address, space, false);
}

static void deallocate_bytes_impl(void const* address, space_id space, bool fenced) {
  auto info = find_allocation(address);
  if (!info || info->base != address || info->space != space)
    throw invalid_argument(fmt::format(
        "deallocate: {} is not the start of a live {} allocation ({}); expected a pointer "
        "returned by allocate and not yet deallocated",
        address, to_string(space),
        !info                   ? "no allocation holds it"
        : info->base != address ? "it points inside an allocation"
                                : fmt::format("it is {} memory", to_string(info->space))));
  // Device memory may still be in use by queued device work: like cudaFree, freeing waits
  // for the device (the execution layer installs the wait).
  if (fenced && info->space == space_id::sim)
    if (auto fence = device_release_fence.load(std::memory_order_acquire))
      fence(info->place_id, info->machine);
  auto rec = unregister_allocation(address);
  if (!rec)
    throw invalid_argument(fmt::format("deallocate: {} was released concurrently", address));
  if (rec->accounted) {
    auto& u = the_usage();
    std::lock_guard lock(u.mutex);
    u.used[{rec->machine_id, rec->place_id}] -= rec->bytes;
  }
  rec->release(const_cast<void*>(address), rec->bytes);
}

void wait_for_device_users(void const* address, space_id space) noexcept {
  if (space != space_id::sim) return;
  try {
    if (auto info = find_allocation(address); info && info->space == space_id::sim)
      if (auto fence = device_release_fence.load(std::memory_order_acquire))
        fence(info->place_id, info->machine);
  } catch (...) {
    // No runtime any more (nothing can still run), or the wait itself failed: the reset
    // goes ahead as it did before, it cannot report.
  }
}

place place_of_id(std::uint32_t id) {
  auto m = runtime::current().machine();
  for (auto const& p : m.descendants())
    if (p.id() == id) return p;
  throw invalid_argument("ptr::place: no place with id " + std::to_string(id) +
                         " in this runtime's machine");
}

}  // namespace detail
}  // namespace strata
