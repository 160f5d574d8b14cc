// The global address space (Phalanx §IV-C): a global pointer is (rank, address); memory
// is allocated on any rank, and one-sided, non-blocking put/get/copy move data between
// local and remote memory, returning events. Remote atomics: fetch-add and
// compare-exchange.
//
//   auto g = dist::allocate<double>(rt.rank_place(1), n).get();   // lives on rank 1
//   dist::put(g + 10, local.data(), 5).wait();                      // 5 elements at 10
//   dist::get(back.data(), g, n).wait();
//
// Between nodes, transfers are active messages handled by the target's progress thread
// (it plays the role of an RDMA engine: it checks the range and copies, and runs no user
// code); large transfers go as one MPI message straight into the destination
// (rendezvous). On one node, dist::allocate's memory lives in a memory file that the
// peers map: a put, get or atomic there is a memory copy or an atomic instruction, with
// no message (docs/dist.md "Put and get on one node"). Every remote access is checked
// against the target's registered memory (dist::allocate, or make_global), so a pointer
// to freed or foreign memory fails with remote_error instead of corrupting the target.
// Host memory only; device memory is staged through host.
#pragma once

#include <strata/dist/async.hpp>
#include <strata/dist/runtime.hpp>
#include <strata/error.hpp>
#include <strata/exec/event.hpp>
#include <strata/machine/place.hpp>
#include <strata/memory/allocate.hpp>
#include <strata/memory/space.hpp>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace strata::dist {

template <class T>
class global_ptr {
 public:
  global_ptr() = default;
  global_ptr(int rank, std::uintptr_t address) noexcept : rank_(rank), address_(address) {}
  /// Memory of `space` (host, sim, cuda) at place `place_id` of the owner's machine.
  global_ptr(int rank, std::uintptr_t address, space_id space, std::uint32_t place_id) noexcept
      : rank_(rank), address_(address), place_(place_id), space_(space) {}

  int rank() const noexcept { return rank_; }
  std::uintptr_t address() const noexcept { return address_; }
  /// The memory space on its rank: host, or a device's (dist::allocate on a device place).
  space_id space() const noexcept { return space_; }
  /// The memory's place id in its rank's own machine tree (as strata::ptr::place_id).
  std::uint32_t place_id() const noexcept { return place_; }
  explicit operator bool() const noexcept { return address_ != 0; }
  /// Whether the memory is in this process.
  bool is_local() const;
  /// The local address; throws invalid_argument when the memory is on another rank.
  T* local() const;

  global_ptr operator+(std::ptrdiff_t n) const noexcept {
    return {rank_,
            address_ + static_cast<std::uintptr_t>(n * static_cast<std::ptrdiff_t>(sizeof(T))),
            space_, place_};
  }
  global_ptr operator-(std::ptrdiff_t n) const noexcept { return *this + (-n); }
  global_ptr& operator+=(std::ptrdiff_t n) noexcept { return *this = *this + n; }
  global_ptr& operator-=(std::ptrdiff_t n) noexcept { return *this = *this - n; }
  global_ptr& operator++() noexcept { return *this += 1; }
  global_ptr& operator--() noexcept { return *this -= 1; }
  /// Elements between two pointers of the same rank.
  friend std::ptrdiff_t operator-(global_ptr a, global_ptr b) {
    if (a.rank_ != b.rank_)
      throw invalid_argument("global_ptr difference between rank " + std::to_string(a.rank_) +
                             " and rank " + std::to_string(b.rank_) +
                             "; expected pointers into the same rank's memory");
    return (static_cast<std::ptrdiff_t>(a.address_) - static_cast<std::ptrdiff_t>(b.address_)) /
           static_cast<std::ptrdiff_t>(sizeof(T));
  }
  friend bool operator==(global_ptr, global_ptr) = default;
  friend auto operator<=>(global_ptr, global_ptr) = default;

 private:
  int rank_ = -1;
  std::uintptr_t address_ = 0;
  std::uint32_t place_ = 0;
  space_id space_ = space_id::host;
};

