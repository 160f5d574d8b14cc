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
  std::vector<std::size_t> waiting;
  for (std::size_t i = 0; i < deps.events.size(); ++i)
    if (!deps.events[i].ready()) waiting.push_back(i);
  if (waiting.empty()) {
    auto err = deps.error();
    return err ? event::failed(err) : event::completed();
  }
  // One event still pending and no failure among the others: that event is the result
  // (the same completion and error), without a new event and continuation per call —
  // halo exchanges and graph passes join single events often.
  if (waiting.size() == 1 && !deps.error()) return deps.events[waiting.front()];
  auto result = event::pending();
  // Expected to end when the last of its parts is (if each says when): a waiter on the
  // join of emulated transfers spins for their end instead of parking.
  std::chrono::steady_clock::time_point due{};
  for (auto i : waiting) {
    auto const when = deps.events[i].state()->expected();
    if (when.time_since_epoch().count() == 0) {
      due = {};
      break;
    }
    due = std::max(due, when);
  }
  if (due.time_since_epoch().count() != 0) result.expect(due);
  // The first failure in the order of `deps`: each event's error lands in its slot. The
  // continuations hold no event (a continuation that owned its own event would keep it,
  // and whatever waits on it, alive forever if it never completes); each reads its
  // event's state, alive while it runs its continuations.
  struct countdown {
    std::atomic<std::size_t> left;
    std::vector<std::exception_ptr> errors;
  };
  auto shared = std::make_shared<countdown>();
  shared->left.store(waiting.size(), std::memory_order_relaxed);
  shared->errors.resize(deps.events.size());
  for (std::size_t i = 0; i < deps.events.size(); ++i) shared->errors[i] = deps.events[i].error();
  for (auto i : waiting) {
    detail::event_state* state = deps.events[i].state();
    deps.events[i].then([shared, result, state, i] {
      shared->errors[i] = state->error();
      if (shared->left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::exception_ptr first;
        for (auto const& err : shared->errors)
          if (err && !first) first = err;
        result.complete(first);
      }
    });
  }
  return result;
}

namespace detail {

void complete_with(event const& from, event const& to) {
  detail::event_state* state = from.state();
  if (!state) return to.complete();
  from.then([state, to] { to.complete(state->error()); });
}

}  // namespace detail

}  // namespace strata
