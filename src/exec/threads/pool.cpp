#include "exec/threads/pool.hpp"
#include "exec/threads/spin_wait.hpp"
#include "exec/wait_hook.hpp"

#include <strata/error.hpp>
#include <strata/exec/trace.hpp>

#include "log.hpp"
#include "task/scheduler.hpp"

#include <hwloc.h>
#include <sched.h>

#include <pthread.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>

namespace strata::detail {
namespace {

std::atomic<pool*> live_pool{nullptr};
[[gnu::tls_model("initial-exec")]] thread_local int my_slot = 0;
[[gnu::tls_model("initial-exec")]] thread_local bool is_worker = false;
// One of the runtime's own background threads (mark_background_thread).
thread_local bool background_thread = false;
// How many enter_helping calls the calling thread (outside the pool) has not yet paired
// with leave_helping: a caller_waits scope and the wait inside it hold two.
thread_local int helping_depth = 0;
// The reserve worker has just returned from a park: its next look at a job yields once
// first (pool::help).
thread_local bool reserve_woke = false;

// Trace counters of the calling thread (Chrome "C" events on its lane): the tasks it
// stole and the time it spent idle (spinning or parked for want of work), both running
// totals. Counted only while tracing; sampled at most once per sample_period (a worker
// that steals and idles in microsecond bursts would flood the trace) and whenever the
// worker parks, so a pool that goes quiet shows its final totals.
constexpr auto sample_period = std::chrono::milliseconds(1);
struct trace_counters {
  std::uint64_t steals = 0;
  std::uint64_t steals_written = 0;
  std::chrono::steady_clock::duration idle{};
  std::chrono::steady_clock::duration idle_written{};
  std::chrono::steady_clock::time_point sampled{};
};
thread_local trace_counters counters;

std::string counter_name(char const* what) {
  return is_worker ? std::string(what) + " (worker " + std::to_string(my_slot) + ")"
                   : std::string(what) + " (waiting thread)";
}

void sample_counters(std::chrono::steady_clock::time_point now, bool force) {
  auto& c = counters;
  if (!force && now - c.sampled < sample_period) return;
  c.sampled = now;
  if (c.steals != c.steals_written) {
    c.steals_written = c.steals;
    trace::detail::counter(counter_name("steals"), "tasks", static_cast<double>(c.steals));
  }
  if (c.idle != c.idle_written) {
    c.idle_written = c.idle;
    trace::detail::counter(counter_name("idle"), "ms",
                           std::chrono::duration<double, std::milli>(c.idle).count());
  }
}
}  // namespace

int current_slot() noexcept {
  return my_slot;
}

bool is_pool_worker() noexcept {
  return is_worker;
}

void note_steal() {
  ++counters.steals;
  sample_counters(std::chrono::steady_clock::now(), false);
}

pool* pool::instance() noexcept {
  return live_pool.load(std::memory_order_acquire);
}

pool::pool(std::vector<int> slot_os_index, bool pin, int devices)
    : slot_os_(slot_os_index),
      slot_waiter_(std::make_unique<std::atomic<waiter*>[]>(slot_os_index.size())),
      sleeping_((slot_os_index.size() + 63) / 64),
      tasks_(std::make_unique<task::detail::scheduler>(
          *this, static_cast<int>(slot_os_index.size()), devices)) {
  // settle_caller's map, when workers are pinned and the first PU's CPU is one a thread
  // can be moved to.
  if (pin && !slot_os_.empty() && slot_os_[0] >= 0 && slot_os_[0] < CPU_SETSIZE) {
    for (std::size_t s = 0; s < slot_os_.size(); ++s) {
      auto const os = static_cast<std::size_t>(slot_os_[s]);
      if (slot_os_[s] < 0 || os >= CPU_SETSIZE) continue;
      if (os_slot_.size() <= os) os_slot_.resize(os + 1, -1);
      os_slot_[os] = static_cast<int>(s);
    }
  }
  // One worker per PU. Slot 0's is a reserve: the threads that wait do slot 0's share of
  // ordinary jobs, and it runs only jobs confined to the first PU, which no other worker
  // may run and which must progress even when no thread waits.
  try {
    for (std::size_t s = 0; s < slot_os_index.size(); ++s)
      threads_.emplace_back(
          [this, s, os = slot_os_index[s], pin] { worker_main(static_cast<int>(s), os, pin); });
  } catch (std::system_error const& e) {
    stop_workers();
    throw backend_error(std::string("threads backend: could not start its workers: ") + e.what());
  }
  live_pool.store(this, std::memory_order_release);
}

void pool::stop_workers() noexcept {
  stop_.store(true, std::memory_order_seq_cst);
  for (std::size_t s = 0; s < threads_.size(); ++s)
    if (auto* w = slot_waiter_[s].load(std::memory_order_acquire)) w->notify();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

pool::~pool() {
  drain();
  stop_workers();
  live_pool.store(nullptr, std::memory_order_release);
}

void pool::notify_external() noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (external_parked_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard lock(external_mutex_);
  notify_all(external_, &waiter::on_pool);
}

void pool::submit(std::shared_ptr<job> j) {
  if (stop_.load(std::memory_order_acquire)) {
    j->done().complete(std::make_exception_ptr(
        error("threads backend: work submitted while the runtime shuts down was not run")));
    return;
  }
  auto const* slots = j->slots();
  // Before waking the job's workers: one woken on this thread's CPU would keep it off
  // that CPU until the OS moves it (a launch's caller then waits for its own share).
  // Not the runtime's background threads: they submit from continuations (sim engines,
  // the MPI thread, CUDA workers) and never take the first PU's share, so moving them
  // would only crowd its CPU. (A user thread that does not wait is moved too: it then
  // leaves PU 1's CPU to PU 1's worker, while the first PU's share waits for a helper.)
  if (!is_worker && !background_thread) settle_caller(*j, false);
  outstanding_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(mutex_);
    active_.push_back(std::move(j));
  }
  submits_.fetch_add(1, std::memory_order_seq_cst);
  // Every parked worker that may run it (claiming each, so that a second submit does
  // not wake it again before it is up).
  for (std::size_t w = 0; w < sleeping_.size() && w < slots->wake.size(); ++w) {
    auto sleepers = sleeping_[w].load(std::memory_order_seq_cst) & slots->wake[w];
    while (sleepers) {
      auto slot = w * 64 + static_cast<std::size_t>(__builtin_ctzll(sleepers));
      auto const bit = sleepers & (~sleepers + 1);
      sleepers &= sleepers - 1;
      if (sleeping_[w].fetch_and(~bit, std::memory_order_seq_cst) & bit)
        wake_slot(static_cast<int>(slot));
    }
  }
  // The reserve runs the first PU's jobs when no awake thread waits to do them.
  if (slots->only_first && external_helpers_.load(std::memory_order_seq_cst) == 0 &&
      (sleeping_[0].fetch_and(~std::uint64_t{1}, std::memory_order_seq_cst) & 1u))
    wake_slot(0);
  // Waiting threads do the first PU's share of jobs shared with other PUs; a job confined
  // to the first PU is the reserve's unless an awake waiter (it watches submits_) takes
  // it, so parked waiters are not woken for it.
  if (slots->has(0) && !slots->only_first) notify_external();
}

bool pool::has_work() const noexcept {
  return outstanding_.load(std::memory_order_relaxed) > 0 || tasks_->active_runs() > 0;
}

void pool::wake_slot(int slot) {
  if (auto* w = slot_waiter_[static_cast<std::size_t>(slot)].load(std::memory_order_acquire))
    w->notify();
}

void pool::wake_one(std::vector<int> const& slots, std::vector<char> const* prefer) {
  wake_some(slots, prefer, 1);
}

void pool::wake_some(std::vector<int> const& slots, std::vector<char> const* prefer, int count) {
  // Pairs with the parker's registration then re-check (Dekker): either it sees the
  // pushed task or this sees it registered.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (count <= 0 || sleepers_.load(std::memory_order_relaxed) == 0) return;
  // Several wake-ups: workers on other CPUs first. One woken on the caller's own CPU
  // preempts the caller there (the OS favours the woken thread), and the caller may then
  // wait milliseconds for the OS to move it before it wakes the others (session 46). A
  // single wake-up keeps slot order: waking a worker on the caller's CPU needs no
  // inter-processor interrupt, and on a VM an idle vCPU takes tens of microseconds to
  // wake (`strata bench sleep-wake`).
  int const here = count > 1 ? sched_getcpu() : -1;
  // Claim the sleeper by clearing its bit: pushes that follow before it is up see it
  // awake and make no further futex calls (one wake per sleep, not one per push).
  for (int pass = prefer ? 0 : 2; pass < 4; ++pass)
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (pass < 2 && !(*prefer)[i]) continue;
      auto const slot = static_cast<std::size_t>(slots[i]);
      bool const local = slot_os_[slot] == here;
      if (local != (pass % 2 == 1)) continue;
      auto const bit = std::uint64_t{1} << (slot % 64);
      auto& word = sleeping_[slot / 64];
      if ((word.load(std::memory_order_relaxed) & bit) &&
          (word.fetch_and(~bit, std::memory_order_seq_cst) & bit)) {
        wake_slot(static_cast<int>(slot));
        if (--count == 0) return;
      }
    }
}

