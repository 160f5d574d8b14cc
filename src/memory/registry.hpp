// The record of every live allocation Strata made: how to release it, which space and
// place it belongs to, and (for device memories) how much of each memory is in use.
#pragma once

#include <strata/memory/allocate.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

namespace strata::detail {

struct allocation_record {
  std::size_t bytes;
  space_id space;
  std::uint32_t place_id;
  std::uint64_t machine_id;  // of the runtime that made it
  bool accounted;            // counted against its memory's capacity
  std::function<void(void*, std::size_t)> release;
};

/// Installed by the execution layer: waits until the sim device owning memory place `id`
/// (of machine `machine`) has no queued work, unless called from that device's threads.
extern std::atomic<void (*)(std::uint32_t id, std::uint64_t machine)> device_release_fence;

/// Adds a live allocation at `base`.
void register_allocation(void* base, allocation_record record);
/// Removes the allocation starting at `base` and returns its record, or nullopt if no
/// live allocation starts there.
std::optional<allocation_record> unregister_allocation(void const* base);

}  // namespace strata::detail
