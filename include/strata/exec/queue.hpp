// An in-order queue bound to a place (Alpaka §3.4.5 streams): each launch or copy starts
// after the previous one has completed, without blocking the caller.
#pragma once

#include <strata/exec/copy.hpp>
#include <strata/exec/launch.hpp>

#include <memory>
#include <mutex>
#include <utility>

namespace strata {

/// A handle: copies of a queue are the same queue (as a CUDA stream handle is).
class queue {
 public:
  explicit queue(target where) : state_(std::make_shared<state>(std::move(where))) {
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
      detail::complete_with(start(previous), mine);
    } catch (...) {
      // Rejected at submission (an argument error): the call takes no place in the order
      // and the queue goes on from where it was (issue 21).
      detail::complete_with(previous, mine);
      throw;
    }
    return mine;
  }

  struct state {
    explicit state(target w) : where(std::move(w)) {}
    target where;
    std::mutex mutex;
    event last;
  };
  std::shared_ptr<state> state_;
};

}  // namespace strata