bool pool::idle() const noexcept {
  return outstanding_.load(std::memory_order_acquire) == 0 && tasks_->active_runs() == 0;
}

std::shared_ptr<job> pool::find(int slot, bool reserve, bool shared_only) {
  std::lock_guard lock(mutex_);
  for (auto it = active_.begin(); it != active_.end();) {
    if ((*it)->exhausted()) {
      it = active_.erase(it);
      continue;
    }
    auto const* s = (*it)->slots();
    if (s->has(slot) && (!reserve || s->only_first) && !(shared_only && s->only_first)) return *it;
    ++it;
  }
  return nullptr;
}

bool pool::has_job(int slot) {
  if (outstanding_.load(std::memory_order_acquire) == 0) return false;
  bool const reserve = is_worker && slot == 0;
  // The reserve stays out of the first PU's jobs while a waiting thread does them
  // (issue 21: it must not spin through a launch somebody waits for).
  if (reserve && external_helpers_.load(std::memory_order_acquire) > 0) return false;
  return find(slot, reserve) != nullptr;
}

bool pool::has_shared_job(int slot) {
  if (outstanding_.load(std::memory_order_acquire) == 0) return false;
  return find(slot, false, true) != nullptr;
}

void pool::run(job& j, index_t chunk) {
  // The job is over once its last chunk has completed its event (and the continuations,
  // which may submit more work): only then does it stop counting as outstanding. Threads
  // in drain wait for that (others are woken by their events: waking them at the end of
  // every job woke a thread that waits for a graph of small kernels once per kernel).
  if (j.execute(chunk) && outstanding_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      draining_.load(std::memory_order_seq_cst) > 0)
    notify_external();
}

