// The task side of the runtime's one pool (Ripple §6, Algorithms 1-4): per-worker
// Chase-Lev deques, an injection queue for threads that are not workers, round-robin
// stealing, and CPU-priority and device-priority workers (Ripple §6.2).
//
// Work is grouped in arenas, one per set of host PUs a graph runs on (all PUs by default,
// the first PU alone for a 1-thread benchmark): a worker runs an arena's tasks only if
// its PU is in the set, so a graph never runs wider than asked. Distinct sets are few.
#pragma once

#include <strata/task/deque.hpp>
#include <strata/task/graph.hpp>
#include <strata/task/task_group.hpp>

#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace strata::detail {
class pool;
struct slot_set;
}  // namespace strata::detail

namespace strata::task::detail {

using strata::detail::slot_set;

/// Gives back the counts the calling worker holds for a task group (see "credits" in
/// src/task/scheduler.cpp). Every thread calls it before it parks.
void flush_credits() noexcept;

struct arena {
  arena(slot_set const* s, int slot_count, int device_workers);

  slot_set const* slots;
  std::vector<int> members;                                // worker slots, ascending
  std::vector<int> member_of_slot;                         // slot -> index in members, or -1
  std::vector<char> device_priority;                       // per member: checks device work first
  std::vector<std::unique_ptr<ws_deque<node*>>> cpu, dev;  // per member
  // Work from threads that own no deque here (the thread that calls run, device
  // completions): a locked queue, rare next to the deques.
  std::mutex injected_mutex;
  std::deque<node*> injected_cpu, injected_dev;
  std::atomic<long> injected{0};
};

class scheduler {
 public:
  scheduler(strata::detail::pool& p, int slots, int devices);
  ~scheduler();

  /// Starts a run of `g` (roots pushed) on the PUs of `slots`.
  void start(graph_state& g, slot_set const* slots);
  /// Hands a spawned task to the pool: the running task's own deque, else injected into
  /// the arena of every host PU.
  void spawn(dyn_task* t);
  /// Wakes another parked member of the slot's arenas if there is work there (a worker
  /// that was woken for tasks leaves a nested wait without looking for them).
  void pass_on(int slot);
  /// Worker `slot` runs tasks until it finds none; returns whether it ran any.
  bool work(int slot);
  /// Runs at most one task chain (a worker waiting inside a task helps this way).
  bool help(int slot);
  /// Runs the tasks of `group` at the bottom of the calling worker's own deque in the
  /// arena of the task it runs (a join's children); returns whether it ran any.
  bool run_own(task_group const* group);
  /// Whether worker `slot` could find a task now (racy; for deciding to sleep).
  bool available(int slot) const noexcept;
  /// Graph runs started and not yet complete (the runtime drains them at shutdown).
  long active_runs() const noexcept { return active_runs_.load(std::memory_order_acquire); }

 private:
  friend struct access;
  arena& arena_for(slot_set const* s);
  bool find_and_run(int slot, bool one);
  node* take(arena& a, int m);
  void run_chain(arena& a, int m, node* n, bool one);
  bool run_body(node* n);
  node* execute(node* n);
  node* run_range(arena& a, int m, node* tagged);
  node* finish(node* n);
  void push(node* n);
  void inject(arena& a, node* n, bool device);
  void sink_done(graph_state& g);
  void complete_run(graph_state& g);
  void async_done(node* n, std::exception_ptr err);
  node* pass_over(graph_state& g);
  node* task_done(graph_state& g);
  void start_pass(graph_state& g);
  arena& arena_of(node* n) noexcept;
  void run_dyn(dyn_task* t);

  strata::detail::pool& pool_;
  int const slots_;
  int const device_workers_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<arena>> owned_;
  std::array<std::atomic<arena*>, 64> arenas_{};
  std::atomic<int> arena_count_{0};
  std::atomic<long> active_runs_{0};
};

}  // namespace strata::task::detail
