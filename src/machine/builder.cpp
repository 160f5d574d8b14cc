// machine_builder: assembles a place tree and freezes it in depth-first order.
#include "machine/place_tree.hpp"

#include <strata/error.hpp>

#include <map>
#include <utility>

namespace strata {

struct machine_builder::node {
  place_info info;
  std::vector<node_id> children;
};

machine_builder::machine_builder(place_info root) {
  nodes_.push_back({std::move(root), {}});
}
machine_builder::~machine_builder() = default;
machine_builder::machine_builder(machine_builder&&) noexcept = default;
machine_builder& machine_builder::operator=(machine_builder&&) noexcept = default;

machine_builder::node_id machine_builder::add(node_id parent, place_info info) {
  if (nodes_.empty())
    throw invalid_argument("machine_builder::add after build(); expected a fresh builder");
  if (parent >= nodes_.size())
    throw invalid_argument("machine_builder::add: parent id " + std::to_string(parent) +
                           " does not exist; expected an id returned by this builder (< " +
                           std::to_string(nodes_.size()) + ")");
  auto const& p = nodes_[parent].info;
  if (kind_of(p.type) != place_kind::group)
    throw invalid_argument("machine_builder::add: '" + p.name + "' is a " +
                           std::string(to_string(kind_of(p.type))) +
                           " and cannot have children; expected a group (machine, package, "
                           "cache, core, device, ...) as parent of '" +
                           info.name + "'");
  auto id = static_cast<node_id>(nodes_.size());
  nodes_.push_back({std::move(info), {}});
  nodes_[parent].children.push_back(id);
  return id;
}

machine_builder::node_id machine_builder::graft(node_id parent, place const& subtree) {
  auto id = add(parent, subtree.info());
  for (auto const& child : subtree.children()) graft(id, child);
  return id;
}

place machine_builder::build() {
  if (nodes_.empty())
    throw invalid_argument("machine_builder::build called twice; expected a fresh builder");
  auto tree = std::make_shared<detail::place_tree>();
  tree->machine_id = detail::next_machine_id();
  tree->nodes.reserve(nodes_.size());
  // Logical indices count places of the same type and ISA in depth-first order, as
  // hwloc's do for host objects.
  std::map<std::pair<place_type, isa>, std::int32_t> counters;
  struct item {
    node_id id;
    std::int32_t parent;
  };
  std::vector<item> stack{{0, -1}};
  while (!stack.empty()) {
    auto [id, parent] = stack.back();
    stack.pop_back();
    auto& src = nodes_[id];
    detail::place_node n;
    auto here = static_cast<std::uint32_t>(tree->nodes.size());
    n.parent = parent;
    n.uid = here;
    n.depth = parent < 0 ? 0 : tree->nodes[static_cast<std::size_t>(parent)].depth + 1;
    n.logical_index = counters[{src.info.type, src.info.isa}]++;
    n.info = std::move(src.info);
    if (parent >= 0) tree->nodes[static_cast<std::size_t>(parent)].children.push_back(here);
    tree->nodes.push_back(std::move(n));
    for (auto it = src.children.rbegin(); it != src.children.rend(); ++it)
      stack.push_back({*it, static_cast<std::int32_t>(here)});
  }
  nodes_.clear();
  return place(std::move(tree), 0);
}

}  // namespace strata
