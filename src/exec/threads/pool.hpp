// The worker pool behind the threads backend (see include/strata/exec/threads/pool.hpp).
#pragma once

#include <strata/exec/threads/pool.hpp>

#include "exec/exec_state.hpp"
#include "exec/threads/wake.hpp"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::task::detail {
class scheduler;
void flush_credits() noexcept;
}  // namespace strata::task::detail

namespace strata::detail {

struct waiter;

/// The pool's idle state may have changed (a job or a graph run ended): wakes the
/// threads waiting in drain. A no-op when no pool is live.
void notify_progress() noexcept;

/// Work that only a wait hook runs has appeared (src/exec/wait_hook.hpp): wakes parked
/// waiters, with or without a pool, so that they run the hook again.
void notify_hook_work() noexcept;

/// The slot of the calling thread: its PU's for a worker, 0 for any other thread (the
/// first PU's share is done by the threads that wait).
int current_slot() noexcept;
/// Whether the calling thread is one of the pool's workers.
bool is_pool_worker() noexcept;

/// Trace counters: the calling thread stole a task from another worker's deque. Called
/// only while tracing (the caller's one relaxed load of trace::enabled()).
void note_steal();

class pool {
 public:
  /// `devices`: how many accelerators the machine has (sizes the device-priority
  /// workers of task graphs, Ripple §6.2).
  pool(std::vector<int> slot_os_index, bool pin, int devices = 0);
  ~pool();

  /// Queues a job; after shutdown began, fails its event instead.
  void submit(std::shared_ptr<job> j);
  /// Runs chunks of one job the slot may run, until the job is exhausted or `until` is
  /// ready. Returns whether it ran anything. `standing_aside` (the reserve worker's loop):
  /// set when the reserve found a job confined to the first PU and left it to a waiting
  /// thread.
  bool help(int slot, event_state const* until, bool* standing_aside = nullptr);
  /// Waits (helping) until every submitted job has finished, including the jobs their
  /// completions submit.
  void drain();
  /// Blocks the calling thread (helping: job chunks, and tasks if it is a worker) until
  /// `s` is ready. event::wait ends here.
  void wait(event_state& s, std::chrono::steady_clock::time_point until = {});

  /// Whether a job slot `slot` may run now is queued (the reserve: only first-PU jobs,
  /// and none while an awake thread waits to run them).
  bool has_job(int slot);

  /// The task-graph side of the pool: per-worker deques (see src/task/scheduler.hpp).
  task::detail::scheduler& tasks() noexcept { return *tasks_; }

  /// Wakes one sleeping worker among `slots` because tasks were pushed, preferring those
  /// with `prefer[i]` set (device-priority workers for device work) when given.
  void wake_one(std::vector<int> const& slots, std::vector<char> const* prefer);
  /// The same for `count` tasks pushed at once: wakes up to `count` sleeping workers,
  /// for more than one those on other CPUs than the caller's first.
  void wake_some(std::vector<int> const& slots, std::vector<char> const* prefer, int count);

  /// Parks the calling thread (src/exec/threads/wake.hpp) until a producer may have
  /// made `check` true, or `deadline` (if set). A worker announces itself as a sleeping
  /// worker (task pushes and job submits wake it), any other thread joins the external
  /// waiters (submits of jobs it shares with other PUs, and the end of work while it
  /// drains, wake them) and stops counting as a helper while it sleeps; with `ev`, the
  /// event's completion wakes it too. Returns whether a task push claimed this worker's
  /// wake-up (the caller then looks for tasks, or passes the wake-up on).
  template <class Check>
  bool park(int slot, event_state* ev, Check&& check,
            std::chrono::steady_clock::time_point deadline = {});

  /// The pool of the live runtime, or null when none has been started.
  static pool* instance() noexcept;

  /// Whether jobs or task-graph runs are in flight (racy: for a spinning thread's choice
  /// between keeping its core and leaving it to the workers).
  bool has_work() const noexcept;

  /// Wakes the threads waiting outside the pool (in event waits or drain).
  void notify_external() noexcept;

  /// A thread outside the pool says it is about to wait (launch_and_wait, a blocking
  /// queue, every event wait and drain): it counts as a helper of the first PU from now
  /// on, so a submit does not wake the reserve for work this thread will run. Every call
  /// is paired with leave_helping. A helper counts only while it is awake: park takes
  /// its counts away while it sleeps (pause_helping), so the reserve never yields the
  /// first PU to a thread that needs a wake-up to use it.
  void enter_helping() noexcept;
  /// The last helper leaves: the reserve is woken if first-PU work is left.
  void leave_helping() noexcept;
  /// An external thread about to sleep stops counting as a helper (every enter_helping
  /// it has made); returns how many it held, for resume_helping after the sleep.
  int pause_helping() noexcept;
  void resume_helping(int held) noexcept;

