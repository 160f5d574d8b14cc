// Events: handles to launched work (Phalanx §III-B async/async_after/wait).
//
// An event completes once, successfully or with the exception its work threw. Waiting
// rethrows that exception. Continuations run in the thread that completes the event, so
// chains of work need no thread of their own. A thread that waits helps run pending
// work of the runtime's pool instead of blocking (a pool worker runs launched chunks and
// other tasks; any other thread runs chunks of launches that may use its PU), so waiting
// inside a kernel or a task cannot deadlock the pool. With nothing to help, it spins
// briefly and then parks on its own waiter, which the event's completion, and any new
// work it could help with, wakes (src/exec/threads/wake.hpp: the one sleep/wake
// mechanism of every blocking wait).
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <span>
#include <type_traits>
#include <vector>

#include <strata/exec/inline_function.hpp>

namespace strata {

namespace detail {

struct waiter;

class event_state {
 public:
  // `completing`: a completer won (complete), its error not yet stored: not ready, and
  // still taking continuations and waiters.
  enum status : int { completing = -1, pending = 0, done = 1, failed = 2 };

  bool ready() const noexcept { return status_.load(std::memory_order_acquire) > pending; }
  bool failed_() const noexcept { return status_.load(std::memory_order_acquire) == failed; }
  std::exception_ptr error() const noexcept { return ready() ? error_ : nullptr; }

  /// Completes the event (once) and runs its continuations here.
  void complete(std::exception_ptr error = nullptr);
  /// A producer that knows when the work will end (an emulated device's timing model)
  /// says so, and waiters sleep until shortly before instead of polling.
  void expect(std::chrono::steady_clock::time_point when) noexcept {
    expected_ns_.store(when.time_since_epoch().count(), std::memory_order_relaxed);
  }
  std::chrono::steady_clock::time_point expected() const noexcept {
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(expected_ns_.load(std::memory_order_relaxed)));
  }
  /// Runs `fn` when the event completes: now, in this thread, if it already has.
  void then(continuation fn);

  /// The device-side marker of the work (a cudaEvent_t and its device), set by the
  /// producer before the event is shared, so that later work on a device waits for it on
  /// the device instead of the host (Phalanx §IV-A: cudaStreamWaitEvent). Null for host
  /// work. `handle` owns the marker (its deleter destroys it).
  void set_native(std::shared_ptr<void> handle, int device) noexcept {
    native_ = std::move(handle);
    native_device_ = device;
  }
  void* native() const noexcept { return native_.get(); }
  int native_device() const noexcept { return native_device_; }

  /// Registers a parked thread to be woken at completion; false (nothing registered)
  /// when the event is already complete. See src/exec/threads/wake.hpp.
  bool add_waiter(waiter& w);
  /// Takes the thread off the list again (a no-op if completion already did).
  void remove_waiter(waiter& w);

 private:
  std::atomic<int> status_{pending};
  // A continuation or a waiter was registered (set under mutex_ before the status is
  // read there): complete takes the lock only then (most events have no listener when
  // they complete: a remote call's reply, a copy whose waiter is spinning).
  std::atomic<bool> listened_{false};
  std::atomic<std::chrono::steady_clock::rep> expected_ns_{0};
  std::exception_ptr error_;
  std::mutex mutex_;
  // Most events have one continuation (the join or the next step waiting for them): it
  // is kept here, and only further ones in the vector, which then allocates.
  continuation first_;
  std::vector<continuation> more_;
  waiter* waiters_ = nullptr;  // parked threads, woken by complete (under mutex_)
  std::shared_ptr<void> native_;
  int native_device_ = -1;
};

/// The memory of an event's state and its shared_ptr control block (one block): a thread
/// keeps a few blocks it freed for its next events, instead of malloc and free (about 140
/// instructions a pair, a quarter of a remote call's issue on one node). Off under the
/// sanitizers, which must see every block come and go (src/exec/event.cpp).
void* event_block_allocate(std::size_t bytes);
void event_block_free(void* block, std::size_t bytes) noexcept;

template <class T>
struct event_allocator {
  using value_type = T;
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
  event_allocator() = default;
  template <class U>
  event_allocator(event_allocator<U> const&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(event_block_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { event_block_free(p, n * sizeof(T)); }
  template <class U>
  bool operator==(event_allocator<U> const&) const noexcept {
    return true;
  }
};

/// Blocks (helping the pool) until `s` is ready; used by event::wait.
void wait_until_ready(event_state const& s);
/// The same with a deadline: returns when `s` is ready or `deadline` has passed.
void wait_until_ready(event_state const& s, std::chrono::steady_clock::time_point deadline);

/// While alive, the calling thread (outside the pool) counts as a thread that waits: it
/// does the first PU's share of jobs, so submits do not wake the pool's reserve worker for
/// them (a futex wake-up of a parked thread costs 4-12 us on the development VM, more
/// than a small kernel). For work the caller waits for right away (launch_and_wait, a
/// blocking queue); the reserve is woken when the scope ends if first-PU work is left.
class caller_waits {
 public:
  caller_waits() noexcept;
  ~caller_waits();
  caller_waits(caller_waits const&) = delete;
  caller_waits& operator=(caller_waits const&) = delete;

 private:
  void* pool_ = nullptr;
};

}  // namespace detail

class event {
 public:
  /// An empty event: already complete, nothing to wait for (a queue's starting point).
  event() = default;
  explicit event(std::shared_ptr<detail::event_state> s) : state_(std::move(s)) {}

