// ptr<T, Space>: a pointer that knows its memory space in its type and its place at run
// time (Phalanx §III-C). It behaves like T* — arithmetic, comparison, indexing — within
// its space: comparing pointers of two spaces does not compile, and neither does
// dereferencing a device pointer in host code. Kernels receive plain T* (launch unwraps).
#pragma once

#include <strata/config.hpp>
#include <strata/machine/place.hpp>
#include <strata/memory/space.hpp>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace strata {

namespace detail {
/// The place with id `id` in the live runtime's machine.
place place_of_id(std::uint32_t id);
}  // namespace detail

template <class T, memory_space Space = host_space>
class ptr {
 public:
  using element_type = T;
  using space = Space;

  constexpr ptr() = default;
  constexpr ptr(std::nullptr_t) noexcept {}
  /// Wraps an address known to lie in `Space` at the memory place with id `place_id`.
  STRATA_FN constexpr ptr(T* p, std::uint32_t place_id) noexcept : p_(p), place_id_(place_id) {}

  /// ptr<T> converts to ptr<T const> of the same space, never to another space.
  template <class U>
  requires(std::is_convertible_v<U*, T*> && !std::is_same_v<U, T>) STRATA_FN
      constexpr ptr(ptr<U, Space> const& other) noexcept
      : p_(other.get()), place_id_(other.place_id()) {}

  /// The raw address (an escape hatch; a device address is not dereferenceable here).
  STRATA_FN constexpr T* get() const noexcept { return p_; }
  STRATA_FN constexpr std::uint32_t place_id() const noexcept { return place_id_; }
  /// The memory place holding the data.
  strata::place place() const { return detail::place_of_id(place_id_); }

  STRATA_FN constexpr explicit operator bool() const noexcept { return p_ != nullptr; }

  STRATA_FN constexpr T& operator*() const noexcept requires accessible_here_v<Space> {
    return *p_;
  }
  STRATA_FN constexpr T* operator->() const noexcept requires accessible_here_v<Space> {
    return p_;
  }
  STRATA_FN constexpr T& operator[](std::ptrdiff_t i) const noexcept requires
      accessible_here_v<Space> {
    return p_[i];
  }

  STRATA_FN constexpr ptr& operator+=(std::ptrdiff_t n) noexcept {
    p_ += n;
    return *this;
  }
  STRATA_FN constexpr ptr& operator-=(std::ptrdiff_t n) noexcept {
    p_ -= n;
    return *this;
  }
  STRATA_FN constexpr ptr& operator++() noexcept {
    ++p_;
    return *this;
  }
  STRATA_FN constexpr ptr& operator--() noexcept {
    --p_;
    return *this;
  }
  STRATA_FN friend constexpr ptr operator+(ptr a, std::ptrdiff_t n) noexcept { return a += n; }
  STRATA_FN friend constexpr ptr operator+(std::ptrdiff_t n, ptr a) noexcept { return a += n; }
  STRATA_FN friend constexpr ptr operator-(ptr a, std::ptrdiff_t n) noexcept { return a -= n; }
  STRATA_FN friend constexpr std::ptrdiff_t operator-(ptr const& a, ptr const& b) noexcept {
    return a.p_ - b.p_;
  }
  // Only pointers of the same space compare: there is no conversion between spaces.
  STRATA_FN friend constexpr bool operator==(ptr const& a, ptr const& b) noexcept {
    return a.p_ == b.p_;
  }
  STRATA_FN friend constexpr bool operator==(ptr const& a, std::nullptr_t) noexcept {
    return a.p_ == nullptr;
  }
  STRATA_FN friend constexpr auto operator<=>(ptr const& a, ptr const& b) noexcept {
    return a.p_ <=> b.p_;
  }

 private:
  T* p_ = nullptr;
  std::uint32_t place_id_ = 0;
};

template <class P>
struct is_ptr : std::false_type {};
template <class T, class S>
struct is_ptr<ptr<T, S>> : std::true_type {};
template <class P>
inline constexpr bool is_ptr_v = is_ptr<std::remove_cvref_t<P>>::value;

}  // namespace strata
