// An in-order queue bound to a place (Alpaka §3.4.5 streams): each launch or copy starts
// after the previous one has completed, without blocking the caller.
#pragma once

#include <strata/exec/copy.hpp>
#include <strata/exec/launch.hpp>

#include <mutex>
#include <utility>

namespace strata {

class queue {
 public:
  explicit queue(target where) : where_(std::move(where)) { detail::resolve(where_); }

  template <shape_type S, class Kernel, class... Args>
  event launch(S const& s, Kernel&& kernel, Args&&... args) {
    return enqueue([&](event const& previous) {
      return strata::launch(after(previous), where_, s, std::forward<Kernel>(kernel),
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
    std::lock_guard lock(mutex_);
    return last_;
  }
  target const& where() const noexcept { return where_; }

 private:
  // Takes the operation's place in the order under the lock and starts it outside it: a
  // kernel that runs inline (serial backend) may use the queue itself.
  template <class Start>
  event enqueue(Start&& start) {
    auto mine = event::pending();
    event previous;
    {
      std::lock_guard lock(mutex_);
      previous = std::exchange(last_, mine);
    }
    try {
      auto inner = start(previous);
      inner.then([inner, mine] { mine.complete(inner.error()); });
    } catch (...) {
      mine.complete(std::current_exception());
      throw;
    }
    return mine;
  }

  target where_;
  mutable std::mutex mutex_;
  event last_;
};

}  // namespace strata
