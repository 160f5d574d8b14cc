// Serialization of remote-task arguments and results (Phalanx §IV-C: remote `async`
// ships its arguments to the rank that runs it).
//
// Built in: trivially copyable types (bytes as they are: the ranks of one job run the
// same binary on the same kind of node), std::string, std::vector, std::optional,
// std::pair, std::tuple and std::array of serializable types. A user type becomes
// serializable by specializing `strata::dist::serializer<T>` with
//   static void write(writer& w, T const& v);
//   static T read(reader& r);
// Reading more than was written throws `strata::error` (a truncated or mismatched
// message), never reads out of bounds.
#pragma once

#include <strata/error.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata::dist {

template <class T, class Enable = void>
struct serializer;

class writer {
 public:
  explicit writer(std::vector<std::byte>& out) : out_(out) {}
  void bytes(void const* p, std::size_t n) {
    auto const at = out_.size();
    out_.resize(at + n);
    if (n) std::memcpy(out_.data() + at, p, n);
  }
  template <class T>
  void operator()(T const& v) {
    serializer<T>::write(*this, v);
  }

 private:
  std::vector<std::byte>& out_;
};

class reader {
 public:
  reader(std::byte const* p, std::size_t n) : p_(p), end_(p + n) {}
  void bytes(void* dst, std::size_t n) {
    if (n > left())
      throw error("dist: a message ended after " + std::to_string(left()) + " more bytes where " +
                  std::to_string(n) +
                  " were expected (the sender serialized other types than the receiver reads)");
    if (n) std::memcpy(dst, p_, n);
    p_ += n;
  }
  std::size_t left() const noexcept { return static_cast<std::size_t>(end_ - p_); }
  template <class T>
  T read() {
    return serializer<T>::read(*this);
  }

 private:
  std::byte const* p_;
  std::byte const* end_;
};

namespace detail {
template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T>
struct is_tuple_like : std::false_type {};
template <class... T>
struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
// Types with a serializer of their own below, even when trivially copyable (their
// members are written one by one, so that a member that is not is refused).
// Trivially copyable standard types that hold an address of this process: refused like
// raw pointers (a string_view or span sent to another rank points at nothing there).
template <class T>
struct holds_address : std::false_type {};
template <class C, class Tr>
struct holds_address<std::basic_string_view<C, Tr>> : std::true_type {};
template <class T, std::size_t E>
struct holds_address<std::span<T, E>> : std::true_type {};
template <class T>
struct holds_address<std::reference_wrapper<T>> : std::true_type {};
template <class T>
inline constexpr bool structural =
    is_std_array<T>::value || is_tuple_like<T>::value || is_optional<T>::value;
}  // namespace detail

/// Whether `T` can travel in a remote call (a serializer specialization exists).
template <class T>
concept serializable = requires(writer& w, reader& r, T const& v) {
  serializer<T>::write(w, v);
  { serializer<T>::read(r) } -> std::same_as<T>;
};

// Pointers are trivially copyable but mean nothing on another rank: they are refused
// here (use global_ptr, which says whose address it is), as are the standard views that
// hold one (string_view, span, reference_wrapper). A user type or a lambda that holds a
// pointer or captures by reference cannot be told apart from plain data: docs/dist.md.
template <class T>
struct serializer<T, std::enable_if_t<std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> &&
                                      !detail::holds_address<T>::value && !detail::structural<T>>> {
  static void write(writer& w, T const& v) { w.bytes(&v, sizeof(T)); }
  static T read(reader& r) {
    // bit_cast: no default constructor needed (a lambda's closure has none).
    std::array<std::byte, sizeof(T)> raw;
    r.bytes(raw.data(), sizeof(T));
    return std::bit_cast<T>(raw);
  }
};

template <>
struct serializer<std::string> {
  static void write(writer& w, std::string const& s) {
    std::uint64_t n = s.size();
    w.bytes(&n, sizeof n);
    w.bytes(s.data(), s.size());
  }
  static std::string read(reader& r) {
    std::uint64_t n = 0;
    r.bytes(&n, sizeof n);
    if (n > r.left())
      throw error("dist: a message holds a string of " + std::to_string(n) + " bytes but only " +
                  std::to_string(r.left()) + " remain");
    std::string s(n, '\0');
    r.bytes(s.data(), n);
    return s;
  }
};

// The containers are serializable when their elements are (a vector of spans is not).
template <class T, class A>
requires serializable<T>
struct serializer<std::vector<T, A>> {
  static void write(writer& w, std::vector<T, A> const& v) {
    std::uint64_t n = v.size();
    w.bytes(&n, sizeof n);
    if constexpr (std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>)
      w.bytes(v.data(), v.size() * sizeof(T));
    else
      for (auto const& x : v) w(x);
  }
  static std::vector<T, A> read(reader& r) {
    std::uint64_t n = 0;
    r.bytes(&n, sizeof n);
    std::vector<T, A> v;
    if constexpr (std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>) {
      // Divided, not multiplied: a corrupt count must not wrap into a small size.
      if (n > r.left() / sizeof(T))
        throw error("dist: a message holds a vector of " + std::to_string(n) + " elements of " +
                    std::to_string(sizeof(T)) + " bytes but only " + std::to_string(r.left()) +
                    " bytes remain");
      v.resize(n);
      r.bytes(v.data(), n * sizeof(T));
    } else {
      v.reserve(std::min<std::uint64_t>(n, r.left()));  // a corrupt count allocates nothing
      for (std::uint64_t i = 0; i < n; ++i) v.push_back(r.read<T>());
    }
    return v;
  }
};

template <class T>
requires serializable<T>
struct serializer<std::optional<T>> {
  static void write(writer& w, std::optional<T> const& v) {
    bool has = v.has_value();
    w(has);
    if (has) w(*v);
  }
  static std::optional<T> read(reader& r) {
    if (!r.read<bool>()) return std::nullopt;
    return r.read<T>();
  }
};

template <class T, std::size_t N>
requires serializable<T>
struct serializer<std::array<T, N>> {
  static void write(writer& w, std::array<T, N> const& v) {
    for (auto const& x : v) w(x);
  }
  static std::array<T, N> read(reader& r) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::array<T, N>{((void)I, r.read<T>())...};
    }
    (std::make_index_sequence<N>{});
  }
};

template <class... T>
requires(serializable<T>&&...) struct serializer<std::tuple<T...>> {
  static void write(writer& w, std::tuple<T...> const& v) {
    std::apply([&](auto const&... x) { (w(x), ...); }, v);
  }
  static std::tuple<T...> read(reader& r) {
    // Braced initialization evaluates left to right, matching the write order.
    return std::tuple<T...>{r.read<T>()...};
  }
};

template <class A, class B>
requires serializable<A> && serializable<B>
struct serializer<std::pair<A, B>> {
  static void write(writer& w, std::pair<A, B> const& v) {
    w(v.first);
    w(v.second);
  }
  static std::pair<A, B> read(reader& r) {
    A a = r.read<A>();
    B b = r.read<B>();
    return {std::move(a), std::move(b)};
  }
};

}  // namespace strata::dist