  /// A new event that its producer completes later.
  static event pending() {
    return event(
        std::allocate_shared<detail::event_state>(detail::event_allocator<detail::event_state>{}));
  }
  static event completed() { return event(); }
  static event failed(std::exception_ptr error) {
    auto e = pending();
    e.state_->complete(std::move(error));
    return e;
  }

  bool ready() const noexcept { return !state_ || state_->ready(); }
  /// Whether the work finished by throwing (false while pending).
  bool has_failed() const noexcept { return state_ && state_->failed_(); }
  std::exception_ptr error() const noexcept { return state_ ? state_->error() : nullptr; }

  /// Blocks until the work completes, helping the pool meanwhile; rethrows its exception.
  void wait() const {
    if (!state_) return;
    if (!state_->ready()) detail::wait_until_ready(*state_);
    if (auto err = state_->error()) std::rethrow_exception(err);
  }

  /// Waits (helping, as wait does) until the work completes or `deadline` passes; returns
  /// whether it completed, rethrowing its exception if it failed. A worker that helps
  /// may return late by the length of the task it was running at the deadline.
  bool wait_until(std::chrono::steady_clock::time_point deadline) const {
    if (!state_) return true;
    if (!state_->ready()) detail::wait_until_ready(*state_, deadline);
    if (!state_->ready()) return false;
    if (auto err = state_->error()) std::rethrow_exception(err);
    return true;
  }
  /// wait_until(now + timeout), saturated: a timeout past the clock's range (`hours::max()`)
  /// waits without a deadline, and a zero, negative or NaN one only looks.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    using clock = std::chrono::steady_clock;
    auto const now = clock::now();
    // In double: `now + hours::max()` overflows the clock's 64-bit count into the past.
    std::chrono::duration<double> const t = timeout;
    if (!(t > std::chrono::duration<double>::zero())) return wait_until(now);
    if (t >= std::chrono::duration<double>(clock::time_point::max() - now))
      return wait_until(clock::time_point::max());
    return wait_until(now + std::chrono::duration_cast<clock::duration>(t));
  }

  /// Runs `fn` once this event completes (in the completing thread, or now). `fn` must
  /// not throw: an exception from it is logged and dropped. Any callable taking no
  /// arguments; captures up to 48 bytes are kept without a heap allocation. A
  /// continuation is not part of the work waited for: `wait` and `ready` may report the
  /// event complete while `fn` is still running in the completing thread, so whatever
  /// `fn` touches must outlive it, and its own effects must be signalled by `fn` itself.
  void then(detail::continuation fn) const {
    if (state_)
      state_->then(std::move(fn));
    else
      fn();
  }

  /// Producer side: tells waiters when the work is expected to end.
  void expect(std::chrono::steady_clock::time_point when) const noexcept {
    if (state_) state_->expect(when);
  }

  /// Producer side: completes the event with success or an exception.
  void complete(std::exception_ptr error = nullptr) const {
    if (state_) state_->complete(std::move(error));
  }

  /// Runtime side: watches the event without keeping it alive (an operation nobody can
  /// complete any more, whose every handle is gone, is not waited for).
  std::weak_ptr<detail::event_state> watch() const noexcept { return state_; }

  /// Producer side: the shared state (null for an empty event), e.g. to attach a
  /// device-side marker with set_native.
  detail::event_state* state() const noexcept { return state_.get(); }

  friend bool operator==(event const&, event const&) = default;

 private:
  std::shared_ptr<detail::event_state> state_;
};

inline void wait(event const& e) {
  e.wait();
}

/// Waits for all events, then rethrows the first failure among them (in order).
inline void wait_all(std::span<event const> events) {
  std::exception_ptr first;
  for (auto const& e : events) {
    try {
      e.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}
inline void wait_all(std::initializer_list<event> events) {
  wait_all(std::span<event const>(events.begin(), events.size()));
}

/// Preconditions for a launch (Phalanx async_after): strata::launch(after(e1, e2), ...).
struct after {
  std::vector<event> events;
  after() = default;
  template <class... E>
  requires(std::same_as<std::remove_cvref_t<E>, event>&&...) explicit after(E&&... e)
      : events{std::forward<E>(e)...} {}
  explicit after(std::vector<event> e) : events(std::move(e)) {}

  bool ready() const noexcept {
    for (auto const& e : events)
      if (!e.ready()) return false;
    return true;
  }
  /// The first failure among the events, if any has failed.
  std::exception_ptr error() const noexcept {
    for (auto const& e : events)
      if (auto err = e.error()) return err;
    return nullptr;
  }
};

/// An event that completes when all `deps` have (failing with the first failure).
event when_all(after const& deps);

namespace detail {
/// Completes `to` when `from` completes, with its error. The continuation does not own
/// `from`, so an event that never completes keeps nothing alive through it.
void complete_with(event const& from, event const& to);
}  // namespace detail

}  // namespace strata
