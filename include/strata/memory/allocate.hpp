// Allocation on places (Phalanx §III-C allocate/deallocate; PARRAY §3.1 create/destroy).
//
// `where` is a memory place, or any place above memories: the runtime then picks one of
// the space's kind (the nearest to a processor, else the first in the subtree with room).
// Every allocation is recorded, so deallocation knows how to release it and checks (in
// builds without NDEBUG) can tell which space and place a raw address belongs to.
#pragma once

#include <strata/error.hpp>
#include <strata/memory/ptr.hpp>
#include <strata/memory/space.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace strata {

namespace detail {

struct raw_allocation {
  void* address;
  std::uint32_t place_id;
};

/// Allocates `bytes` (> 0) aligned to `alignment` in a memory of `space` at or near
/// `where`. Throws invalid_argument (no such memory there) or out_of_memory.
raw_allocation allocate_bytes(place const& where, std::size_t bytes, std::size_t alignment,
                              space_id space);
/// Releases an allocation made by allocate_bytes; throws invalid_argument when `address`
/// is not the start of a live allocation of `space`.
void deallocate_bytes(void const* address, space_id space);
/// The same without waiting for the device's queued work: for memory whose every user is
/// known to have completed (staging released by the continuation of the last operation
/// that used it, where waiting for the device's later work would wait for that very
/// continuation).
void deallocate_bytes_used_up(void const* address, space_id space);
/// Device memory about to be reused (an arena's reset): waits until the work issued on
/// the device owning the allocation at `address` has completed, as a free does.
void wait_for_device_users(void const* address, space_id space) noexcept;

/// What the registry knows about the allocation containing an address.
struct allocation_info {
  void* base;
  std::size_t bytes;
  space_id space;
  std::uint32_t place_id;
  std::uint64_t machine;  // the runtime's machine it was allocated in (0: none)
};

/// The identity `allocation_info::machine` holds for the live runtime's machine.
std::uint64_t current_machine_key();
std::optional<allocation_info> find_allocation(void const* address);

/// a * b, or invalid_argument naming `what` when it does not fit in size_t.
inline std::size_t mul_checked(std::size_t a, std::size_t b, char const* what) {
  std::size_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw invalid_argument(std::string(what) + ": " + std::to_string(a) + " x " +
                           std::to_string(b) + " overflows the address space");
  return r;
}

/// x rounded up to a multiple of m, or invalid_argument when that overflows.
inline std::size_t round_up_checked(std::size_t x, std::size_t m, char const* what) {
  if (x > std::numeric_limits<std::size_t>::max() - (m - 1))
    throw invalid_argument(std::string(what) + ": " + std::to_string(x) +
                           " bytes cannot be rounded up to a multiple of " + std::to_string(m));
  return (x + m - 1) / m * m;
}

template <class T>
std::size_t bytes_for(std::size_t n, char const* operation = "allocate") {
  constexpr std::size_t most = std::numeric_limits<std::size_t>::max() / sizeof(T);
  if (n > most)
    throw invalid_argument(std::string(operation) + ": " + std::to_string(n) + " elements of " +
                           std::to_string(sizeof(T)) +
                           " bytes overflow the address space; expected at most " +
                           std::to_string(most) + " elements");
  return n * sizeof(T);
}

}  // namespace detail

/// Allocates `n` objects of T (uninitialized storage; T must be trivially copyable, as
/// data moved between memories by copies must be) in `Space` at or near `where`.
/// `n == 0` gives a null pointer.
template <class T, memory_space Space = host_space>
ptr<T, Space> allocate(place const& where, std::size_t n) {
  static_assert(std::is_trivially_copyable_v<T>,
                "allocate: T must be trivially copyable (memory moves between spaces bytewise)");
  static_assert(
      !requires { Space::automatic; },
      "allocate: smem, rmem and vmem are a kernel's automatic memory; create them "
      "inside the kernel (create_shared, private_array)");
  if (n == 0) return {};
  auto raw = detail::allocate_bytes(where, detail::bytes_for<T>(n),
                                    alignof(T) > 64 ? alignof(T) : 64, Space::id);
  return ptr<T, Space>(static_cast<T*>(raw.address), raw.place_id);
}

/// Releases what allocate returned (a null pointer is ignored).
template <class T, memory_space Space>
void deallocate(ptr<T, Space> p) {
  if (p) detail::deallocate_bytes(p.get(), Space::id);
}

}  // namespace strata
