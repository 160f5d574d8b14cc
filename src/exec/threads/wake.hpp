// The one sleep/wake mechanism of the runtime (issue 12): every thread that blocks in
// Strata — an idle worker, a worker waiting inside a task, a thread in event::wait or
// drain, a task_group join — parks on its own `waiter`, and every producer that makes work
// or a completion visible wakes the waiters registered for it.
//
// A waiter is an event count of one thread: `prepare` reads its sequence number; the
// thread then registers where producers will look (a worker's sleeping bit, an event's
// wait list, the pool's list of external waiters), re-checks every condition it waits
// for, and either cancels (something is there) or `commit`s, which sleeps only while the
// sequence number is unchanged. A producer publishes its work, then (seq_cst fence) looks
// at the registrations and `notify`s: it bumps the number first, so a notification that
// falls between the re-check and the sleep makes the futex wait return at once — none is
// lost, on x86 or on weak memory models (both sides fence; Dekker's pattern).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace strata::detail {

struct alignas(64) waiter {
  std::atomic<std::uint32_t> seq{0};
  std::atomic<std::uint32_t> in_futex{0};  // a notify needs the system call only then
  // Links in wait lists, under each list's lock: one set for an event's list, one for
  // the pool's list of external waiters (a thread waiting on an event is on both).
  struct hook {
    waiter* next = nullptr;
    waiter* prev = nullptr;
    bool linked = false;
  };
  hook on_event, on_pool;

  /// The key for commit. Call before the last re-check of what the thread waits for.
  std::uint32_t prepare() noexcept {
    auto key = seq.load(std::memory_order_acquire);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return key;
  }
  /// Sleeps until notified since `prepare` returned `key` (at once if it already was),
  /// or until `deadline` (if not zero) has passed. Spurious returns are allowed: callers
  /// re-check their condition in a loop.
  void commit(std::uint32_t key, std::chrono::steady_clock::time_point deadline = {}) noexcept;
  /// Wakes the thread if it sleeps in commit (or makes its next commit return).
  void notify() noexcept;
};

/// The calling thread's waiter (one per thread, for the life of the thread).
waiter& this_waiter() noexcept;

/// Lists of waiters under a lock (an event's under the event's own mutex), kept as a
/// head pointer so that the public event_state can hold one; `h` picks the links.
inline void link(waiter*& head, waiter& w, waiter::hook waiter::*h) noexcept {
  auto& l = w.*h;
  l.prev = nullptr;
  l.next = head;
  if (head) (head->*h).prev = &w;
  head = &w;
  l.linked = true;
}
inline void unlink(waiter*& head, waiter& w, waiter::hook waiter::*h) noexcept {
  auto& l = w.*h;
  if (!l.linked) return;
  if (l.prev)
    (l.prev->*h).next = l.next;
  else
    head = l.next;
  if (l.next) (l.next->*h).prev = l.prev;
  l.next = l.prev = nullptr;
  l.linked = false;
}
/// Notifies every waiter and empties the list. The caller holds the list's lock, so no
/// waiter leaves (and reuses its links) meanwhile; woken waiters re-check and register
/// again if they still have to wait.
inline void notify_all(waiter*& head, waiter::hook waiter::*h) noexcept {
  for (waiter* w = head; w;) {
    auto& l = w->*h;
    waiter* next = l.next;
    l.next = l.prev = nullptr;
    l.linked = false;
    w->notify();
    w = next;
  }
  head = nullptr;
}

}  // namespace strata::detail
