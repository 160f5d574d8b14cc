// An in-order queue bound to a place (Alpaka §3.4.5 streams): each launch starts after
// the previous one has completed, without blocking the caller.
#pragma once

#include <strata/exec/launch.hpp>

#include <mutex>

namespace strata {

class queue {
 public:
  explicit queue(target where) : where_(std::move(where)) { detail::resolve(where_); }

  template <shape_type S, class Kernel, class... Args>
  event launch(S const& s, Kernel&& kernel, Args&&... args) {
    std::lock_guard lock(mutex_);
    last_ = strata::launch(after(last_), where_, s, std::forward<Kernel>(kernel),
                           std::forward<Args>(args)...);
    return last_;
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
  target where_;
  mutable std::mutex mutex_;
  event last_;
};

}  // namespace strata
