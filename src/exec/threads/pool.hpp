// The worker pool behind the threads backend (see include/strata/exec/threads/pool.hpp).
#pragma once

#include <strata/exec/threads/pool.hpp>

#include "exec/exec_state.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::detail {

/// Something happened that a sleeping thread may care about: work was submitted or an
/// event completed. One counter wakes both idle workers and waiting threads.
void notify_progress() noexcept;

/// The slot of the calling thread: its PU's for a worker, 0 for any other thread (the
/// first PU's share is done by the threads that wait).
int current_slot() noexcept;

class pool {
 public:
  pool(std::vector<int> slot_os_index, bool pin);
  ~pool();

  void submit(std::shared_ptr<job> j);
  /// Runs chunks of one job the slot may run, until the job is exhausted or `until` is
  /// ready. Returns whether it ran anything.
  bool help(int slot, event_state const* until);
  /// Waits (helping) until no submitted job is left.
  void drain();

  /// The pool of the live runtime, or null when none has been started.
  static pool* instance() noexcept;

 private:
  void worker_main(int slot, int os_index, bool pin);
  std::shared_ptr<job> find(int slot);

  std::mutex mutex_;
  std::vector<std::shared_ptr<job>> active_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::vector<std::atomic<std::uint64_t>> sleeping_;  // one bit per sleeping worker slot
};

}  // namespace strata::detail