namespace detail {

int my_rank();
[[noreturn]] void not_local(int rank, std::uintptr_t address);

/// Memory remote ranks may access: allocated by dist::allocate or registered.
void register_segment(void const* base, std::size_t bytes);
void unregister_segment(void const* base);
std::uintptr_t allocate_segment(std::size_t bytes, std::size_t align);
void free_segment(std::uintptr_t address);

event put_bytes(int rank, std::uintptr_t dst, void const* src, std::size_t n, after const& deps);
/// How many puts, gets and atomics of this process were memory operations on a peer's
/// segment mapped here so far, not messages (a diagnostic: docs/dist.md "Put and get on
/// one node").
std::uint64_t direct_operations();
/// How many active messages this process has received through the shared-memory rings
/// of its node's ranks so far (a diagnostic: docs/dist.md "Active messages on one node").
std::uint64_t ring_messages();
/// Whether this process sends active messages to the ranks of its node through rings
/// (the same answer on every rank: STRATA_DIST_RINGS=0 on any rank turns them off).
bool ring_transport();
/// How many peers' segments this process has mapped now (freed ones go at the next
/// first access to a segment, or this rank's next allocate or deallocate).
std::size_t mapped_segments();
event get_bytes(void* dst, int rank, std::uintptr_t src, std::size_t n, after const& deps);

enum class atomic_kind : std::uint8_t { fetch_add, compare_exchange };
enum class scalar : std::uint8_t { i32, u32, i64, u64, f32, f64 };
template <class T>
constexpr scalar scalar_of() {
  if constexpr (std::is_same_v<T, float>)
    return scalar::f32;
  else if constexpr (std::is_same_v<T, double>)
    return scalar::f64;
  else if constexpr (std::is_integral_v<T> && sizeof(T) == 4)
    return std::is_signed_v<T> ? scalar::i32 : scalar::u32;
  else if constexpr (std::is_integral_v<T> && sizeof(T) == 8)
    return std::is_signed_v<T> ? scalar::i64 : scalar::u64;
  else
    static_assert(sizeof(T) == 0, "dist atomics: T must be a 32/64-bit integer, float or double");
}
/// Runs the atomic on `rank` (operands as raw 8-byte words); the old value's bytes (as
/// many as the type has) land in `*old`, which is future<T>'s encoding of it.
event atomic_bytes(int rank, std::uintptr_t address, atomic_kind kind, scalar type,
                   std::uint64_t operand, std::uint64_t expected, std::shared_ptr<bytes> old);

template <class T>
std::uint64_t to_word(T v) {
  std::uint64_t w = 0;
  std::memcpy(&w, &v, sizeof(T));
  return w;
}

/// n * sizeof(T), or invalid_argument naming the dist operation when that does not fit in
/// size_t (the local allocator's check): a wrapped product would allocate or move a few
/// bytes where the caller asked for an impossible amount.
using strata::detail::bytes_for;

/// out_of_memory when `size` exceeds PTRDIFF_MAX: no rank can allocate that, and sizes
/// near SIZE_MAX would wrap where a header or alignment is added.
inline void check_allocation_size(std::size_t size, char const* operation) {
  if (size > static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()))
    throw out_of_memory(std::string(operation) + ": " + std::to_string(size) +
                        " bytes cannot be allocated on any rank; expected at most PTRDIFF_MAX (" +
                        std::to_string(std::numeric_limits<std::ptrdiff_t>::max()) + ") bytes");
}

template <class T>
struct allocate_fn {
  std::size_t n;
  global_ptr<T> operator()() const {
    return {my_rank(),
            allocate_segment(bytes_for<T>(n, "dist::allocate"), alignof(T) < 64 ? 64 : alignof(T))};
  }
};
/// A device place's position among its rank place's descendants in the cluster tree (the
/// same on every rank), and back to this rank's own place.
std::uint32_t position_under_rank(place const& where);
place place_at_position(std::uint32_t position);
/// dist::allocate on a device place: device memory there, registered for remote access.
std::uintptr_t allocate_device_bytes(std::uint32_t position, std::size_t size, space_id* space,
                                     std::uint32_t* place_id);

template <class T>
struct allocate_device_fn {
  std::size_t n;
  std::uint32_t position;
  global_ptr<T> operator()() const {
    space_id space = space_id::host;
    std::uint32_t place_id = 0;
    auto const a =
        allocate_device_bytes(position, bytes_for<T>(n, "dist::allocate"), &space, &place_id);
    return {my_rank(), a, space, place_id};
  }
};
struct free_fn {
  std::uintptr_t address;
  void operator()() const { free_segment(address); }
};

}  // namespace detail

template <class T>
bool global_ptr<T>::is_local() const {
  return rank_ == detail::my_rank();
}
template <class T>
T* global_ptr<T>::local() const {
  if (!is_local()) detail::not_local(rank_, address_);
  return reinterpret_cast<T*>(address_);
}

