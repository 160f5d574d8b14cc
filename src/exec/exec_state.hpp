// The execution layer's share of the runtime (see exec_state below).
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/machine/place.hpp>

#include "exec/sim/fleet.hpp"
#include "exec/slot_sets.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace strata::detail {

class pool;
struct exec_state;

/// The live runtime's execution state (throws strata::error when no runtime is alive).
exec_state& current_exec();

/// The CUDA backend's per-runtime state (src/exec/cuda), owned here so that it lives and
/// dies with the runtime; virtual so that builds without CUDA need none of its code.
struct device_backend_state {
  virtual ~device_backend_state() = default;
  /// Waits until every piece of work handed to the device has completed its event;
  /// returns whether there was any.
  virtual bool wait_idle() = 0;
};

/// The execution layer's state of one runtime: the machine it runs, the pool, the slot
/// sets of places, the sim devices and the CUDA backend's state. Each part keeps its own
/// lock; this struct only ties their lifetimes to the runtime's.
struct exec_state {
  exec_state(place machine, bool this_system);
  ~exec_state();

  /// The pool, started on first call.
  pool& get_pool();
  /// Waits until the pool (if started), the sim devices and the CUDA backend have no
  /// work left, then shuts the sim devices down; the runtime calls it before tearing
  /// down, while it is still the current runtime.
  void drain();

  /// Freeing sim memory waits for its device's queued work (memory/registry.hpp's
  /// device_release_fence).
  static void sim_release_fence(std::uint32_t memory, std::uint64_t machine_key);

  place machine;
  std::uint64_t const machine_key;  // current_machine_key() of this runtime, computed once
  bool this_system;
  std::uint64_t const generation;  // unique per runtime: keys per-thread caches
  std::vector<int> slot_os_index;  // OS CPU number of each host PU, in slot order
  slot_sets slots;
  sim_fleet sims;

  /// The CUDA backend's state, made on first use (under cuda_mutex).
  std::mutex cuda_mutex;
  std::unique_ptr<device_backend_state> cuda;
  /// How long a CUDA device's completion worker polls a marker before it sleeps
  /// (STRATA_CUDA_SPIN_US, read once when the runtime starts: src/exec/cuda/spin_window.hpp).
  std::chrono::microseconds cuda_spin{0};

 private:
  std::once_flag pool_once_;
  std::unique_ptr<pool> pool_;
  std::atomic<pool*> started_pool_{nullptr};  // pool_ once started, for readers outside call_once
};

}  // namespace strata::detail
