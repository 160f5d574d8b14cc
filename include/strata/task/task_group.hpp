// Dynamic tasking (issue 12): a running task spawns child tasks and joins them, to any
// depth, on the same work-stealing pool as graphs (Ripple §6). Like a Taskflow subflow or
// a oneTBB task_group:
//
//   void tree(int depth) {
//     if (depth == 0) return leaf();
//     strata::task_group children;
//     children.spawn([=] { tree(depth - 1); });  // may run on another worker
//     tree(depth - 1);
//     children.join();  // runs other tasks meanwhile; rethrows a child's exception
//   }
//
// A graph node whose body takes a `task_group&` is a subflow: it spawns into the group and
// the node completes once the group has joined (the node joins it after the body). Spawned
// tasks are deferred (never run inside `spawn`), so children may wait on each other;
// `spawn(strata::inline_if_busy, fn)` waives that for tasks that never wait for a later
// sibling, and runs them at once while the worker has work queued for thieves (the
// cutoff OpenMP runtimes apply to every task; Cilk's work-first spawn). Inside a task,
// spawned tasks go to the worker's own deque (its thieves take the oldest);
// from any other thread they are injected into the pool's arena of every host PU.
// `join` helps: a worker runs ready tasks until the group is done, then parks on the one
// wake mechanism of the runtime (src/exec/threads/wake.hpp); other threads park.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

namespace strata {

class task_group;

namespace task::detail {

// A spawned task: one 64-byte block from its thread's free list (small closures in
// place), so a spawn allocates nothing in the steady state.
struct alignas(64) dyn_task {
  static constexpr std::size_t inline_size = 40;
  void (*call)(dyn_task&, bool run) = nullptr;  // runs (if `run`) and destroys the closure
  task_group* group = nullptr;
  dyn_task* next_free = nullptr;
  alignas(8) unsigned char storage[inline_size];
};
static_assert(sizeof(dyn_task) == 64);

dyn_task* allocate_task();
/// Counts the task into its group and hands it to the pool (own deque inside a task, else
/// injected).
void spawn_task(dyn_task* t);

/// Whether a spawn with inline_if_busy runs its task now: the caller is a worker running
/// a task whose own deque already holds work for its thieves (any, when nobody else can
/// steal), and fewer than a bounded number of such runs are nested on its stack. When it
/// returns true the caller runs the task, then calls leave_inline.
bool enter_inline() noexcept;
void leave_inline() noexcept;

}  // namespace task::detail

/// The tag of task_group::spawn's cutoff form (see there).
struct inline_if_busy_t {
  explicit constexpr inline_if_busy_t() = default;
};
/// Lets task_group::spawn run the task at once when the worker has enough queued work.
inline constexpr inline_if_busy_t inline_if_busy{};

class task_group {
 public:
  task_group() = default;
  task_group(task_group const&) = delete;
  task_group& operator=(task_group const&) = delete;
  /// Joins what is still running (an exception from it is dropped: call join to see it).
  ~task_group();

  /// Runs `fn()` as a task of this group, later, on any worker of the pool.
  template <class F>
  requires std::invocable < std::decay_t<F>
  & > void spawn(F&& fn) {
    using D = std::decay_t<F>;
    auto* t = task::detail::allocate_task();
    t->group = this;
    if constexpr (sizeof(D) <= task::detail::dyn_task::inline_size && alignof(D) <= 8) {
      ::new (static_cast<void*>(t->storage)) D(std::forward<F>(fn));
      t->call = [](task::detail::dyn_task& self, bool run) {
        D& f = *std::launder(reinterpret_cast<D*>(self.storage));
        struct destroy {
          D& f;
          ~destroy() { f.~D(); }
        } at_end{f};
        if (run) f();
      };
    } else {
      ::new (static_cast<void*>(t->storage)) D*(new D(std::forward<F>(fn)));
      t->call = [](task::detail::dyn_task& self, bool run) {
        D* f = *std::launder(reinterpret_cast<D**>(self.storage));
        struct destroy {
          D* f;
          ~destroy() { delete f; }
        } at_end{f};
        if (run) (*f)();
      };
    }
    task::detail::spawn_task(t);
  }

  /// Like spawn(fn), but when the calling worker already holds work that idle workers
  /// can steal (its own deque is not empty; always, when it runs alone), runs `fn()` at
  /// once, inside this call, as OpenMP runtimes run a task past their cutoff and Cilk
  /// runs a spawned call: no allocation, no queue, the caller's stack. Use it for
  /// recursive divide and conquer whose tasks never wait for a task spawned after them
  /// (such a wait would block the very spawn it waits for). An exception from `fn` is
  /// kept for join as for any task of the group; a cancelled group skips `fn`. Nested
  /// inline runs are bounded (the stack), beyond that the task is queued.
  template <class F>
  requires std::invocable < std::decay_t<F>
  & > void spawn(inline_if_busy_t, F&& fn) {
    if (!task::detail::enter_inline()) return spawn(std::forward<F>(fn));
    struct leave {
      ~leave() { task::detail::leave_inline(); }
    } at_end;
    if (cancelled()) return;
    try {
      fn();
    } catch (...) {
      fail(std::current_exception());
    }
  }

  /// Waits until every task spawned so far (and the tasks they spawned into this group)
  /// has finished, running other ready tasks meanwhile; rethrows the first exception one
  /// of them threw (the tasks of the group not yet started when it was thrown are
  /// skipped). The group can be used again afterwards.
  void join();

  /// Whether a task of the group has thrown (its later tasks are skipped).
  bool cancelled() const noexcept { return failed_.load(std::memory_order_acquire); }

  /// Runtime side: `n` more tasks are counted (spawned, or about to be).
  void reserve(std::int64_t n) noexcept { pending_.fetch_add(n, std::memory_order_relaxed); }
  /// Runtime side: `n` counted tasks ended (or reserved counts went unused); `fail` first
  /// if one threw. The call that brings the count to zero wakes the joiner.
  void release(std::int64_t n) noexcept;
  void fail(std::exception_ptr error) noexcept;

 private:
  // Tasks counted and not yet released, plus one reference held by the group itself
  // until join drops it: the release that brings the count to zero is then the last to
  // touch the group (it swaps `state_` and wakes the joiner through the joiner's own
  // waiter, never through the group). Workers count in batches (src/task/scheduler.cpp,
  // "credits"), so the count is an upper bound that reaches zero exactly when it should.
  std::atomic<std::int64_t> pending_{1};
  std::atomic<void*> state_{nullptr};  // null, the parked joiner's waiter, or done
  std::atomic<bool> failed_{false};
  std::atomic<bool> error_lock_{false};
  std::exception_ptr error_;
};

}  // namespace strata
