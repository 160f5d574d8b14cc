#include "exec/threads/pool.hpp"

#include <strata/error.hpp>
#include <strata/exec/trace.hpp>

#include "log.hpp"
#include "task/scheduler.hpp"

#include <hwloc.h>

#include <chrono>
#include <string>
#include <thread>

namespace strata::detail {
namespace {

// Wake-ups. Every submit bumps `work_epoch`, which spinning workers watch; a worker that
// has gone to sleep waits on its own word, and a submit wakes exactly the sleeping
// workers that may run the job (no thundering herd). Threads waiting on an event sleep
// on `event_epoch`, bumped by every completion and by submits (waiters help).
std::atomic<std::uint32_t> work_epoch{0};
std::atomic<std::uint32_t> event_epoch{0};
std::atomic<int> event_sleepers{0};
std::atomic<pool*> live_pool{nullptr};
thread_local int my_slot = 0;
thread_local bool is_worker = false;

// Idle threads spin this long before sleeping: long enough to catch back-to-back
// launches without a futex round trip, short enough that an idle pool stops using CPU
// within a fraction of a millisecond.
constexpr auto spin_time = std::chrono::microseconds(50);

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins while `word` still reads `seen` and `done()` is false, for at most spin_time.
// Returns true when it gave up spinning (the caller may then sleep).
template <class Done>
bool spin(std::atomic<std::uint32_t> const& word, std::uint32_t seen, Done&& done) {
  auto deadline = std::chrono::steady_clock::now() + spin_time;
  for (int n = 1; word.load(std::memory_order_acquire) == seen && !done(); ++n) {
    cpu_relax();
    if (n % 64 == 0 && std::chrono::steady_clock::now() > deadline) return true;
  }
  return false;
}

}  // namespace

void notify_progress() noexcept {
  event_epoch.fetch_add(1, std::memory_order_seq_cst);
  if (event_sleepers.load(std::memory_order_seq_cst) > 0) event_epoch.notify_all();
}

int current_slot() noexcept {
  return my_slot;
}

pool* pool::instance() noexcept {
  return live_pool.load(std::memory_order_acquire);
}

pool::pool(std::vector<int> slot_os_index, bool pin, int devices)
    : words_(std::make_unique<worker_word[]>(slot_os_index.size())),
      sleeping_((slot_os_index.size() + 63) / 64),
      tasks_(std::make_unique<task::detail::scheduler>(
          *this, static_cast<int>(slot_os_index.size()), devices)) {
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
  work_epoch.fetch_add(1, std::memory_order_seq_cst);
  work_epoch.notify_all();
  for (std::size_t s = 0; s < threads_.size(); ++s) {
    words_[s].value.fetch_add(1, std::memory_order_seq_cst);
    words_[s].value.notify_all();
  }
  {
    std::lock_guard lock(reserve_mutex_);
    reserve_wake_.notify_all();
  }
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

pool::~pool() {
  drain();
  stop_workers();
  live_pool.store(nullptr, std::memory_order_release);
}

void pool::submit(std::shared_ptr<job> j) {
  if (stop_.load(std::memory_order_acquire)) {
    j->done().complete(std::make_exception_ptr(
        error("threads backend: work submitted while the runtime shuts down was not run")));
    return;
  }
  auto const* slots = j->slots();
  outstanding_.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(mutex_);
    active_.push_back(std::move(j));
  }
  work_epoch.fetch_add(1, std::memory_order_seq_cst);
  for (std::size_t w = 0; w < sleeping_.size() && w < slots->wake.size(); ++w) {
    auto sleepers = sleeping_[w].load(std::memory_order_seq_cst) & slots->wake[w];
    while (sleepers) {
      auto slot = w * 64 + static_cast<std::size_t>(__builtin_ctzll(sleepers));
      sleepers &= sleepers - 1;
      words_[slot].value.fetch_add(1, std::memory_order_seq_cst);
      words_[slot].value.notify_one();
    }
  }
  if (slots->only_first) {
    std::lock_guard lock(reserve_mutex_);
    last_reserve_job_ = std::chrono::steady_clock::now();
    if (reserve_deep_) reserve_wake_.notify_one();
  }
  notify_progress();  // waiting threads help too
}

void pool::wake_slot(int slot) {
  if (slot == 0) {
    std::lock_guard lock(reserve_mutex_);
    reserve_wake_.notify_one();
    return;
  }
  words_[static_cast<std::size_t>(slot)].value.fetch_add(1, std::memory_order_seq_cst);
  words_[static_cast<std::size_t>(slot)].value.notify_one();
}

void pool::wake_one(std::vector<int> const& slots, std::vector<char> const* mask, bool always) {
  auto asleep = [&](std::memory_order order) -> int {
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (mask && !(*mask)[i]) continue;
      auto const slot = static_cast<std::size_t>(slots[i]);
      if (sleeping_[slot / 64].load(order) >> (slot % 64) & 1u) return static_cast<int>(slot);
    }
    return -1;
  };
  // Pairs with the sleeper's seq_cst announcement then re-check (Dekker): either it sees
  // the pushed task or this sees its bit. The unfenced pre-check (a worker's own pushes
  // take it) may miss a worker that is just falling asleep; the pusher is awake and runs
  // the task itself then, so that costs parallelism for a moment, never progress.
  if (!always &&
      (sleepers_.load(std::memory_order_relaxed) == 0 || asleep(std::memory_order_relaxed) < 0))
    return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Claim the sleeper by clearing its bit: pushes that follow before it is up see it
  // awake and make no further futex calls (one wake per sleep, not one per push).
  for (int slot; (slot = asleep(std::memory_order_relaxed)) >= 0;) {
    auto const bit = std::uint64_t{1} << (slot % 64);
    if (sleeping_[static_cast<std::size_t>(slot) / 64].fetch_and(~bit, std::memory_order_seq_cst) &
        bit)
      return wake_slot(slot);
  }
}

