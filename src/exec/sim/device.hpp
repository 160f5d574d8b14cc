// An emulated sim device: compute units that run its kernels one at a time, and two copy
// engines, one per direction (into the device's memory and out of it), each moving bytes
// over a link of its own at the configured bandwidth and latency, as a GPU's copy engines
// do. All run on threads of their own, so a kernel, an upload and a download on one device
// overlap; the timing model is the device's `bw`, `lat` and `speed` (docs/memory.md).
#pragma once

#include <strata/exec/event.hpp>
#include <strata/exec/first_error.hpp>
#include <strata/vec.hpp>

#include "exec/copy_desc.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata::detail {

/// A FIFO that keeps its storage: the copy engines' queues. A std::deque frees a node as
/// its front empties, on the engine's thread, into the issuing thread's malloc arena,
/// whose lock the issuing thread then contends for at its next allocation (futex calls on
/// every few halo copies, session 27).
template <class T>
class ring {
 public:
  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }
  T& front() noexcept { return slots_[head_]; }
  void push_back(T value) {
    if (size_ == slots_.size()) grow();
    slots_[(head_ + size_) % slots_.size()] = std::move(value);
    ++size_;
  }
  void pop_front() {
    slots_[head_] = T{};  // drops what the element holds (an event) now, not at reuse
    head_ = (head_ + 1) % slots_.size();
    --size_;
  }

 private:
  void grow() {
    std::vector<T> bigger(std::max<std::size_t>(16, 2 * slots_.size()));
    for (std::size_t i = 0; i < size_; ++i)
      bigger[i] = std::move(slots_[(head_ + i) % slots_.size()]);
    slots_ = std::move(bigger);
    head_ = 0;
  }
  std::vector<T> slots_;
  std::size_t head_ = 0, size_ = 0;
};

struct sim_params {
  std::string name;
  double bandwidth;  // bytes per second over the host link
  double latency;    // seconds per transfer
  double speed;      // compute speed factor
  int units;         // compute units (threads)
};

/// Which of a device's copy engines carries a transfer: `in` moves bytes into its memory
/// (from the host), `out` out of it (to the host, to another device, within the device).
enum class link_dir : std::uint8_t { in = 0, out = 1 };

class sim_device {
 public:
  using clock = std::chrono::steady_clock;

  explicit sim_device(sim_params params);
  ~sim_device();
  sim_device(sim_device const&) = delete;
  sim_device& operator=(sim_device const&) = delete;

  /// Queues a kernel of `chunks` chunks; its event completes when all have run and the
  /// speed model's time has passed. `name` (static storage) names it in the trace.
  event enqueue_kernel(index_t chunks, std::function<void(index_t)> body,
                       char const* name = "kernel");
  /// Queues a transfer in direction `dir` that takes `modeled` seconds (latency + bytes /
  /// bandwidth) of that direction's link, from `issued` (when the copy was asked for,
  /// before any host-side lookup) or from when the link is free, whichever is later.
  event enqueue_copy(copy_desc const& d, link_dir dir, double modeled, clock::time_point issued);
  /// Queues a copy from `from`'s memory into `to`'s (two devices): it holds `from`'s
  /// outgoing and `to`'s incoming link for `modeled` seconds, from when both are free.
  /// `from`'s outgoing engine moves the bytes; a free of either device's memory waits for it.
  static event enqueue_copy_between(sim_device& from, sim_device& to, copy_desc const& d,
                                    double modeled, clock::time_point issued);
  /// Drops the calling thread's credit for engine wake-ups it paid (a copy started by a
  /// continuation, after its dependency, gets none: device.cpp, "wake-ups ... credited").
  static void forget_wake_credit() noexcept;
  /// The modeled time of a transfer of `bytes` over this device's link.
  double transfer_time(std::size_t bytes) const noexcept {
    return params_.latency + static_cast<double>(bytes) / params_.bandwidth;
  }
  sim_params const& params() const noexcept { return params_; }
  /// The compute speed factor now (params().speed until set_speed changes it).
  double speed() const noexcept { return speed_.load(std::memory_order_relaxed); }
  /// Changes the speed factor; kernels that finish after the call are timed with it.
  void set_speed(double speed) noexcept { speed_.store(speed, std::memory_order_relaxed); }
  /// Waits until every queued kernel and copy has completed (continuations included).
  /// Returns whether there was anything to wait for.
  bool wait_idle();
  /// Whether the calling thread is one of this device's own (units, copy engine).
  bool is_own_thread() const noexcept;
  /// Records an operation on this device (queued, or issued and waiting for its
  /// dependencies) until `done` completes.
  void track(event const& done);
  /// Waits until every operation tracked so far has completed, helping the pool
  /// meanwhile (a worker runs other work): what freeing this device's memory waits for.
  void release_fence();

