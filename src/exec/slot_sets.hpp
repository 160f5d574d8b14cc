// Which host PUs a place names, as sets of the pool's slots: resolved once per place and
// shared by every place that names the same PUs (jobs, arenas and graphs point at them).
#pragma once

#include <strata/machine/place.hpp>

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace strata::detail {

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

/// The runtime's slot sets. Thread-safe; the sets live as long as the runtime.
class slot_sets {
 public:
  /// Host processor count and slot set of a place, computed once per place.
  std::pair<int, slot_set const*> of(place const& p);

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
};

}  // namespace strata::detail