bool pool::idle() const noexcept {
  return outstanding_.load(std::memory_order_acquire) == 0 && tasks_->active_runs() == 0;
}

std::shared_ptr<job> pool::find(int slot, bool reserve) {
  std::lock_guard lock(mutex_);
  for (auto it = active_.begin(); it != active_.end();) {
    if ((*it)->exhausted()) {
      it = active_.erase(it);
      continue;
    }
    auto const* s = (*it)->slots();
    if (s->has(slot) && (!reserve || s->only_first)) return *it;
    ++it;
  }
  return nullptr;
}

void pool::run(job& j, index_t chunk) {
  // The job is over once its last chunk has completed its event (and the continuations,
  // which may submit more work): only then does it stop counting as outstanding.
  if (j.execute(chunk) && outstanding_.fetch_sub(1, std::memory_order_acq_rel) == 1)
    notify_progress();
}

bool pool::help(int slot, event_state const* until) {
  bool const reserve = is_worker && slot == 0 && !until;
  auto j = find(slot, reserve);
  if (!j) return false;
  trace::span traced(j->name(), "job", "threads");
  bool ran = false;
  // The reserve worker yields the first PU to a waiting thread: a job confined to that PU
  // must not run on two threads at once.
  auto yield = [&] { return reserve && external_helpers.load(std::memory_order_acquire) > 0; };
  for (index_t c; !yield() && (c = j->claim()) >= 0;) {
    run(*j, c);
    ran = true;
    if (until && until->ready()) break;
  }
  return ran;
}

