#include "exec/threads/wake.hpp"

#include "exec/spin.hpp"

#include <cerrno>
#include <climits>
#include <ctime>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace strata::detail {
namespace {

#if defined(__linux__)
// The futex system calls directly: std::atomic::wait has no timeout, and a timed park
// is what lets a waiter sleep through emulated work it knows the end of.
void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected,
                timespec const* timeout) noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, timeout,
          nullptr, 0);
}
void futex_wake(std::atomic<std::uint32_t>* word) noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}
#endif

}  // namespace

void waiter::commit(std::uint32_t key, std::chrono::steady_clock::time_point deadline) noexcept {
  // Announce the sleep before re-reading the number; notify bumps the number before
  // looking at the announcement (both seq_cst): either it sees us in the futex and wakes
  // us, or our futex wait sees the new number and does not sleep.
  in_futex.store(1, std::memory_order_seq_cst);
  if (seq.load(std::memory_order_seq_cst) == key) {
#if defined(__linux__)
    if (deadline.time_since_epoch().count() == 0) {
      futex_wait(&seq, key, nullptr);
    } else {
      auto left = deadline - std::chrono::steady_clock::now();
      if (left > std::chrono::nanoseconds(0)) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        timespec t{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
        futex_wait(&seq, key, &t);
        spin::note_timed_wake(deadline);  // learns how late this machine's timeouts fire
      }
    }
#else
    (void)deadline;
    seq.wait(key, std::memory_order_acquire);
#endif
  }
  in_futex.store(0, std::memory_order_relaxed);
}

void waiter::notify() noexcept {
  seq.fetch_add(1, std::memory_order_seq_cst);
  if (in_futex.load(std::memory_order_seq_cst) != 0) {
#if defined(__linux__)
    futex_wake(&seq);
#else
    seq.notify_all();
#endif
  }
}

waiter& this_waiter() noexcept {
  thread_local waiter w;
  return w;
}

}  // namespace strata::detail
