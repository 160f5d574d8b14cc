// The spin half of every wait of the threads backend: a thread looks for what it waits
// for (and runs the wait hook) for a short while before it parks on its waiter
// (wake.hpp). Shared by idle workers (pool.cpp) and waiting threads (wait.cpp).
#pragma once

#include "exec/spin.hpp"
#include "exec/threads/pool.hpp"
#include "exec/wait_hook.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace strata::detail {

// Spins until `found()` or spin::before_park has passed; returns whether something was found.
// A thread that is not a worker yields instead of pausing: it is not pinned, and may sit
// on the very PU whose worker it waits for (a spinning waiter there would delay that
// worker by the whole spin). While dist's progress hook finds messages and the pool is
// idle, it yields less often and spins on (below).
// `due`, when known, is when the awaited work is expected to end (an emulated transfer):
// the spin lasts until shortly after it instead of parking before it, and yields even
// on a worker: the thread that will complete the work may be waiting for this very core
// (the sim devices' threads outnumber the cores), and a yield hands the core over;
// within spin::pause_margin() of `due` it pauses instead (near_due).
// While it spins it runs the wait hook (src/exec/wait_hook.hpp): every round for a
// thread that yields, every 64 pauses for a worker, and at least spin::min_hook_runs
// times before it gives up, however long it was descheduled meanwhile; a thread that ran
// it every round runs the park hook when it gives up.
// When the calling thread's progress polls last found something (one per thread: a local
// of the template would be one per instantiation, i.e. per waiting site).
inline std::chrono::steady_clock::time_point& last_poll_found() noexcept {
  thread_local std::chrono::steady_clock::time_point t{};
  return t;
}

// Whether `t` is within spin::pause_margin() of now (a clock read: timed spins only).
inline bool near_due(std::chrono::steady_clock::time_point t) noexcept {
  auto const d = std::chrono::steady_clock::now() - t;
  auto const margin = spin::pause_margin();
  return d < margin && d > -margin;
}

template <class Found>
bool spin_until(Found&& found, std::chrono::steady_clock::time_point due = {}) {
  auto const start = std::chrono::steady_clock::now();
  bool const timed = due.time_since_epoch().count() != 0;
  auto deadline = timed ? std::max(start + spin::before_park, due + spin::before_park)
                        : start + spin::before_park;
  bool const worker = is_pool_worker() && !timed;
  int const rounds_per_hook = worker ? 64 : 1;  // a power of two (masked, not divided)
  int const min_rounds = has_wait_hook() ? spin::min_hook_runs * rounds_per_hook : 0;
  // A thread outside the pool while dist's progress hook is registered ("dist" below):
  // its spin lasts while its polls find messages, and while it is hot (its polls found
  // one within the last spin::poll_hot_window, in this spin or an earlier one) it yields
  // only every poll_yield_interval; a cold one yields after every empty round, as without
  // dist, so that a thread waiting for local work leaves its core to that work.
  bool const dist = !worker && !timed && has_process_wait_hook();
  auto& last_found = last_poll_found();
  // Hot also needs an idle pool: a thread that keeps its core while jobs or tasks run
  // (more threads than cores) takes it from them.
  auto* const p = dist ? pool::instance() : nullptr;
  auto const pool_busy = [p] { return p && p->has_work(); };
  bool hot = dist && start - last_found < spin::poll_hot_window && !pool_busy();
  auto last_yield = start;
  for (int n = 1;; ++n) {
    if (found()) return true;
    if (worker) {
      spin::relax();
      if (n % 64 == 0 && run_wait_hook()) continue;
    } else {
      bool const device = run_device_wait_hook();
      bool const polled = run_process_wait_hook();
      if (polled) {
        // What the poll found may be what this thread waits for (a remote call's reply):
        // it returns at once, without the clock read (a fifth of a round trip's software on
        // a VM), taking this spin's start as the time of the find: earlier than it was, so
        // never hotter (a later spin that took the find's time as its own start stayed hot
        // through a 60 us copy of the pool's workers and slowed it 3-fold: dist-halo).
        if (found()) {
          last_found = std::max(last_found, start);  // (a find earlier in this spin: later)
          return true;
        }
        // Polling that finds work keeps the thread polling: it parks before_park after the
        // last round that did something, not after its spin began (unless the pool has
        // work: then the thread leaves the polling to the MPI thread as before).
        auto const now = std::chrono::steady_clock::now();
        last_found = now;
        hot = dist && !pool_busy();
        if (hot) {
          deadline = std::max(deadline, now + spin::before_park);
          continue;
        }
      } else if (!device) {
        if (timed && near_due(due)) {
          // The work is due about now: a yield (a system call, 1.2 us on session 62's VM)
          // would see its completion that much late; pausing, within microseconds of
          // the end, keeps no core long from the thread that completes it.
          spin::relax();
        } else if (!hot) {
          std::this_thread::yield();  // (only a poll that finds something makes it hot)
        } else if (n % 4 == 0) {
          // A hot poller reads the clock every fourth empty round (a read costs about as
          // much as a poll of MPI on a VM).
          auto const now = std::chrono::steady_clock::now();
          hot = now - last_found < spin::poll_hot_window && !pool_busy();
          if (!hot || now - last_yield >= spin::poll_yield_interval) {
            std::this_thread::yield();
            last_yield = now;
          }
        } else {
          continue;
        }
      }
    }
    if ((n & (rounds_per_hook - 1)) == 0 && n >= min_rounds &&
        std::chrono::steady_clock::now() > deadline) {
      // This thread stopped polling (timed spins of workers poll every round too, but
      // only threads outside the pool count as pollers: dist's try_progress).
      if (min_rounds && !is_pool_worker()) run_wait_park_hook();
      return false;
    }
  }
}

}  // namespace strata::detail