bool pool::help(int slot, event_state const* until, bool* standing_aside) {
  bool const reserve = is_worker && slot == 0 && !until;
  bool unused = false;
  bool& stood_aside = standing_aside ? *standing_aside : unused;
  stood_aside = false;
  if (outstanding_.load(std::memory_order_acquire) == 0) return false;
  auto j = find(slot, reserve);
  if (!j) return false;
  // The reserve worker yields the first PU to a waiting thread: a job confined to that PU
  // must not run on two threads at once.
  auto yield = [&] { return reserve && external_helpers_.load(std::memory_order_acquire) > 0; };
  if (reserve) {
    // Woken by a submit, the reserve may have preempted the submitter on this very CPU
    // (the OS favours a woken thread) before it reached its wait: one yield lets it get
    // there and take the job, rather than the two sharing the CPU for a whole chunk. Only
    // after a wake-up: a reserve that runs a stream of such jobs (nobody waiting) would
    // otherwise give its CPU away once per job.
    if (std::exchange(reserve_woke, false)) sched_yield();
    if (yield()) {
      stood_aside = true;
      return false;
    }
  }
  trace::span traced(j->name(), "job", "threads");
  bool ran = false;
  for (index_t c; !yield() && (c = j->claim()) >= 0;) {
    // Before every chunk: the OS may have moved this thread since the last one. (Not the
    // runtime's background threads, as in submit.)
    if (!is_worker && !background_thread) settle_caller(*j, true);
    run(*j, c);
    ran = true;
    if (until && until->ready()) break;
  }
  return ran;
}