void pool::drain() {
  int const slot = current_slot();
  if (!is_worker) external_helpers.fetch_add(1, std::memory_order_acq_rel);
  struct uncount {
    pool* p;
    ~uncount() {
      if (!is_worker) p->external_helpers.fetch_sub(1, std::memory_order_acq_rel);
    }
  } counted{this};
  while (!idle()) {
    if (help(slot, nullptr)) continue;
    auto seen = event_epoch.load(std::memory_order_acquire);
    auto idle = [this] { return this->idle(); };
    if (idle()) return;
    if (!spin(event_epoch, seen, idle)) continue;
    event_sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (!idle()) event_epoch.wait(seen, std::memory_order_acquire);
    event_sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
}

// Slot 0's worker runs only jobs confined to the first PU, and only those that nobody
// else runs: normally the thread that waits for them does, on that PU's share. Waking it
// at every such launch would cost a futex call per launch, so it polls every 200 us while
// such jobs have been submitted recently (10 ms), and otherwise sleeps until a submit
// finds it asleep and notifies it.
void pool::reserve_main() {
  using clock = std::chrono::steady_clock;
  std::uint64_t const bit = 1;
  auto last_task = clock::time_point{};
  while (!stop_.load(std::memory_order_acquire)) {
    // Task graphs that include the first PU run on this worker like on any other.
    if (tasks_->work(0)) {
      last_task = clock::now();
      continue;
    }
    if (help(0, nullptr)) continue;
    // Right after tasks, spin briefly for more (a futex round trip per task would cost
    // more than the task); launches alone never make it spin (the PU is the waiter's).
    if (clock::now() - last_task < spin_time) {
      auto deadline = last_task + spin_time;
      while (clock::now() < deadline && !tasks_->available(0) &&
             !stop_.load(std::memory_order_relaxed))
        for (int i = 0; i < 64; ++i) cpu_relax();
      if (tasks_->available(0)) continue;
    }
    std::unique_lock lock(reserve_mutex_);
    sleeping_[0].fetch_or(bit, std::memory_order_seq_cst);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    struct awake {
      pool* p;
      ~awake() {
        p->sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        p->sleeping_[0].fetch_and(~std::uint64_t{1}, std::memory_order_seq_cst);
      }
    } unmark{this};
    if (stop_.load(std::memory_order_acquire) || find(0, true) || tasks_->available(0)) continue;
    if (clock::now() - last_reserve_job_ < std::chrono::milliseconds(10)) {
      reserve_wake_.wait_for(lock, std::chrono::microseconds(200));
    } else {
      reserve_deep_ = true;
      reserve_wake_.wait(lock);
      reserve_deep_ = false;
    }
  }
}

void pool::worker_main(int slot, int os_index, bool pin) {
  my_slot = slot;
  is_worker = true;
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
  if (slot == 0) return reserve_main();
  auto& word = words_[static_cast<std::size_t>(slot)].value;
  auto& sleeping = sleeping_[static_cast<std::size_t>(slot) / 64];
  std::uint64_t const bit = std::uint64_t{1} << (slot % 64);
  auto stopping = [this] { return stop_.load(std::memory_order_relaxed); };
  auto& tasks = *tasks_;
  auto found = [&] { return stopping() || tasks.available(slot); };
  while (!stopping()) {
    // Algorithm 1: tasks (own deque, injected, stolen), then chunks of launched jobs.
    if (tasks.work(slot)) continue;
    if (help(slot, nullptr)) continue;
    auto seen = work_epoch.load(std::memory_order_acquire);
    if (help(slot, nullptr)) continue;
    if (!spin(work_epoch, seen, found)) continue;
    // Announce the sleep, then look once more: a submit or a task push either sees the
    // bit (and wakes us through our word) or happened before, and is visible here.
    auto mine = word.load(std::memory_order_acquire);
    sleeping.fetch_or(bit, std::memory_order_seq_cst);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    if (!stopping() && !find(slot, false) && !tasks.available(slot))
      word.wait(mine, std::memory_order_acquire);
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    sleeping.fetch_and(~bit, std::memory_order_seq_cst);
  }
}

bool job::execute(index_t chunk) noexcept {
  if (!failed_.load(std::memory_order_relaxed)) {
    try {
      run_chunk(chunk);
    } catch (...) {
      bool expected = false;
      if (failed_.compare_exchange_strong(expected, true)) error_ = std::current_exception();
    }
  }
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
  done_.complete(failed_.load(std::memory_order_acquire) ? error_ : nullptr);
  return true;
}

void submit(std::shared_ptr<job> j) {
  current_exec().get_pool().submit(std::move(j));
}

void wait_until_ready(event_state const& s) {
  int const slot = current_slot();
  auto ready = [&s] { return s.ready(); };
  struct helping {
    pool* p;
    explicit helping(pool* q) : p(q) {
      if (p) p->external_helpers.fetch_add(1, std::memory_order_acq_rel);
    }
    ~helping() {
      if (p) p->external_helpers.fetch_sub(1, std::memory_order_acq_rel);
    }
  } counted(is_worker ? nullptr : pool::instance());
  // Work with a known end (an emulated transfer) is slept through until just before it.
  if (auto when = s.expected(); when.time_since_epoch().count() != 0) {
    auto wake = when - std::chrono::microseconds(100);
    if (std::chrono::steady_clock::now() < wake && !ready()) std::this_thread::sleep_until(wake);
  }
  while (!ready()) {
    auto* p = pool::instance();
    if (p && p->help(slot, &s)) continue;
    // A worker waiting inside a task runs other tasks meanwhile (nested waits cannot
    // deadlock the pool); other threads leave tasks to the workers of their PUs.
    if (p && is_worker && p->tasks().help(slot)) continue;
    auto seen = event_epoch.load(std::memory_order_acquire);
    if (ready()) return;
    if (p && p->help(slot, &s)) continue;
    if (!spin(event_epoch, seen, ready)) continue;
    event_sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (!ready()) event_epoch.wait(seen, std::memory_order_acquire);
    event_sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
}

}  // namespace strata::detail
