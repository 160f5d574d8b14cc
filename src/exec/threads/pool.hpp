// The worker pool behind the threads backend (see include/strata/exec/threads/pool.hpp).
#pragma once

#include <strata/exec/threads/pool.hpp>

#include "exec/exec_state.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::task::detail {
class scheduler;
}

namespace strata::detail {

/// Something happened that a thread waiting on an event may care about: an event
/// completed, or work arrived that it could help with.
void notify_progress() noexcept;

/// The slot of the calling thread: its PU's for a worker, 0 for any other thread (the
/// first PU's share is done by the threads that wait).
int current_slot() noexcept;

class pool {
 public:
  /// `devices`: how many accelerators the machine has (sizes the device-priority
  /// workers of task graphs, Ripple §6.2).
  pool(std::vector<int> slot_os_index, bool pin, int devices = 0);
  ~pool();

  /// Queues a job; after shutdown began, fails its event instead.
  void submit(std::shared_ptr<job> j);
  /// Runs chunks of one job the slot may run, until the job is exhausted or `until` is
  /// ready. Returns whether it ran anything.
  bool help(int slot, event_state const* until);
  /// Waits (helping) until every submitted job has finished, including the jobs their
  /// completions submit.
  void drain();

  /// The task-graph side of the pool: per-worker deques (see src/task/scheduler.hpp).
  task::detail::scheduler& tasks() noexcept { return *tasks_; }

  /// Wakes one sleeping worker among `slots` (only those with `mask[i]` set, if a mask is
  /// given) because tasks were pushed. Unless `always`, it first checks cheaply whether
  /// any worker sleeps at all: a spinning worker finds the task itself.
  void wake_one(std::vector<int> const& slots, std::vector<char> const* mask, bool always);

  /// The pool of the live runtime, or null when none has been started.
  static pool* instance() noexcept;

  /// Threads other than workers that are waiting (and so doing slot 0's share) now; the
  /// reserve worker stays out of the first PU's jobs while any is.
  std::atomic<int> external_helpers{0};

 private:
  struct alignas(64) worker_word {
    std::atomic<std::uint32_t> value{0};
  };

  void worker_main(int slot, int os_index, bool pin);
  void reserve_main();
  std::shared_ptr<job> find(int slot, bool reserve);
  void run(job& j, index_t chunk);
  void stop_workers() noexcept;
  void wake_slot(int slot);
  bool idle() const noexcept;

  std::mutex mutex_;
  std::vector<std::shared_ptr<job>> active_;
  std::atomic<long> outstanding_{0};  // submitted and not yet finished
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<worker_word[]> words_;              // each worker sleeps on its own word
  std::vector<std::atomic<std::uint64_t>> sleeping_;  // one bit per sleeping worker slot
  std::atomic<int> sleepers_{0};                      // workers asleep (or about to be)
  std::unique_ptr<task::detail::scheduler> tasks_;
  // Slot 0's reserve worker (see reserve_main).
  std::mutex reserve_mutex_;
  std::condition_variable reserve_wake_;
  bool reserve_deep_ = false;  // sleeping until notified
  std::chrono::steady_clock::time_point last_reserve_job_{};
};

}  // namespace strata::detail
