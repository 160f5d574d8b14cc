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
// tasks are always deferred (never run inside `spawn`), so children may wait on each
// other. Inside a task they go to the worker's own deque (its thieves take the oldest);
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
/// Hands the task to the pool (own deque inside a task, else injected).
void spawn_task(dyn_task* t);

}  // namespace task::detail

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
    pending_.fetch_add(1, std::memory_order_relaxed);
    task::detail::spawn_task(t);
  }

  /// Waits until every task spawned so far (and the tasks they spawned into this group)
  /// has finished, running other ready tasks meanwhile; rethrows the first exception one
  /// of them threw (the tasks of the group not yet started when it was thrown are
  /// skipped). The group can be used again afterwards.
  void join();

  /// Whether a task of the group has thrown (its later tasks are skipped).
  bool cancelled() const noexcept { return failed_.load(std::memory_order_acquire); }

  /// Runtime side: a task of this group ended; `fail` first if it threw.
  void finished() noexcept;
  void fail(std::exception_ptr error) noexcept;

 private:
  // One reference held by the group itself until join drops it: the task that brings
  // the count to zero is then the last to touch the group (it swaps `state_` and wakes
  // the joiner through the joiner's own waiter, never through the group).
  std::atomic<std::int64_t> pending_{1};
  std::atomic<void*> state_{nullptr};  // null, the parked joiner's waiter, or done
  std::atomic<bool> failed_{false};
  std::atomic<bool> error_lock_{false};
  std::exception_ptr error_;
};

}  // namespace strata