  /// Called by a thread outside the pool that helps with `j`, or submits it (but not
  /// the runtime's background threads: mark_background_thread). Such a thread
  /// takes the first PU's share (enter_helping); if the OS has put it on the CPU of one of
  /// j's other pinned workers, the two share that CPU while the first PU's idles, and the
  /// kernel runs at one CPU's speed (a 2-PU launch of four 100 us blocks took 400 us on
  /// the 2-core VM: every block on the caller's CPU, or on the worker's while the woken
  /// worker kept the caller off it); the OS moves a thread to an idle CPU only after
  /// milliseconds. A thread that `runs_it` (help) and is about to run chunks of a job
  /// confined to the first PU is moved wherever it is, so that the job runs on the PU it
  /// was placed on. This moves the thread to the first PU's CPU: its affinity narrowed to
  /// that CPU (which migrates it at once), then given back at once (which does not move it
  /// again), so it stays there until the OS moves it and later calls find it there and
  /// pay one sched_getcpu; at most once a millisecond per thread (see pool.cpp). A thread
  /// whose affinity excludes that CPU, or a pool whose workers are not pinned, is left
  /// where it is.
  void settle_caller(job const& j, bool runs_it) noexcept;

 private:
  void worker_main(int slot, int os_index, bool pin);
  /// A job slot `slot` may run. The reserve worker takes only jobs confined to the first
  /// PU; a parked external thread (`shared_only`) only jobs it shares with other PUs.
  std::shared_ptr<job> find(int slot, bool reserve, bool shared_only = false);
  /// has_job for a thread outside the pool about to park: jobs confined to the first PU
  /// are the reserve's while it sleeps.
  bool has_shared_job(int slot);
  /// The helper count has dropped to zero (leave_helping, pause_helping).
  void reserve_takes_over() noexcept;
  void run(job& j, index_t chunk);
  void stop_workers() noexcept;
  void wake_slot(int slot);
  bool idle() const noexcept;

  std::vector<int> slot_os_;  // each slot's PU (OS index)
  std::vector<int> os_slot_;  // the slot of each OS CPU (-1: none), when workers are pinned
  std::mutex mutex_;
  std::vector<std::shared_ptr<job>> active_;
  std::atomic<long> outstanding_{0};       // submitted and not yet finished
  std::atomic<std::uint32_t> submits_{0};  // bumped by every submit (spinners watch it)
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<std::atomic<waiter*>[]> slot_waiter_;  // each worker's waiter
  std::vector<std::atomic<std::uint64_t>> sleeping_;     // one bit per parked worker
  std::atomic<int> sleepers_{0};                         // workers parked (or about to be)
  // Threads other than workers that wait (event waits, drain), while awake. They do the
  // first PU's share of ordinary jobs, and the reserve worker stays out of the first PU's
  // jobs while any of them does.
  std::atomic<int> external_helpers_{0};
  std::mutex external_mutex_;
  waiter* external_ = nullptr;  // parked external threads
  std::atomic<int> external_parked_{0};
  std::atomic<int> draining_{0};  // threads in drain (the end of work wakes them)
  std::unique_ptr<task::detail::scheduler> tasks_;
};

template <class Check>
bool pool::park(int slot, event_state* ev, Check&& check,
                std::chrono::steady_clock::time_point deadline) {
  // Counts of a task group this worker holds would keep its joiner waiting for as long
  // as this thread sleeps.
  task::detail::flush_credits();
  auto& w = this_waiter();
  auto const key = w.prepare();
  if (ev && !ev->add_waiter(w)) return false;  // already complete
  bool const worker = is_pool_worker();
  auto& word = sleeping_[static_cast<std::size_t>(slot) / 64];
  std::uint64_t const bit = std::uint64_t{1} << (slot % 64);
  if (worker) {
    word.fetch_or(bit, std::memory_order_seq_cst);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
  } else {
    std::lock_guard lock(external_mutex_);
    link(external_, w, &waiter::on_pool);
    external_parked_.fetch_add(1, std::memory_order_seq_cst);
  }
  // Registered everywhere a producer looks; now the last look at everything waited for.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // A sleeping external thread is no helper: the reserve runs the first PU's jobs
  // meanwhile (it is often awake already, running the tasks that submit them), instead of
  // leaving them for this thread's wake-up (tens of microseconds on a VM per job: a
  // graph of small kernels waited for by main ran each one after such a wake-up).
  struct paused {
    pool* p;
    int held;
    ~paused() {
      if (held) p->resume_helping(held);
    }
  } away{this, worker ? 0 : pause_helping()};
  if (!check()) w.commit(key, deadline);
  bool claimed = false;
  if (worker) {
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    claimed = (word.fetch_and(~bit, std::memory_order_seq_cst) & bit) == 0;
  } else {
    std::lock_guard lock(external_mutex_);
    unlink(external_, w, &waiter::on_pool);
    external_parked_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (ev) ev->remove_waiter(w);
  return claimed;
}

}  // namespace strata::detail