void pool::enter_helping() noexcept {
  ++helping_depth;
  external_helpers_.fetch_add(1, std::memory_order_seq_cst);
}

void pool::leave_helping() noexcept {
  --helping_depth;
  if (external_helpers_.fetch_sub(1, std::memory_order_seq_cst) == 1) reserve_takes_over();
}

int pool::pause_helping() noexcept {
  int const held = helping_depth;
  // As leave_helping, for all of them at once.
  if (held > 0 && external_helpers_.fetch_sub(held, std::memory_order_seq_cst) == held)
    reserve_takes_over();
  return held;
}

void pool::reserve_takes_over() noexcept {
  // The last awake helper is gone: the reserve takes over the first PU's jobs. A spinning
  // reserve that stood aside for a job submitted before now sees a new submit count (it
  // would otherwise find the job only when its spin ends, 50 us on); a parked one is woken
  // if first-PU work is queued (a submit from now on wakes it itself).
  submits_.fetch_add(1, std::memory_order_seq_cst);
  if ((sleeping_[0].load(std::memory_order_seq_cst) & 1u) && find(0, true) != nullptr) {
    if (sleeping_[0].fetch_and(~std::uint64_t{1}, std::memory_order_seq_cst) & 1u) wake_slot(0);
  }
}

void pool::resume_helping(int held) noexcept {
  external_helpers_.fetch_add(held, std::memory_order_seq_cst);
}

void pool::worker_main(int slot, int os_index, bool pin) {
  my_slot = slot;
  is_worker = true;
  slot_waiter_[static_cast<std::size_t>(slot)].store(&this_waiter(), std::memory_order_release);
  trace::name_this_thread(slot == 0 ? "reserve worker (CPU " + std::to_string(os_index) + ")"
                                    : "worker " + std::to_string(slot) + " (CPU " +
                                          std::to_string(os_index) + ")");
  if (pin) {
    // hwloc binds this thread to its PU; failure (e.g. a restricted cpuset) is not fatal.
    hwloc_topology_t topo = nullptr;
    if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
      hwloc_bitmap_t set = hwloc_bitmap_alloc();
      hwloc_bitmap_only(set, static_cast<unsigned>(os_index));
      if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) != 0)
        log(log_level::debug, "worker " + std::to_string(slot) + ": could not pin to CPU " +
                                  std::to_string(os_index));
      hwloc_bitmap_free(set);
    }
    if (topo) hwloc_topology_destroy(topo);
  }
  auto stopping = [this] { return stop_.load(std::memory_order_acquire); };
  auto& tasks = *tasks_;
  while (!stopping()) {
    // Algorithm 1: tasks (own deque, injected, stolen), then chunks of launched jobs
    // (slot 0's worker: only jobs confined to the first PU that nobody waits for).
    if (tasks.work(slot)) continue;
    bool stood_aside = false;
    if (help(slot, nullptr, &stood_aside)) continue;
    auto const seen = submits_.load(std::memory_order_acquire);
    // The reserve watches submits too while no awake thread waits to take the first
    // PU's jobs (it would otherwise find one only when its spin ends, 50 us on).
    auto found = [&] {
      return stopping() || tasks.available(slot) ||
             ((slot != 0 || external_helpers_.load(std::memory_order_relaxed) == 0) &&
              submits_.load(std::memory_order_acquire) != seen);
    };
    // An idle spell, timed for the trace's counters only while tracing.
    auto const idle_from = trace::enabled() ? std::chrono::steady_clock::now()
                                            : std::chrono::steady_clock::time_point{};
    // The reserve that stood aside for a waiting thread parks at once: spinning on the
    // first PU's CPU, where that thread runs the job, it would share the CPU with it, and
    // the OS would move the thread off it (leave_helping wakes the reserve when the last
    // helper goes; a submit or a task push wakes it as before).
    bool const parks = stood_aside || !spin_until(found);
    if (parks) {
      park(slot, nullptr, [&] { return stopping() || tasks.available(slot) || has_job(slot); });
      reserve_woke = slot == 0;
    }
    if (idle_from.time_since_epoch().count() != 0 && trace::enabled()) {
      auto const now = std::chrono::steady_clock::now();
      counters.idle += now - idle_from;
      sample_counters(now, parks);
    }
  }
}

