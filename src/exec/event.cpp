#include <strata/exec/event.hpp>

#include "exec/threads/pool.hpp"
#include "exec/threads/wake.hpp"
#include "log.hpp"

#include <string>

namespace strata {
namespace detail {

void event_state::complete(std::exception_ptr error) {
  std::vector<std::function<void()>> run;
  {
    std::lock_guard lock(mutex_);
    if (status_.load(std::memory_order_relaxed) != pending) return;  // completes once
    error_ = std::move(error);
    status_.store(error_ ? failed : done, std::memory_order_release);
    run.swap(continuations_);
    // Under the lock: a woken waiter takes itself off the list under it too, so its
    // links stay valid until every waiter here has been notified.
    notify_all(waiters_, &waiter::on_event);
  }
  // A continuation must not throw; if one does, the others still run and waiters are
  // still woken, and the exception is reported rather than lost silently.
  for (auto& fn : run) {
    try {
      fn();
    } catch (std::exception const& e) {
      log(log_level::info, std::string("an event continuation threw (continuations must not "
                                       "throw): ") +
                               e.what());
    } catch (...) {
      log(log_level::info, "an event continuation threw a non-standard exception");
    }
  }
}

void event_state::then(std::function<void()> fn) {
  {
    std::lock_guard lock(mutex_);
    if (status_.load(std::memory_order_relaxed) == pending) {
      continuations_.push_back(std::move(fn));
      return;
    }
  }
  fn();  // already complete: runs in the caller, whose exceptions are its own
}

bool event_state::add_waiter(waiter& w) {
  std::lock_guard lock(mutex_);
  if (status_.load(std::memory_order_relaxed) != pending) return false;
  link(waiters_, w, &waiter::on_event);
  return true;
}

void event_state::remove_waiter(waiter& w) {
  std::lock_guard lock(mutex_);
  unlink(waiters_, w, &waiter::on_event);
}

}  // namespace detail

event when_all(after const& deps) {
  std::vector<event> pending;
  for (auto const& e : deps.events)
    if (!e.ready()) pending.push_back(e);
  if (pending.empty()) {
    auto err = deps.error();
    return err ? event::failed(err) : event::completed();
  }
  auto result = event::pending();
  struct countdown {
    std::atomic<std::size_t> left;
    after deps;
  };
  auto shared = std::make_shared<countdown>(pending.size(), deps);
  for (auto const& e : pending)
    e.then([shared, result] {
      if (shared->left.fetch_sub(1, std::memory_order_acq_rel) == 1)
        result.complete(shared->deps.error());
    });
  return result;
}

}  // namespace strata
