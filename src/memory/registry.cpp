#include "memory/registry.hpp"

#include <iterator>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace strata::detail {
namespace {

struct allocation_registry {
  std::shared_mutex mutex;
  std::map<std::uintptr_t, allocation_record> live;
};

allocation_registry& the_registry() {
  static allocation_registry r;
  return r;
}

}  // namespace

void register_allocation(void* base, allocation_record record) {
  auto& r = the_registry();
  std::unique_lock lock(r.mutex);
  r.live.insert_or_assign(reinterpret_cast<std::uintptr_t>(base), std::move(record));
}

std::optional<allocation_record> unregister_allocation(void const* base) {
  auto& r = the_registry();
  std::unique_lock lock(r.mutex);
  auto it = r.live.find(reinterpret_cast<std::uintptr_t>(base));
  if (it == r.live.end()) return std::nullopt;
  auto rec = std::move(it->second);
  r.live.erase(it);
  return rec;
}

std::optional<allocation_info> find_allocation(void const* address) {
  auto& r = the_registry();
  auto a = reinterpret_cast<std::uintptr_t>(address);
  std::shared_lock lock(r.mutex);
  auto it = r.live.upper_bound(a);
  if (it == r.live.begin()) return std::nullopt;
  --it;
  if (a >= it->first + it->second.bytes && !(it->second.bytes == 0 && a == it->first))
    return std::nullopt;
  return allocation_info{reinterpret_cast<void*>(it->first), it->second.bytes, it->second.space,
                         it->second.place_id, it->second.machine_id};
}

}  // namespace strata::detail