bool job::execute(index_t chunk) noexcept {
  error_.run([&] { run_chunk(chunk); });
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
  done_.complete(error_.take());
  return true;
}

void pool::settle_caller(job const& j, bool runs_it) noexcept {
  if (os_slot_.empty() || slot_os_.size() < 2) return;  // workers not pinned, or one PU
  int const cpu = sched_getcpu();
  if (cpu < 0) return;
  // A CPU no worker is pinned to counts as slot -1, inside the table or past its end.
  int const slot = static_cast<std::size_t>(cpu) < os_slot_.size()
                       ? os_slot_[static_cast<std::size_t>(cpu)]
                       : -1;
  // Nothing to do on the first PU's CPU, nor on another slot's CPU that the job does not
  // use, unless the thread is about to run a job confined to the first PU: that job then
  // runs where it was placed (on this VM the two vCPUs streamed at speeds up to 30% apart,
  // and a 1-PU launch ran at whichever speed the OS's choice of the waiting thread's CPU
  // gave it, session 66).
  if (slot == 0) return;
  if (!(runs_it && j.slots()->only_first) && !(slot > 0 && j.slots()->has(slot))) return;
  // At most one move a millisecond: a thread that parks in its wait is woken where its
  // waker runs (the other worker's CPU) and would be moved back and forth at every
  // launch of an empty kernel (3 system calls and a migration: 10-40 us on the VM,
  // against 0.2 us for the whole launch run where it is); a kernel long enough to lose
  // half its speed there takes longer than that.
  thread_local std::chrono::steady_clock::time_point last_move{};
  auto const now = std::chrono::steady_clock::now();
  if (now - last_move < std::chrono::milliseconds(1)) return;
  last_move = now;
  auto const first = static_cast<std::size_t>(slot_os_[0]);
  cpu_set_t own, only;
  CPU_ZERO(&only);
  CPU_SET(first, &only);
  if (pthread_getaffinity_np(pthread_self(), sizeof own, &own) != 0 || !CPU_ISSET(first, &own))
    return;
  if (pthread_setaffinity_np(pthread_self(), sizeof only, &only) != 0) return;
  // The thread's own affinity back (a second try, then a warning: it would stay pinned).
  if (pthread_setaffinity_np(pthread_self(), sizeof own, &own) != 0 &&
      pthread_setaffinity_np(pthread_self(), sizeof own, &own) != 0) {
    try {  // (noexcept: a message that cannot be built is dropped)
      log(log_level::info,
          "threads backend: could not give a waiting thread its CPU affinity back after "
          "moving it to CPU " +
              std::to_string(first) + "; it stays pinned there");
    } catch (...) {
    }
  }
}

caller_waits::caller_waits() noexcept {
  if (is_worker) return;  // a worker's own slot is its share already
  if (auto* p = pool::instance()) {
    p->enter_helping();
    pool_ = p;
  }
}

caller_waits::~caller_waits() {
  if (pool_) static_cast<pool*>(pool_)->leave_helping();
}

void mark_background_thread() noexcept {
  background_thread = true;
}

void submit(std::shared_ptr<job> j) {
  current_exec().get_pool().submit(std::move(j));
}

}  // namespace strata::detail
