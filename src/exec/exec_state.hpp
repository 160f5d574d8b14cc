// The execution layer's share of the runtime: the worker pool (created on first use),
// the slot sets of places, and the cache that makes resolving a launch target cheap.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/machine/place.hpp>

#include <atomic>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace strata::detail {

class pool;
class sim_device;
struct exec_state;

/// The live runtime's execution state (throws strata::error when no runtime is alive).
exec_state& current_exec();

/// Host PUs a job may run on, as bits over the pool's slots (slot = PU logical index).
struct slot_set {
  std::vector<std::uint64_t> bits;
  /// The workers a submit may wake: `bits` without slot 0, whose share the waiting
  /// threads do (slot 0's reserve worker is woken separately, for `only_first` jobs).
  std::vector<std::uint64_t> wake;
  bool only_first = false;

  explicit slot_set(std::vector<std::uint64_t> b) : bits(std::move(b)), wake(bits) {
    bool others = false;
    for (std::size_t w = 0; w < bits.size(); ++w)
      others = others || (w == 0 ? (bits[0] & ~std::uint64_t{1}) != 0 : bits[w] != 0);
    only_first = !bits.empty() && (bits[0] & 1u) && !others;
    if (!wake.empty()) wake[0] &= ~std::uint64_t{1};  // slot 0's worker wakes its own way
  }
  bool has(int slot) const noexcept {
    auto word = static_cast<std::size_t>(slot) / 64;
    return word < bits.size() && (bits[word] >> (slot % 64) & 1u);
  }
};

/// The CUDA backend's per-runtime state (src/exec/cuda), owned here so that it lives and
/// dies with the runtime; virtual so that builds without CUDA need none of its code.
struct device_backend_state {
  virtual ~device_backend_state() = default;
  /// Waits until every piece of work handed to the device has completed its event;
  /// returns whether there was any.
  virtual bool wait_idle() = 0;
};

struct exec_state {
  exec_state(place machine, bool this_system);
  ~exec_state();

  /// The pool, started on first call.
  pool& get_pool();
  /// Waits until the pool (if started) has no work left; the runtime calls it before
  /// tearing down, while it is still the current runtime.
  void drain();

  /// Host processor count and slot set of a place, computed once per place.
  std::pair<int, slot_set const*> host_slots(place const& p);

  /// The sim devices of the machine, in logical order: their places and memories.
  struct sim_entry {
    place device;
    std::uint32_t memory;  // id of the device's memory place
    int units;
  };
  std::vector<sim_entry> sims;
  /// The sim device with this index, started on first use.
  sim_device& sim(int index);
  /// The index of the sim device whose memory has id `memory`, or -1.
  int sim_of_memory(std::uint32_t memory) const noexcept;
  /// The index of the sim device at or above `p`, or -1.
  int sim_of_place(place const& p) const;
  /// Waits for the sim device owning memory `memory` to finish its queued work.
  static void sim_release_fence(std::uint32_t memory, std::uint64_t machine_key);

  place machine;
  bool this_system;
  std::uint64_t const generation;  // unique per runtime: keys per-thread caches
  std::vector<int> slot_os_index;  // OS CPU number of each host PU, in slot order

  /// The CUDA backend's state, made on first use (under cuda_mutex).
  std::mutex cuda_mutex;
  std::unique_ptr<device_backend_state> cuda;

 private:
  struct cached {
    place keep_alive;  // holds the place's tree so its address is not reused
    int threads;
    slot_set const* slots;
  };
  std::mutex mutex_;
  std::map<std::pair<void const*, std::uint32_t>, cached> cache_;
  std::list<slot_set> sets_;  // stable addresses: jobs point at them
  std::map<std::vector<std::uint64_t>, slot_set const*> set_of_bits_;  // one per distinct set
  std::once_flag pool_once_;
  std::unique_ptr<pool> pool_;
  std::atomic<pool*> started_pool_{nullptr};  // pool_ once started, for readers outside call_once
  std::mutex sims_mutex_;
  std::vector<std::unique_ptr<sim_device>> sim_devices_;
  bool shutting_down_ = false;
};

}  // namespace strata::detail
