#include "exec/threads/pool.hpp"

#include <strata/error.hpp>

#include "log.hpp"

#include <hwloc.h>

#include <chrono>
#include <string>

namespace strata::detail {
namespace {

// Two wake-up words. Workers sleep on `work_epoch`, bumped by every submit; a submit makes
// the futex call only when a worker that may run the job is asleep (`sleeping` bits), so
// launches confined to some PUs never wake the others. Threads waiting on an event sleep
// on `event_epoch`, bumped by every completion (and by submits, since waiters help).
std::atomic<std::uint32_t> work_epoch{0};
std::atomic<std::uint32_t> event_epoch{0};
std::atomic<int> event_sleepers{0};
std::atomic<pool*> live_pool{nullptr};
thread_local int my_slot = 0;

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

void bump(std::atomic<std::uint32_t>& word, std::atomic<int> const& sleepers) noexcept {
  word.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) > 0) word.notify_all();
}

}  // namespace

void notify_progress() noexcept {
  bump(event_epoch, event_sleepers);
}

int current_slot() noexcept {
  return my_slot;
}

pool* pool::instance() noexcept {
  return live_pool.load(std::memory_order_acquire);
}

pool::pool(std::vector<int> slot_os_index, bool pin) : sleeping_((slot_os_index.size() + 63) / 64) {
  // Slot 0 has no worker: the threads that wait do its share (see pool.hpp).
  for (std::size_t s = 1; s < slot_os_index.size(); ++s)
    threads_.emplace_back(
        [this, s, os = slot_os_index[s], pin] { worker_main(static_cast<int>(s), os, pin); });
  live_pool.store(this, std::memory_order_release);
}

pool::~pool() {
  drain();
  stop_.store(true);
  work_epoch.fetch_add(1, std::memory_order_seq_cst);
  work_epoch.notify_all();
  for (auto& t : threads_) t.join();
  live_pool.store(nullptr, std::memory_order_release);
}

void pool::submit(std::shared_ptr<job> j) {
  auto const* slots = j->slots();
  {
    std::lock_guard lock(mutex_);
    active_.push_back(std::move(j));
  }
  work_epoch.fetch_add(1, std::memory_order_seq_cst);
  for (std::size_t w = 0; w < sleeping_.size() && w < slots->bits.size(); ++w)
    if (sleeping_[w].load(std::memory_order_seq_cst) & slots->bits[w]) {
      work_epoch.notify_all();
      break;
    }
  notify_progress();  // waiting threads help too
}

std::shared_ptr<job> pool::find(int slot) {
  std::lock_guard lock(mutex_);
  for (auto it = active_.begin(); it != active_.end();) {
    if ((*it)->exhausted()) {
      it = active_.erase(it);
      continue;
    }
    if ((*it)->slots()->has(slot)) return *it;
    ++it;
  }
  return nullptr;
}

bool pool::help(int slot, event_state const* until) {
  auto j = find(slot);
  if (!j) return false;
  bool ran = false;
  for (index_t c; (c = j->claim()) >= 0;) {
    j->execute(c);
    ran = true;
    if (until && until->ready()) break;
  }
  return ran;
}

void pool::drain() {
  for (;;) {
    std::shared_ptr<job> last;
    {
      std::lock_guard lock(mutex_);
      if (active_.empty()) return;
      last = active_.back();
    }
    try {
      last->done().wait();
    } catch (...) {
      // Its waiter sees the failure; shutting down only needs the job to be over.
    }
    std::lock_guard lock(mutex_);
    std::erase(active_, last);
  }
}

void pool::worker_main(int slot, int os_index, bool pin) {
  my_slot = slot;
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
  auto& my_word = sleeping_[static_cast<std::size_t>(slot) / 64];
  std::uint64_t const my_bit = std::uint64_t{1} << (slot % 64);
  auto stopping = [this] { return stop_.load(std::memory_order_relaxed); };
  while (!stopping()) {
    if (help(slot, nullptr)) continue;
    auto seen = work_epoch.load(std::memory_order_acquire);
    if (help(slot, nullptr)) continue;
    if (!spin(work_epoch, seen, stopping)) continue;
    // Announce the sleep, then look once more: a submit either sees the bit (and wakes
    // us) or happened before, and then its job is visible here.
    my_word.fetch_or(my_bit, std::memory_order_seq_cst);
    if (!stopping() && !find(slot)) work_epoch.wait(seen, std::memory_order_acquire);
    my_word.fetch_and(~my_bit, std::memory_order_seq_cst);
  }
}

void job::execute(index_t chunk) noexcept {
  if (!failed_.load(std::memory_order_relaxed)) {
    try {
      run_chunk(chunk);
    } catch (...) {
      bool expected = false;
      if (failed_.compare_exchange_strong(expected, true)) error_ = std::current_exception();
    }
  }
  if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1)
    done_.complete(failed_.load(std::memory_order_acquire) ? error_ : nullptr);
}

void submit(std::shared_ptr<job> j) {
  current_exec().get_pool().submit(std::move(j));
}

void wait_until_ready(event_state const& s) {
  int const slot = current_slot();
  auto ready = [&s] { return s.ready(); };
  while (!ready()) {
    auto* p = pool::instance();
    if (p && p->help(slot, &s)) continue;
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
