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
// worker by the whole spin). While dist's progress hook is registered it yields at most
// every spin::poll_yield_interval instead (a yield per empty poll doubled a remote round
// trip).
// `due`, when known, is when the awaited work is expected to end (an emulated transfer):
// the spin lasts until shortly after it instead of parking before it, and yields even
// on a worker: the thread that will complete the work may be waiting for this very core
// (the sim devices' threads outnumber the cores), and a yield hands the core over.
// While it spins it runs the wait hooks (src/exec/wait_hook.hpp): dist's progress every
// round, the devices' hook every round for a thread that yields and every 64 pauses for
// a worker, and at least spin::min_hook_runs rounds before it gives up, however long it
// was descheduled meanwhile. A round in which the progress hook did something moves the
// deadline: a thread keeps polling while messages keep coming (it receives and runs them
// itself: src/dist/engine.cpp). A thread that polled it every round runs the park hook
// when it gives up.
template <class Found>
bool spin_until(Found&& found, std::chrono::steady_clock::time_point due = {}) {
  auto const start = std::chrono::steady_clock::now();
  bool const timed = due.time_since_epoch().count() != 0;
  auto deadline = timed ? std::max(start + spin::before_park, due + spin::before_park)
                        : start + spin::before_park;
  bool const worker = is_pool_worker() && !timed;
  // A worker polls the process hook (dist's progress) every round too: an idle worker
  // that spins because work keeps arriving (remote calls every few microseconds) is the
  // thread that runs that work, and receiving it itself saves the MPI thread's hand-off.
  bool const polls = !worker || has_process_wait_hook();
  int const rounds_per_hook = worker && !polls ? 64 : 1;
  bool const hot = !worker && !timed && has_process_wait_hook();
  auto last_yield = start;
  int const min_rounds = has_wait_hook() ? spin::min_hook_runs * rounds_per_hook : 0;
  for (int n = 1;; ++n) {
    if (found()) return true;
    bool polled = false;  // the progress hook did something
    bool did = false;     // either hook did
    if (worker) {
      spin::relax();
      if (polls) did = polled = run_process_wait_hook();
      if (n % 64 == 0) did = run_device_wait_hook() || did;
    } else {
      did = run_device_wait_hook();
      polled = run_process_wait_hook();
      did = did || polled;
      if (!did && !hot) std::this_thread::yield();
    }
    if (n % rounds_per_hook != 0) continue;
    if (polled) {
      // Polling that finds work keeps the thread polling: it parks before_park after the
      // last thing its progress hook did, not after it began.
      deadline = std::max(deadline, std::chrono::steady_clock::now() + spin::before_park);
      continue;
    }
    if (hot && !did) {
      // A hot poller reads the clock every fourth empty round (a read costs about as much
      // as a poll of MPI on a VM) and yields at most every poll_yield_interval.
      if (n % 4 != 0) continue;
      auto const now = std::chrono::steady_clock::now();
      if (now - last_yield >= spin::poll_yield_interval) {
        std::this_thread::yield();
        last_yield = now;
      }
    }
    if (n >= min_rounds && std::chrono::steady_clock::now() > deadline) {
      // This thread stopped polling: whoever left the polling to it takes it back.
      if (min_rounds && polls) run_wait_park_hook();
      return false;
    }
  }
}

}  // namespace strata::detail
