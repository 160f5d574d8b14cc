#include "memory/registry.hpp"

#include <array>
#include <atomic>
#include <iterator>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace strata::detail {
namespace {

struct allocation_registry {
  std::shared_mutex mutex;
  std::map<std::uintptr_t, allocation_record> live;
  // Bumped (under the unique lock) by every change of `live`: a thread's cached lookups
  // hold while it is unchanged.
  std::atomic<std::uint64_t> version{1};
};

// A thread's last few lookups (find_allocation): a halo loop or a pair of transfers asks
// for the same few allocations on every issue. The shared lock and the map's nodes are
// the registry's cost there; cold, after the thread slept, they are cache misses on the
// issue path of a sim transfer before its model starts (issue 21, session 59). An entry
// is the answer while the registry's version is the one it was read under.
struct cached_lookup {
  std::uint64_t version = 0;
  std::uintptr_t base = 0;
  std::size_t bytes = 0;
  allocation_info info{};
};
thread_local std::array<cached_lookup, 4> recent{};
thread_local unsigned next_recent = 0;

bool holds(std::uintptr_t base, std::size_t bytes, std::uintptr_t a) noexcept {
  return a >= base && (a - base < bytes || (bytes == 0 && a == base));
}

allocation_registry& the_registry() {
  static allocation_registry r;
  return r;
}

}  // namespace

void register_allocation(void* base, allocation_record record) {
  auto& r = the_registry();
  std::unique_lock lock(r.mutex);
  r.live.insert_or_assign(reinterpret_cast<std::uintptr_t>(base), std::move(record));
  r.version.fetch_add(1, std::memory_order_release);
}

std::optional<allocation_record> unregister_allocation(void const* base) {
  auto& r = the_registry();
  std::unique_lock lock(r.mutex);
  auto it = r.live.find(reinterpret_cast<std::uintptr_t>(base));
  if (it == r.live.end()) return std::nullopt;
  auto rec = std::move(it->second);
  r.live.erase(it);
  r.version.fetch_add(1, std::memory_order_release);
  return rec;
}

std::optional<allocation_info> find_allocation(void const* address) {
  auto& r = the_registry();
  auto a = reinterpret_cast<std::uintptr_t>(address);
  auto const now = r.version.load(std::memory_order_acquire);
  for (auto const& c : recent)
    if (c.version == now && holds(c.base, c.bytes, a)) return c.info;
  std::shared_lock lock(r.mutex);
  auto it = r.live.upper_bound(a);
  if (it == r.live.begin()) return std::nullopt;
  --it;
  if (!holds(it->first, it->second.bytes, a)) return std::nullopt;
  allocation_info info{reinterpret_cast<void*>(it->first), it->second.bytes, it->second.space,
                       it->second.place_id, it->second.machine_id};
  // The version under the lock: no change of `live` can come between it and the answer.
  recent[next_recent++ % recent.size()] = {r.version.load(std::memory_order_relaxed), it->first,
                                           it->second.bytes, info};
  return info;
}

}  // namespace strata::detail
