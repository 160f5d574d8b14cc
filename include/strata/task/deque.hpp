// The work-stealing deque of each worker (Ripple §6.2: "a lock-free implementation of a
// work stealing deque [20, 21]").
//
// Chase and Lev's dynamic circular deque with the memory orders of Lê, Pop, Cohen and
// Zappa Nardelli, "Correct and efficient work-stealing for weak memory models" (PPoPP
// 2013), which are correct on ARM and POWER as well as x86. The owner pushes and pops at
// the bottom; any thread steals from the top. The ring grows by doubling when full; the
// old rings are retired, not freed, until the deque dies, because a thief that read the
// old ring pointer may still read a slot of it (the slot it reads holds the same element
// in both rings, so its CAS on `top` decides correctly). Retired rings total less than
// the live one, so memory stays within twice the high-water mark.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace strata::task {

template <class T>
class ws_deque {
  static_assert(std::is_pointer_v<T>, "ws_deque holds pointers (one atomic word per slot)");

 public:
  explicit ws_deque(std::size_t capacity = 256) {
    std::size_t c = 1;
    while (c < capacity) c <<= 1;
    auto r = std::make_unique<ring>(c);
    ring_.store(r.get(), std::memory_order_relaxed);
    rings_.push_back(std::move(r));
  }
  ws_deque(ws_deque const&) = delete;
  ws_deque& operator=(ws_deque const&) = delete;

  /// Owner only: adds `x` at the bottom. Returns how many elements the owner saw before
  /// (a thief may have taken some meanwhile: 0 is exact, more is an upper bound).
  std::int64_t push(T x) {
    auto b = bottom_.load(std::memory_order_relaxed);
    auto t = top_.load(std::memory_order_acquire);
    ring* a = ring_.load(std::memory_order_relaxed);
    if (b - t > static_cast<std::int64_t>(a->mask)) a = grow(a, t, b);
    a->put(b, x);
    // Lê et al. write a release fence then a relaxed store; a store-release orders the
    // same writes (same code on x86 and ARMv8) and ThreadSanitizer, which does not model
    // fences, sees the hand-over to a thief's acquire load of `bottom`.
    bottom_.store(b + 1, std::memory_order_release);
    return b - t;
  }

  /// Owner only: takes the element at the bottom (LIFO), or null when empty.
  T pop() {
    auto b = bottom_.load(std::memory_order_relaxed) - 1;
    ring* a = ring_.load(std::memory_order_relaxed);
    bottom_.store(b, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    auto t = top_.load(std::memory_order_relaxed);
    T x = nullptr;
    if (t <= b) {
      x = a->get(b);
      if (t == b) {
        // The last element: race the thieves for it.
        if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                          std::memory_order_relaxed))
          x = nullptr;
        bottom_.store(b + 1, std::memory_order_relaxed);
      }
    } else {
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
    return x;
  }

  /// Owner only, on a deque no thread steals from (the only member of an arena): pop
  /// without the fence and the race for the last element, which exist only for thieves.
  T pop_unshared() {
    auto b = bottom_.load(std::memory_order_relaxed);
    if (b <= top_.load(std::memory_order_relaxed)) return nullptr;
    T x = ring_.load(std::memory_order_relaxed)->get(b - 1);
    bottom_.store(b - 1, std::memory_order_relaxed);
    return x;
  }

  /// Any thread: takes the element at the top (FIFO), or null when empty or when it lost
  /// a race (the caller may try elsewhere).
  T steal() {
    auto t = top_.load(std::memory_order_acquire);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    auto b = bottom_.load(std::memory_order_acquire);
    if (t >= b) return nullptr;
    ring* a = ring_.load(std::memory_order_consume);
    T x = a->get(t);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed))
      return nullptr;
    return x;
  }

  /// A racy estimate of the number of elements (exact for the owner between its calls).
  std::int64_t size() const noexcept {
    auto b = bottom_.load(std::memory_order_relaxed);
    auto t = top_.load(std::memory_order_relaxed);
    return b > t ? b - t : 0;
  }
  bool empty() const noexcept { return size() == 0; }
  std::size_t capacity() const noexcept { return ring_.load(std::memory_order_relaxed)->mask + 1; }

 private:
  struct ring {
    explicit ring(std::size_t n) : mask(n - 1), slots(new std::atomic<T>[n]) {}
    std::size_t const mask;
    std::unique_ptr<std::atomic<T>[]> slots;
    T get(std::int64_t i) const noexcept {
      return slots[static_cast<std::size_t>(i) & mask].load(std::memory_order_relaxed);
    }
    void put(std::int64_t i, T x) noexcept {
      slots[static_cast<std::size_t>(i) & mask].store(x, std::memory_order_relaxed);
    }
  };

  ring* grow(ring* old, std::int64_t t, std::int64_t b) {
    auto bigger = std::make_unique<ring>((old->mask + 1) * 2);
    for (auto i = t; i < b; ++i) bigger->put(i, old->get(i));
    ring* r = bigger.get();
    rings_.push_back(std::move(bigger));  // the old ring stays readable for thieves
    ring_.store(r, std::memory_order_release);
    return r;
  }

  alignas(64) std::atomic<std::int64_t> top_{0};
  alignas(64) std::atomic<std::int64_t> bottom_{0};
  alignas(64) std::atomic<ring*> ring_{nullptr};
  std::vector<std::unique_ptr<ring>> rings_;  // owner only
};

}  // namespace strata::task
