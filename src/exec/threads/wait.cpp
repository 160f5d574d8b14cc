// Waiting on the threads backend: the wait hook, a pool's drain, waits for an event
// (helping the pool meanwhile) and waits without a pool. Every one spins briefly
// (spin_wait.hpp) and then parks on the calling thread's waiter (wake.hpp): the one
// sleep/wake mechanism, woken by whatever makes work or a completion visible.
#include "exec/threads/pool.hpp"
#include "exec/threads/spin_wait.hpp"
#include "exec/threads/wake.hpp"
#include "exec/wait_hook.hpp"

#include "task/scheduler.hpp"

#include <chrono>
#include <cstdint>
#include <mutex>

namespace strata::detail {
namespace {
std::atomic<wait_hook> the_wait_hook{nullptr};
std::atomic<wait_hook> the_device_wait_hook{nullptr};
}  // namespace

void set_wait_hook(wait_hook h) noexcept {
  the_wait_hook.store(h, std::memory_order_release);
}

void set_device_wait_hook(wait_hook h) noexcept {
  the_device_wait_hook.store(h, std::memory_order_release);
}

bool run_process_wait_hook() noexcept {
  auto h = the_wait_hook.load(std::memory_order_acquire);
  return h && h();
}

bool run_device_wait_hook() noexcept {
  auto d = the_device_wait_hook.load(std::memory_order_acquire);
  return d && d();
}

bool run_wait_hook() noexcept {
  bool const device = run_device_wait_hook();
  return run_process_wait_hook() || device;
}

namespace {
std::atomic<wait_park_hook> the_park_hook{nullptr};
}  // namespace

void set_wait_park_hook(wait_park_hook h) noexcept {
  the_park_hook.store(h, std::memory_order_release);
}

void run_wait_park_hook() noexcept {
  if (auto h = the_park_hook.load(std::memory_order_acquire)) h();
}

bool has_process_wait_hook() noexcept {
  return the_wait_hook.load(std::memory_order_relaxed) != nullptr;
}

bool has_wait_hook() noexcept {
  return the_wait_hook.load(std::memory_order_relaxed) != nullptr ||
         the_device_wait_hook.load(std::memory_order_relaxed) != nullptr;
}

void notify_progress() noexcept {
  if (auto* p = pool::instance()) p->notify_external();
}

namespace {
// Work that only a wait hook finds (a sim kernel queued behind the running one, which a
// unit waiting inside that kernel runs): its producer bumps the epoch, and a waiter that
// saw the epoch before its last hook round does not sleep if it changed since.
std::atomic<std::uint64_t> hook_epoch{0};
// Threads parked without a pool while a hook is registered: notify_hook_work wakes them.
std::mutex hook_waiters_mutex;
waiter* hook_waiters = nullptr;
std::atomic<int> hook_parked{0};
}  // namespace

void notify_hook_work() noexcept {
  hook_epoch.fetch_add(1, std::memory_order_seq_cst);
  if (auto* p = pool::instance()) p->notify_external();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (hook_parked.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(hook_waiters_mutex);
  notify_all(hook_waiters, &waiter::on_pool);
}

void pool::drain() {
  int const slot = current_slot();
  bool const worker = is_pool_worker();
  bool const external = !worker;
  if (external) enter_helping();
  draining_.fetch_add(1, std::memory_order_seq_cst);
  struct uncount {
    pool* p;
    bool on;
    ~uncount() {
      if (on) p->leave_helping();
    }
  } counted{this, external};
  struct undrain {
    std::atomic<int>& n;
    ~undrain() { n.fetch_sub(1, std::memory_order_relaxed); }
  } draining{draining_};
  while (!idle()) {
    if (help(slot, nullptr)) continue;
    if (worker && tasks_->help(slot)) continue;
    auto const seen = submits_.load(std::memory_order_acquire);
    auto work = [&] {
      return idle() || submits_.load(std::memory_order_acquire) != seen ||
             (worker && tasks_->available(slot));
    };
    if (spin_until(work)) continue;
    park(slot, nullptr, [&] {
      return idle() || (worker ? has_job(slot) : has_shared_job(slot)) ||
             (worker && tasks_->available(slot));
    });
  }
}

void pool::wait(event_state& s, std::chrono::steady_clock::time_point until) {
  bool const timed = until.time_since_epoch().count() != 0;
  auto expired = [&] { return timed && std::chrono::steady_clock::now() >= until; };
  int const slot = current_slot();
  bool const worker = is_pool_worker();
  if (!worker) enter_helping();
  struct uncount {
    pool* p;
    bool on;
    ~uncount() {
      if (on) p->leave_helping();
    }
  } counted{this, !worker};
  auto& tasks = *tasks_;
  while (!s.ready() && !expired()) {
    auto const epoch = hook_epoch.load(std::memory_order_acquire);
    // What s waits for may be a task group's joiner: its counts go back first.
    task::detail::flush_credits();
    if (help(slot, &s)) continue;
    // A worker waiting inside a task runs other tasks meanwhile, one chain at a time, so
    // nested waits cannot deadlock the pool; other threads leave tasks to the workers of
    // the PUs a graph was given (they would oversubscribe them).
    if (worker && tasks.help(slot)) continue;
    auto const seen = submits_.load(std::memory_order_acquire);
    auto work = [&] {
      return s.ready() || submits_.load(std::memory_order_acquire) != seen ||
             (worker && tasks.available(slot));
    };
    // Work with a known end (an emulated transfer) is parked through until shortly
    // before it; any notification wakes the thread earlier.
    std::chrono::steady_clock::time_point deadline{}, due{};
    if (auto when = s.expected(); when.time_since_epoch().count() != 0) {
      auto wake = when - spin::expected_margin();
      if (std::chrono::steady_clock::now() < wake)
        deadline = wake;
      else
        due = when;
    }
    if (timed && (deadline.time_since_epoch().count() == 0 || until < deadline)) deadline = until;
    if ((timed || deadline.time_since_epoch().count() == 0) && spin_until(work, due)) continue;
    bool const claimed = park(
        slot, &s,
        [&] {
          return s.ready() || (worker ? has_job(slot) : has_shared_job(slot)) ||
                 (worker && tasks.available(slot)) ||
                 hook_epoch.load(std::memory_order_seq_cst) != epoch;
        },
        deadline);
    // A task push chose this worker to wake; if it leaves now, another must look.
    if (claimed && s.ready()) tasks.pass_on(slot);
  }
}

void wait_until_ready(event_state const& s) {
  wait_until_ready(s, {});
}

void wait_until_ready(event_state const& s, std::chrono::steady_clock::time_point until) {
  auto& state = const_cast<event_state&>(s);  // registers a waiter on it; no state change
  if (auto* p = pool::instance()) return p->wait(state, until);
  // No pool: nothing to help with; park until the completion wakes this thread. Work
  // with a known end (an emulated transfer) is parked through until shortly before it
  // and then spun for, as in pool::wait: a futex wake-up costs microseconds on a VM,
  // the size of a small halo copy's whole model.
  auto& w = this_waiter();
  bool const timed = until.time_since_epoch().count() != 0;
  while (!state.ready() && !(timed && std::chrono::steady_clock::now() >= until)) {
    auto const epoch = hook_epoch.load(std::memory_order_acquire);
    auto deadline = until;
    if (auto when = state.expected(); when.time_since_epoch().count() != 0) {
      auto const wake = when - spin::expected_margin();
      if (std::chrono::steady_clock::now() >= wake) {
        if (spin_until([&] { return state.ready(); }, when)) return;
      } else if (!timed || wake < until) {
        deadline = wake;
      }
    } else if (has_wait_hook() && spin_until([&] { return state.ready(); })) {
      return;  // completed while this thread ran the hook (a remote reply, say)
    }
    auto const key = w.prepare();
    if (!state.add_waiter(w)) return;
    bool const hooked = has_wait_hook();
    if (hooked) {
      std::lock_guard lock(hook_waiters_mutex);
      link(hook_waiters, w, &waiter::on_pool);
      hook_parked.fetch_add(1, std::memory_order_seq_cst);
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!state.ready() && hook_epoch.load(std::memory_order_seq_cst) == epoch)
      w.commit(key, deadline);
    if (hooked) {
      std::lock_guard lock(hook_waiters_mutex);
      unlink(hook_waiters, w, &waiter::on_pool);
      hook_parked.fetch_sub(1, std::memory_order_relaxed);
    }
    state.remove_waiter(w);
  }
}

}  // namespace strata::detail