 private:
  struct kernel_op {
    index_t chunks;
    std::function<void(index_t)> body;
    event done = event::pending();
    std::atomic<index_t> next{0};
    std::atomic<index_t> remaining{0};
    first_error error;
    // Units working on it, and the most CPU time one of them spent in it: the speed model
    // stretches that, not the wall time (which other devices' threads on the same cores
    // inflate: eight slow devices on two cores must each keep their own pace).
    int active = 0;  // under mutex_
    std::atomic<std::int64_t> max_cpu_ns{0};
    bool finished = false;  // under mutex_
    clock::time_point start{};
    std::uint64_t flow = 0;       // trace: the arrow from the node or task that queued it
    char const* name = "kernel";  // trace: the kernel's type
  };
  struct copy_op {
    copy_desc desc;
    double modeled;
    event done;
    clock::time_point start;  // modeled: when it was issued or its link(s) became free
    std::uint64_t flow = 0;
    clock::time_point began{}, copied{};  // when its bytes started and ended moving
  };
  // One per direction: a queue, a thread and a link clock of its own.
  struct copy_engine {
    ring<copy_op> queue;          // under mutex_
    std::atomic<long> queued{0};  // queue.size(), read by the engine without the lock
    // Transfers ever queued here (also those a waiter then ran): while they keep coming,
    // the engine keeps looking instead of parking.
    std::atomic<std::uint64_t> issued{0};
    std::condition_variable ready;
    std::thread thread;
    // Under mutex_: the modeled end of the last transfer booked on this link (copies
    // between devices book the destination's incoming link too, without queueing there).
    clock::time_point booked{};
    clock::time_point link_free{};  // under mutex_: when its last transfer ended
    // Under mutex_: a transfer of this link is running, on the engine's thread or on a
    // waiter's that took it first (help_engines); one at a time per link.
    bool running = false;
    // Under mutex_: the engine waits on `ready`; an issuing thread has notified it (or left
    // that to the device's other engine) and it has not resumed yet; it is to notify the
    // other engine when it resumes. An upload and a download issued together after idle
    // then cost the issuing thread one wake-up, not two (issue 21, session 49).
    bool parked = false, wake_pending = false, wake_other = false;
  };

  void unit_main();
  // A unit's pacing through one kernel on a slow device (speed < 1): its CPU time in the
  // kernel since `cpu0`, less `paused` (the CPU time of its pauses: their system calls),
  // is the device's work so far; `work` is that work as last read, at wall time `wall`.
  struct pace_mark {
    std::int64_t cpu0 = 0, paused = 0, work = 0;
    clock::time_point wall{};
  };
  // A unit's pause after a chunk, until the model's time for the work so far.
  void pace(kernel_op const& op, pace_mark& mark) const;
  void copy_main(copy_engine& engine);
  // Takes the front transfer of `engine` if the link is idle (and it ends by `until` when
  // that is set); under mutex_.
  bool take(copy_engine& engine, copy_op& op, clock::time_point until = {});
  void run_transfer(copy_engine& engine, copy_op& op);
  // run_transfer's halves: moves the bytes and returns the modeled end; then waits for
  // that end, completes the transfer and frees its link.
  clock::time_point begin_transfer(copy_engine& engine, copy_op& op);
  void end_transfer(copy_engine& engine, copy_op& op, clock::time_point end);
  // While waiters poll the device hook, an engine leaves its front transfer to them for
  // a moment if one could take it: until when (under mutex_; zero: take it now).
  clock::time_point left_to_waiters(copy_engine& engine) const;
  // The device wait hook: runs the due transfers that no engine has taken yet.
  static bool help_engines() noexcept;
  copy_engine& engine(link_dir dir) noexcept { return engines_[static_cast<std::size_t>(dir)]; }
  copy_engine& other(copy_engine& e) noexcept {
    return &e == &engines_[0] ? engines_[1] : engines_[0];
  }
  // Under mutex_, after queueing a transfer on `e`: whether the issuing thread must notify
  // it (parked, and no wake-up on its way), or the device's other engine, being woken,
  // is to do so when it resumes.
  bool needs_wake(copy_engine& e) noexcept;
  // track() with mutex_ held: queueing an operation records it in the same critical
  // section (one lock per issue, which a waiting engine would otherwise contend for).
  void track_locked(event const& done);
  void finish(std::shared_ptr<kernel_op> const& op);
  // Run by a unit waiting inside a kernel of this device (the wait hook): takes the first
  // kernel queued behind the running one and runs it on this thread, as a child grid.
  bool run_queued_kernel();
  void done_one();

  sim_params params_;
  std::atomic<double> speed_;  // params_.speed, changed at run time by sim::set_speed
  // Under mutex_; completed and abandoned ones are dropped as it grows. Weak: an operation
  // whose dependency was dropped before completing can never run, and a free must not
  // wait for it forever.
  std::vector<std::weak_ptr<event_state>> tracked_;
  std::size_t prune_at_ = 64;
  std::mutex mutex_;
  std::condition_variable kernels_ready_;
  std::deque<std::shared_ptr<kernel_op>> kernels_;
  bool stop_ = false;
  // A unit of the running kernel waits (it ran the wait hook): a kernel queued now may be
  // what it waits for (a child launched after a dependency), so its issue wakes waiters.
  std::atomic<bool> unit_waits_{false};
  long busy_ = 0;  // queued or running operations, until their completion has run
  std::condition_variable idle_;
  std::vector<std::thread> units_;
  std::array<copy_engine, 2> engines_;  // indexed by link_dir
};

/// Waits until `deadline`: sleeps most of the way, spins the last stretch, so modeled
/// times hold to a few microseconds rather than the scheduler's tens.
void wait_until(sim_device::clock::time_point deadline);

}  // namespace strata::detail
