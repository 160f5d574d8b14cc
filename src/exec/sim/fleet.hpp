// The runtime's sim devices: which places and memories they are, and their emulators
// (src/exec/sim/device.hpp), started on first use and joined when the runtime ends.
#pragma once

#include <strata/machine/place.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace strata::detail {

class sim_device;

class sim_fleet {
 public:
  explicit sim_fleet(place const& machine);
  ~sim_fleet();
  sim_fleet(sim_fleet const&) = delete;
  sim_fleet& operator=(sim_fleet const&) = delete;

  /// A sim device of the machine, in logical order: its place and memory.
  struct entry {
    place device;
    std::uint32_t memory;  // id of the device's memory place
    int units;
  };
  entry const& at(int index) const { return entries_.at(static_cast<std::size_t>(index)); }
  int size() const noexcept { return static_cast<int>(entries_.size()); }

  /// The emulator of device `index`, started on first use; throws once shut down.
  sim_device& device(int index);
  /// The emulator of device `index` if it was started and the fleet is not shut down.
  sim_device* started(int index);
  /// Every started emulator (for draining).
  std::vector<sim_device*> started();
  /// Stops handing out emulators and joins their threads.
  void shut_down();

  /// The index of the sim device whose memory has id `memory`, or -1.
  int of_memory(std::uint32_t memory) const noexcept;
  /// The index of the sim device at or above `p`, or -1.
  int of_place(place const& p) const;

 private:
  std::vector<entry> entries_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<sim_device>> devices_;
  bool shut_down_ = false;
  // devices_ once started, read without the mutex: every copy and launch of a sim device
  // looks its emulator up, and the mutex was a cache miss on a cold issue path (issue 21).
  // Set under the mutex; cleared (with `open_`) before shut_down joins the devices.
  std::unique_ptr<std::atomic<sim_device*>[]> ready_;
  std::atomic<bool> open_{true};
};

}  // namespace strata::detail
