// The storage behind `strata::place`: an immutable tree in depth-first order.
#pragma once

#include <strata/machine/place.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace strata::detail {

struct place_node {
  place_info info;
  std::int32_t parent = -1;  // index in the same tree; -1 for the root
  std::vector<std::uint32_t> children;
  std::uint32_t depth = 0;
  std::uint32_t uid = 0;  // index in the full machine tree
  std::int32_t logical_index = 0;
};

struct place_tree {
  std::uint64_t machine_id = 0;   // shared by a machine and all its slices
  std::vector<place_node> nodes;  // nodes[0] is the root; parents precede children
  // For slices: the full machine tree and, per uid, the index here (-1 if filtered out).
  std::shared_ptr<place_tree const> full;
  std::vector<std::int32_t> index_of_uid;

  std::int32_t find_uid(std::uint32_t uid) const noexcept {
    if (!full) return uid < nodes.size() ? static_cast<std::int32_t>(uid) : -1;
    return uid < index_of_uid.size() ? index_of_uid[uid] : -1;
  }
};

/// Identity of a place's tree and node, for caches keyed by place (exec layer).
struct place_access {
  static void const* tree(place const& p) noexcept { return p.tree_.get(); }
  static std::uint32_t index(place const& p) noexcept { return p.index_; }
};

/// A fresh id for a newly built machine tree.
std::uint64_t next_machine_id() noexcept;

}  // namespace strata::detail
