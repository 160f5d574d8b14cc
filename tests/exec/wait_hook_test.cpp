// The wait hook (src/exec/wait_hook.hpp): every thread that waits runs it while it spins.
// strata::dist registers its MPI progress round there, so a thread waiting for a remote
// reply receives it itself. Here the awaited event completes only from inside the hook:
// a waiter that did not run it would park forever (the guard fails the test).
#include <gtest/gtest.h>

#include <strata/strata.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "exec/threads/pool.hpp"
#include "exec/wait_hook.hpp"
#include "support/hang_guard.hpp"

namespace strata {
namespace {

using testing_support::finishes_within;
constexpr auto limit = std::chrono::seconds(60);

std::atomic<int> hook_calls{0};
event* gate = nullptr;  // set before the hook is registered, cleared after

bool complete_on_tenth_call() noexcept {
  if (hook_calls.fetch_add(1) + 1 == 10) gate->complete();
  return true;
}

// Registers the hooks for one test and removes them, whatever happens.
struct hooked {
  event e = event::pending();
  explicit hooked(detail::wait_hook h = &complete_on_tenth_call,
                  detail::wait_park_hook park = nullptr) {
    hook_calls = 0;
    gate = &e;
    detail::set_wait_park_hook(park);
    detail::set_wait_hook(h);
  }
  ~hooked() {
    detail::set_wait_hook(nullptr);
    detail::set_wait_park_hook(nullptr);
    gate = nullptr;
  }
};

TEST(WaitHook, AThreadOutsideThePoolRunsItWhileWaiting) {
  runtime rt;
  hooked h;
  finishes_within(limit, "an external wait that needs the hook", [&] {
    std::thread waiter([&] { h.e.wait(); });
    waiter.join();
  });
  EXPECT_GE(hook_calls.load(), 10);
}

TEST(WaitHook, AKernelWaitingInsideTheExecutorRunsIt) {
  runtime rt;
  auto first = rt.machine().descendants(place_type::pu).front();
  hooked h;
  finishes_within(limit, "a wait inside a kernel that needs the hook",
                  [&] { launch(first, grid(1), [&](auto const&) { h.e.wait(); }).wait(); });
  EXPECT_GE(hook_calls.load(), 10);
}

TEST(WaitHook, AWaitWithoutAnExecutorRunsIt) {
  hooked h;  // no runtime: no pool to help, the waiter would park at once
  finishes_within(limit, "a wait without a pool that needs the hook", [&] { h.e.wait(); });
  EXPECT_GE(hook_calls.load(), 10);
}

// The park hook (dist's MPI thread naps while a waiter polls and must poll again when it
// parks): a waiter that runs the hook every round and stops spinning runs it. Here the
// event completes only from the park hook, so a waiter that parked without it would
// sleep forever.
std::atomic<int> park_calls{0};
bool no_work() noexcept {
  return false;
}
void complete_on_park() noexcept {
  if (park_calls.fetch_add(1) == 0) gate->complete();
}

struct park_hooked : hooked {
  park_hooked() : hooked(&no_work, &complete_on_park) { park_calls = 0; }
};

TEST(WaitHook, AThreadOutsideThePoolRunsTheParkHookBeforeItParks) {
  runtime rt;
  park_hooked h;
  finishes_within(limit, "an external wait that needs the park hook", [&] {
    std::thread waiter([&] { h.e.wait(); });
    waiter.join();
  });
  EXPECT_GE(park_calls.load(), 1);
}

TEST(WaitHook, AWaitWithoutAnExecutorRunsTheParkHookBeforeItParks) {
  park_hooked h;
  finishes_within(limit, "a wait without a pool that needs the park hook", [&] { h.e.wait(); });
  EXPECT_GE(park_calls.load(), 1);
}

// Pool workers do not count as pollers (dist's MPI thread naps only for threads outside
// the pool, which poll every round): a worker that gives up a spin does not run the park
// hook, also not a timed spin through an expected end (where it polls every round too).
std::atomic<int> worker_park_calls{0};
void count_worker_parks() noexcept {
  if (detail::is_pool_worker()) worker_park_calls.fetch_add(1);
}

TEST(WaitHook, APoolWorkerDoesNotRunTheParkHook) {
  runtime rt;
  auto pus = rt.machine().descendants(place_type::pu);
  if (pus.size() < 2) GTEST_SKIP() << "needs a second PU (a worker that is not the first's)";
  worker_park_calls = 0;
  hooked h(&no_work, &count_worker_parks);
  auto& e = h.e;
  // Expected to end soon (as an emulated transfer announces): the worker parks until just
  // before, then spins through the expected end, a timed spin, and parks again.
  e.expect(std::chrono::steady_clock::now() + std::chrono::milliseconds(1));
  std::thread completer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    e.complete();
  });
  finishes_within(limit, "a worker's wait",
                  [&] { launch(pus[1], grid(1), [&](auto const&) { e.wait(); }).wait(); });
  completer.join();
  EXPECT_EQ(worker_park_calls.load(), 0);
}

// A round in which the hook did something moves the thread's park deadline: a thread that
// keeps receiving messages keeps polling (and the MPI thread keeps napping). Here the hook
// has work until the waiter has returned (the event completes 20 ms in), far beyond
// spin::before_park: the waiter must not park (and run the park hook) meanwhile.
std::atomic<bool> busy_until_done{true};
bool always_work() noexcept {
  hook_calls.fetch_add(1, std::memory_order_relaxed);
  return busy_until_done.load();
}
thread_local bool the_waiter = false;  // idle pool workers poll (and park) too
void count_parks() noexcept {
  if (the_waiter) park_calls.fetch_add(1);
}

TEST(WaitHook, AThreadWhosePollsFindWorkKeepsPolling) {
  runtime rt;
  park_calls = 0;
  busy_until_done = true;
  hooked h(&always_work, &count_parks);
  std::thread completer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    h.e.complete();
  });
  finishes_within(limit, "a wait whose hook keeps finding work", [&] {
    std::thread waiter([&] {
      the_waiter = true;
      h.e.wait();
    });
    waiter.join();
  });
  completer.join();
  busy_until_done = false;  // only now: a waiter descheduled past its deadline after an
                            // empty poll would park, rightly, on its way out
  EXPECT_EQ(park_calls.load(), 0) << "the waiter parked while its polls found work";
  EXPECT_GT(hook_calls.load(), 32);
}

// ... but not while the pool has work (a job runs): a thread that kept its core then would
// take it from the workers, so it parks as before and leaves the polling to the MPI thread.
// Here the event completes only when the waiter parks.
void complete_on_waiter_park() noexcept {
  if (the_waiter && park_calls.fetch_add(1) == 0) gate->complete();
}

TEST(WaitHook, AThreadWhosePollsFindWorkParksWhileThePoolHasWork) {
  runtime rt;
  auto pus = rt.machine().descendants(place_type::pu);
  if (pus.size() < 2) GTEST_SKIP() << "needs a worker that is not the first PU's";
  park_calls = 0;
  busy_until_done = true;
  hooked h(&always_work, &complete_on_waiter_park);
  std::atomic<bool> release{false};
  auto busy = launch(pus.back(), grid(1), [&](auto const&) {
    while (!release.load()) std::this_thread::yield();
  });
  finishes_within(limit, "a wait beside a running job, whose hook keeps finding work", [&] {
    std::thread waiter([&] {
      the_waiter = true;
      h.e.wait();
    });
    waiter.join();
  });
  release = true;
  busy.wait();
  busy_until_done = false;
  EXPECT_GE(park_calls.load(), 1);
}

}  // namespace
}  // namespace strata
