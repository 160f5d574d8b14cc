// An in-order queue bound to a place (Alpaka §3.4.5 streams): each launch, copy, fill or
// memset starts after the previous one has completed, without blocking the caller (a
// non-blocking queue) or before the call returns (a blocking queue, Alpaka's
// QueueBlocking: for debugging, and for code that wants synchronous semantics).
#pragma once

#include <strata/exec/copy.hpp>
#include <strata/exec/launch.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <utility>

namespace strata {

enum class queue_mode { non_blocking, blocking };

/// A handle: copies of a queue are the same queue (as a CUDA stream handle is).
class queue {
 public:
  explicit queue(target where, queue_mode mode = queue_mode::non_blocking)
      : state_(std::make_shared<state>(std::move(where), mode)) {
    detail::resolve(state_->where);
  }

  template <shape_type S, class Kernel, class... Args>
  event launch(S const& s, Kernel&& kernel, Args&&... args) {
    return enqueue([&](event const& previous) {
      return strata::launch(after(previous), state_->where, s, std::forward<Kernel>(kernel),
                            std::forward<Args>(args)...);
    });
  }

  /// Queues a copy (see copy.hpp) after everything queued so far.
  template <class... CopyArgs>
  event copy(CopyArgs&&... args) {
    return enqueue([&](event const& previous) {
      return strata::copy(after(previous), std::forward<CopyArgs>(args)...);
    });
  }

  /// Queues a fill (see copy.hpp) after everything queued so far.
  template <class Dst, class T>
  event fill(Dst const& dst, T const& value) {
    return enqueue(
        [&](event const& previous) { return strata::fill(after(previous), dst, value); });
  }
  /// Queues a memset (see copy.hpp) after everything queued so far.
  template <class Dst>
  event memset(Dst const& dst, unsigned char byte) {
    return enqueue(
        [&](event const& previous) { return strata::memset(after(previous), dst, byte); });
  }
  /// Later operations of this queue start only once `e` (of any queue, device or
  /// producer) has completed, as well as everything queued before (Alpaka's
  /// wait(queue, event)); a failure of `e` fails them. A non-blocking queue does not block
  /// the caller; a blocking queue returns once `e` has completed, as each of its
  /// operations does (so the caller must not be the one to complete `e` later).
  event enqueue_wait(event const& e) {
    return enqueue([&](event const& previous) { return when_all(after(previous, e)); });
  }

  queue_mode mode() const noexcept { return state_->mode; }

  /// Waits for everything launched so far; rethrows the failure of the last launch (a
  /// failure propagates along the queue to every later launch).
  void wait() const { last().wait(); }
  bool ready() const { return last().ready(); }
  event last() const {
    std::lock_guard lock(state_->mutex);
    return state_->last;
  }
  target const& where() const noexcept { return state_->where; }

 private:
  // Takes the operation's place in the order under the lock and starts it outside it: a
  // kernel that runs inline (serial backend) may use the queue itself.
  template <class Start>
  event enqueue(Start&& start) {
    auto mine = event::pending();
    event previous;
    {
      std::lock_guard lock(state_->mutex);
      previous = std::exchange(state_->last, mine);
    }
    try {
      // A blocking queue's caller waits next: it runs the first PU's share itself
      // (launch_and_wait; not while an inline backend runs the kernel in the call).
      std::optional<detail::caller_waits> helping;
      if (state_->mode == queue_mode::blocking && !detail::runs_inline(state_->where))
        helping.emplace();
      detail::complete_with(start(previous), mine);
      if (state_->mode == queue_mode::blocking) mine.wait();
    } catch (...) {
      if (mine.ready()) throw;  // a blocking queue's operation failed: it did run
      // Rejected at submission (an argument error): the call takes no place in the order
      // and the queue goes on from where it was (issue 21).
      detail::complete_with(previous, mine);
      throw;
    }
    return mine;
  }

  struct state {
    state(target w, queue_mode m) : where(std::move(w)), mode(m) {}
    target where;
    queue_mode mode;
    std::mutex mutex;
    event last;
  };
  std::shared_ptr<state> state_;
};

}  // namespace strata
