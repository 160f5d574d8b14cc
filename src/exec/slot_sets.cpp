#include "exec/slot_sets.hpp"

#include "machine/place_tree.hpp"

namespace strata::detail {

std::pair<int, slot_set const*> slot_sets::of(place const& p) {
  std::pair key{place_access::tree(p), place_access::index(p)};
  std::lock_guard lock(mutex_);
  if (auto it = cache_.find(key); it != cache_.end()) return {it->second.threads, it->second.slots};
  std::vector<std::uint64_t> bits;
  int threads = 0;
  for (auto const& pu : p.descendants(place_type::pu)) {
    if (pu.isa() != isa::host) continue;
    auto slot = static_cast<std::size_t>(pu.logical_index());
    if (bits.size() <= slot / 64) bits.resize(slot / 64 + 1, 0);
    bits[slot / 64] |= std::uint64_t{1} << (slot % 64);
    ++threads;
  }
  // Distinct sets are few (one per group of PUs); places that name the same PUs share one.
  auto& stored = set_of_bits_[bits];
  if (!stored) stored = &sets_.emplace_back(bits);
  // A bounded cache: programs that make many slices re-resolve the rare old ones.
  if (cache_.size() > 256) cache_.clear();
  cache_.emplace(key, cached{p, threads, stored});
  return {threads, stored};
}

}  // namespace strata::detail