/// `n` elements on the rank of `where` (a cluster place), 64-byte aligned, uninitialized:
/// host memory, or the device's memory when `where` is a device (a sim or CUDA device of
/// that rank, or its memory; Phalanx §IV-C: GPU memory in the global address space).
/// Runs as a task on that rank (Phalanx: remote allocate). A size whose bytes overflow
/// size_t is invalid_argument, and one over PTRDIFF_MAX bytes (more than any memory
/// holds) out_of_memory, here, before anything is sent.
template <class T>
future<global_ptr<T>> allocate(place const& where, std::size_t n) {
  static_assert(std::is_trivially_copyable_v<T>, "dist::allocate: T must be trivially copyable");
  detail::check_allocation_size(detail::bytes_for<T>(n, "dist::allocate"), "dist::allocate");
  if (where.isa() != strata::isa::host)
    return async(where, detail::allocate_device_fn<T>{n, detail::position_under_rank(where)});
  return async(where, detail::allocate_fn<T>{n});
}

/// Frees memory from dist::allocate (on its rank); later accesses to it fail.
template <class T>
strata::event deallocate(global_ptr<T> p) {
  auto& rt = runtime::current();
  return async(rt.rank_place(p.rank()), detail::free_fn{p.address()}).event();
}

/// Makes local memory reachable from other ranks (until release_global).
template <class T>
global_ptr<T> make_global(std::span<T> local) {
  detail::register_segment(local.data(), local.size_bytes());
  return {detail::my_rank(), reinterpret_cast<std::uintptr_t>(local.data())};
}
template <class T>
void release_global(global_ptr<T> p) {
  detail::unregister_segment(p.local());
}

/// Copies `n` elements from local host memory `src` to `dst` (any rank, any space),
/// after `deps`. `src` must stay
/// valid until the event completes; completion means the data is in place at `dst`.
template <class T>
strata::event put(after const& deps, global_ptr<T> dst, T const* src, std::size_t n) {
  static_assert(std::is_trivially_copyable_v<T>);
  return detail::put_bytes(dst.rank(), dst.address(), src, detail::bytes_for<T>(n, "dist::put"),
                           deps);
}
template <class T>
strata::event put(global_ptr<T> dst, T const* src, std::size_t n) {
  return put(after{}, dst, src, n);
}

/// Copies `n` elements from `src` (any rank, any space) into local host memory `dst`,
/// after `deps`.
template <class T>
strata::event get(after const& deps, T* dst, global_ptr<T> src, std::size_t n) {
  static_assert(std::is_trivially_copyable_v<T>);
  return detail::get_bytes(dst, src.rank(), src.address(), detail::bytes_for<T>(n, "dist::get"),
                           deps);
}
template <class T>
strata::event get(T* dst, global_ptr<T> src, std::size_t n) {
  return get(after{}, dst, src, n);
}

/// Copies `n` elements between two global pointers (any ranks, any spaces): local host
/// ends are read or written directly; otherwise (two remote ends, or device memory here)
/// the elements are staged through host memory of this process.
template <class T>
strata::event copy(after const& deps, global_ptr<T> dst, global_ptr<T> src, std::size_t n) {
  if (src.is_local() && src.space() == space_id::host) return put(deps, dst, src.local(), n);
  if (dst.is_local() && dst.space() == space_id::host) return get(deps, dst.local(), src, n);
  (void)detail::bytes_for<T>(n, "dist::copy");  // before the staging buffer is sized by it
  auto staging = std::make_shared<std::vector<T>>(n);
  auto fetched = get(deps, staging->data(), src, n);
  auto done = put(after(fetched), dst, staging->data(), n);
  done.then([staging] {});  // keeps the staging buffer until the put has completed
  return done;
}
template <class T>
strata::event copy(global_ptr<T> dst, global_ptr<T> src, std::size_t n) {
  return copy(after{}, dst, src, n);
}

/// Atomic fetch-add at `p` (any rank); the future holds the old value.
template <class T>
future<T> atomic_fetch_add(global_ptr<T> p, T operand) {
  auto result = std::make_shared<detail::bytes>();
  auto e = detail::atomic_bytes(p.rank(), p.address(), detail::atomic_kind::fetch_add,
                                detail::scalar_of<T>(), detail::to_word(operand), 0, result);
  return future<T>(std::move(e), std::move(result));
}

/// Atomic compare-exchange at `p`: stores `desired` if the value equals `expected`;
/// the future holds the old value (equal to `expected` when the exchange happened).
template <class T>
future<T> atomic_compare_exchange(global_ptr<T> p, T expected, T desired) {
  static_assert(std::is_integral_v<T>, "dist::atomic_compare_exchange: T must be an integer");
  auto result = std::make_shared<detail::bytes>();
  auto e = detail::atomic_bytes(p.rank(), p.address(), detail::atomic_kind::compare_exchange,
                                detail::scalar_of<T>(), detail::to_word(desired),
                                detail::to_word(expected), result);
  return future<T>(std::move(e), std::move(result));
}

}  // namespace strata::dist
