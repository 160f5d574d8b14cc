// A move-only callable that keeps small captures in place: the continuations of events,
// made and run once per completion on every path that joins or chains work (halo
// exchanges, graph passes, remote operations).
//
// Why not std::function: libstdc++ keeps a callable in place only if it is trivially
// copyable and at most 16 bytes, so any lambda that holds an event or a shared_ptr (almost
// every continuation) costs a heap allocation and a free, often in another thread. A
// `when_all` of two events paid four of them (callgrind, session 47). Captures up to
// `Size` bytes that move without throwing are stored here instead; larger ones go to the
// heap as before.
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace strata::detail {

template <class Signature, std::size_t Size = 48>
class inline_function;

template <class T>
inline constexpr bool is_std_function = false;
template <class S>
inline constexpr bool is_std_function<std::function<S>> = true;

template <class R, class... Args, std::size_t Size>
class inline_function<R(Args...), Size> {
  static_assert(Size >= sizeof(void*), "inline_function: room for at least a pointer");

 public:
  inline_function() noexcept = default;
  inline_function(std::nullptr_t) noexcept {}

  template <class F>
  requires(!std::same_as<std::remove_cvref_t<F>, inline_function> &&
           std::is_invocable_r_v<R, std::decay_t<F>&, Args...> &&
           std::is_constructible_v<std::decay_t<F>, F>) inline_function(F&& f) {
    using D = std::decay_t<F>;
    // An empty std::function or a null pointer makes an empty inline_function (calling
    // it throws std::bad_function_call, as std::function would).
    if constexpr (std::is_pointer_v<D> || std::is_member_pointer_v<D> || is_std_function<D>)
      if (!f) return;
    if constexpr (fits<D>) {
      ::new (static_cast<void*>(buffer_)) D(std::forward<F>(f));
      ops_ = &in_place_ops<D>;
    } else {
      ::new (static_cast<void*>(buffer_)) D*(new D(std::forward<F>(f)));
      ops_ = &on_heap_ops<D>;
    }
  }

  inline_function(inline_function&& other) noexcept { take(other); }
  inline_function& operator=(inline_function&& other) noexcept {
    // Taken first: `other` may be owned by the callable this one replaces.
    inline_function incoming(std::move(other));
    reset();
    take(incoming);
    return *this;
  }
  inline_function(inline_function const&) = delete;
  inline_function& operator=(inline_function const&) = delete;
  ~inline_function() { reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  R operator()(Args... args) {
    if (!ops_) throw std::bad_function_call();
    return ops_->call(buffer_, std::forward<Args>(args)...);
  }

  /// Destroys the callable (and what it captured) now.
  void reset() noexcept {
    if (ops_) {
      ops_->destroy(buffer_);
      ops_ = nullptr;
    }
  }

  /// Whether a callable of type F is kept in place (no allocation).
  template <class F>
  static constexpr bool fits =
      sizeof(F) <= Size &&
      alignof(F) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<F>;

 private:
  struct ops_t {
    R (*call)(void*, Args&&...);
    void (*move)(void* from, void* to) noexcept;  // constructs at `to`, destroys `from`
    void (*destroy)(void*) noexcept;
  };

  template <class D>
  static constexpr ops_t in_place_ops{
      [](void* p, Args&&... a) -> R {
        if constexpr (std::is_void_v<R>)
          std::invoke(*std::launder(static_cast<D*>(p)), std::forward<Args>(a)...);
        else
          return std::invoke(*std::launder(static_cast<D*>(p)), std::forward<Args>(a)...);
      },
      [](void* from, void* to) noexcept {
        D* f = std::launder(static_cast<D*>(from));
        ::new (to) D(std::move(*f));
        f->~D();
      },
      [](void* p) noexcept { std::launder(static_cast<D*>(p))->~D(); }};

  template <class D>
  static constexpr ops_t on_heap_ops{
      [](void* p, Args&&... a) -> R {
        if constexpr (std::is_void_v<R>)
          std::invoke(**std::launder(static_cast<D**>(p)), std::forward<Args>(a)...);
        else
          return std::invoke(**std::launder(static_cast<D**>(p)), std::forward<Args>(a)...);
      },
      [](void* from, void* to) noexcept { ::new (to) D*(*std::launder(static_cast<D**>(from))); },
      [](void* p) noexcept { delete *std::launder(static_cast<D**>(p)); }};

  void take(inline_function& other) noexcept {
    if (!other.ops_) return;
    other.ops_->move(other.buffer_, buffer_);
    ops_ = other.ops_;
    other.ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char buffer_[Size];
  ops_t const* ops_ = nullptr;
};

/// An event continuation: runs once, in the thread that completes the event. Its buffer
/// is 48 bytes (the object 64, aligned to 16).
using continuation = inline_function<void()>;

}  // namespace strata::detail
