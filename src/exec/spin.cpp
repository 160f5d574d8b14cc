// The learned lateness of timed sleeps behind spin::expected_margin and spin::sleep_margin
// (src/exec/spin.hpp). Issue 21's "honest sim model at small sizes": a modeled transfer
// or kernel ends on time only if the thread that waits it out wakes before its end.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>

#include "exec/spin.hpp"

namespace strata::detail::spin {
namespace {

using std::chrono::nanoseconds;
using clock = std::chrono::steady_clock;

// A sample counts for at most this much: a thread preempted for milliseconds (a loaded
// CI machine) says nothing about the timer, and margins that long would make waiters
// spin through most of every transfer.
constexpr nanoseconds max_sample = std::chrono::microseconds(500);

std::atomic<std::int64_t> lateness_ns{0};
std::atomic<std::int64_t> yield_ns{0};  // the cheapest of a few timed yields

// Room beyond the learned lateness: the estimate is a high quantile, not the maximum.
nanoseconds with_room(nanoseconds floor) noexcept {
  auto const late = nanoseconds(lateness_ns.load(std::memory_order_relaxed));
  return std::max(floor, late + late / 2 + std::chrono::microseconds(20));
}

}  // namespace

nanoseconds timed_wake_lateness() noexcept {
  return nanoseconds(lateness_ns.load(std::memory_order_relaxed));
}

void note_timed_wake(clock::time_point deadline) noexcept {
  auto const late = clock::now() - deadline;
  if (late < clock::duration::zero()) return;  // woken early: by a notification
  note_lateness(std::chrono::duration_cast<nanoseconds>(late));
}

void note_lateness(nanoseconds late) noexcept {
  auto const sample = std::clamp<std::int64_t>(late.count(), 0, max_sample.count());
  // Rises a quarter of the way to a later sample, falls a 64th of the way to an earlier
  // one: settles at the samples' 16/17 expectile (about the 95th percentile of this VM's
  // timeouts; above it where rare samples are far later, as under load), and follows a
  // machine that becomes slower to wake within a few sleeps.
  auto est = lateness_ns.load(std::memory_order_relaxed);
  std::int64_t next = 0;
  do {
    next = sample > est ? est + (sample - est) / 4 : est - (est - sample) / 64;
  } while (!lateness_ns.compare_exchange_weak(est, next, std::memory_order_relaxed));
}

void calibrate_timed_wakes() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int i = 0; i < 8; ++i) {
      auto const deadline = clock::now() + std::chrono::microseconds(20);
      std::this_thread::sleep_until(deadline);
      note_timed_wake(deadline);
    }
    // The cheapest of a few: what a yield costs when no other thread takes the core
    // (at most 20 us counted: a preempted yield says nothing of the system call).
    nanoseconds cheapest = std::chrono::microseconds(20);
    for (int i = 0; i < 16; ++i) {
      auto const before = clock::now();
      std::this_thread::yield();
      cheapest = std::min(cheapest, std::chrono::duration_cast<nanoseconds>(clock::now() - before));
    }
    yield_ns.store(cheapest.count(), std::memory_order_relaxed);
  });
}

nanoseconds expected_margin() noexcept {
  return with_room(before_expected);
}

nanoseconds sleep_margin() noexcept {
  return with_room(sleep_margin_min);
}

nanoseconds pause_margin() noexcept {
  return pause_margin_min + 2 * nanoseconds(yield_ns.load(std::memory_order_relaxed));
}

}  // namespace strata::detail::spin
