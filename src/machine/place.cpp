// Queries, navigation and slicing of place trees (Phalanx §III-A).
#include "machine/place_tree.hpp"

#include <strata/error.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <ostream>

namespace strata {
namespace {

constexpr std::array kind_names{"processor", "memory", "group"};
constexpr std::array isa_names{"host", "cuda", "sim"};
constexpr std::array type_names{"cluster",      "rank",        "machine",      "package", "die",
                                "group",        "cache",       "core",         "pu",      "device",
                                "compute_unit", "host_memory", "device_memory"};

template <class Enum, std::size_t N>
std::optional<Enum> parse_enum(std::array<char const*, N> const& names, std::string_view text) {
  for (std::size_t i = 0; i < N; ++i)
    if (text == names[i]) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace

std::string_view to_string(place_kind k) noexcept {
  return kind_names.at(std::size_t(k));
}
std::string_view to_string(isa a) noexcept {
  return isa_names.at(std::size_t(a));
}
std::string_view to_string(place_type t) noexcept {
  return type_names.at(std::size_t(t));
}
std::optional<place_kind> parse_place_kind(std::string_view text) noexcept {
  return parse_enum<place_kind>(kind_names, text);
}
std::optional<isa> parse_isa(std::string_view text) noexcept {
  return parse_enum<isa>(isa_names, text);
}
std::optional<place_type> parse_place_type(std::string_view text) noexcept {
  return parse_enum<place_type>(type_names, text);
}

std::uint64_t detail::next_machine_id() noexcept {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

detail::place_tree const& place::tree() const {
  if (!tree_)
    throw invalid_argument(
        "use of an empty strata::place (default-constructed); expected a place obtained from "
        "runtime::machine() or one of its queries");
  return *tree_;
}

namespace {
detail::place_node const& node_of(detail::place_tree const& t, std::uint32_t i) {
  return t.nodes[i];
}
}  // namespace

place_kind place::kind() const {
  return kind_of(info().type);
}
isa place::isa() const {
  return info().isa;
}
place_type place::type() const {
  return info().type;
}
std::string const& place::name() const {
  return info().name;
}
std::int32_t place::os_index() const {
  return info().os_index;
}
std::int32_t place::logical_index() const {
  return node_of(tree(), index_).logical_index;
}
std::uint64_t place::capacity() const {
  return info().capacity;
}
place_info const& place::info() const {
  return node_of(tree(), index_).info;
}
std::uint32_t place::depth() const {
  return node_of(tree(), index_).depth;
}
std::uint32_t place::id() const {
  return node_of(tree(), index_).uid;
}
bool place::is_root() const {
  return node_of(tree(), index_).parent < 0;
}

std::string place::path() const {
  auto const& t = tree();
  std::vector<std::uint32_t> chain;
  for (auto i = static_cast<std::int32_t>(index_); i >= 0; i = t.nodes[i].parent)
    chain.push_back(static_cast<std::uint32_t>(i));
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!out.empty()) out += '/';
    out += t.nodes[*it].info.name;
  }
  return out;
}

std::optional<place> place::parent() const {
  auto p = node_of(tree(), index_).parent;
  if (p < 0) return std::nullopt;
  return at(static_cast<std::uint32_t>(p));
}

place place::root() const {
  tree();
  return at(0);
}

std::vector<place> place::children() const {
  std::vector<place> out;
  for (auto c : node_of(tree(), index_).children) out.push_back(at(c));
  return out;
}

namespace {
// Depth-first walk of the subtree at `start`, parents first.
template <class Visit>
void walk(detail::place_tree const& t, std::uint32_t start, Visit&& visit) {
  std::vector<std::uint32_t> stack{start};
  while (!stack.empty()) {
    auto i = stack.back();
    stack.pop_back();
    visit(i);
    auto const& ch = t.nodes[i].children;
    for (auto it = ch.rbegin(); it != ch.rend(); ++it) stack.push_back(*it);
  }
}
}  // namespace

std::vector<place> place::descendants() const {
  std::vector<place> out;
  walk(tree(), index_, [&](std::uint32_t i) { out.push_back(at(i)); });
  return out;
}

std::vector<place> place::descendants(place_type type) const {
  std::vector<place> out;
  auto const& t = tree();
  walk(t, index_, [&](std::uint32_t i) {
    if (t.nodes[i].info.type == type) out.push_back(at(i));
  });
  return out;
}

std::uint64_t place::last_level_cache() const {
  std::uint8_t level = 0;
  std::uint64_t bytes = 0;
  auto const& t = tree();
  walk(t, index_, [&](std::uint32_t i) {
    auto const& info = t.nodes[i].info;
    if (info.type != place_type::cache) return;
    if (info.cache_level > level) {
      level = info.cache_level;
      bytes = 0;
    }
    if (info.cache_level == level) bytes += info.capacity;
  });
  return bytes;
}

std::vector<place> place::processors() const {
  std::vector<place> out;
  auto const& t = tree();
  walk(t, index_, [&](std::uint32_t i) {
    if (kind_of(t.nodes[i].info.type) == place_kind::processor) out.push_back(at(i));
  });
  return out;
}

std::vector<place> place::memories() const {
  std::vector<place> out;
  auto const& t = tree();
  walk(t, index_, [&](std::uint32_t i) {
    if (kind_of(t.nodes[i].info.type) == place_kind::memory) out.push_back(at(i));
  });
  return out;
}

std::vector<place> place::memories_above() const {
  auto const& t = tree();
  std::vector<place> out;
  if (kind() == place_kind::memory) out.push_back(*this);
  for (auto i = t.nodes[index_].parent; i >= 0; i = t.nodes[i].parent)
    for (auto c : t.nodes[i].children)
      if (kind_of(t.nodes[c].info.type) == place_kind::memory && c != index_) out.push_back(at(c));
  return out;
}

place place::slice(place_kind k) const {
  return slice([k](place const& p) { return p.kind() == k; });
}

place place::slice(strata::isa a) const {
  return slice([a](place const& p) { return p.isa() == a; });
}

place place::slice(std::function<bool(place const&)> const& keep) const {
  auto const& t = tree();
  auto full = t.full ? t.full : tree_;
  // A place stays when it matches or has a descendant that does; the slice's root (this
  // place) always stays. Nodes are in depth-first order, so one backward pass suffices.
  std::vector<char> kept(t.nodes.size(), 0);
  std::vector<std::uint32_t> order;
  walk(t, index_, [&](std::uint32_t i) { order.push_back(i); });
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    auto i = *it;
    if (!kept[i] && keep(at(i))) kept[i] = 1;
    if (kept[i] && t.nodes[i].parent >= 0) kept[static_cast<std::size_t>(t.nodes[i].parent)] = 1;
  }
  kept[index_] = 1;

  auto out = std::make_shared<detail::place_tree>();
  out->machine_id = t.machine_id;
  out->full = full;
  out->index_of_uid.assign(full->nodes.size(), -1);
  std::vector<std::int32_t> new_index(t.nodes.size(), -1);
  for (auto i : order) {
    if (!kept[i]) continue;
    auto n = t.nodes[i];
    auto here = static_cast<std::uint32_t>(out->nodes.size());
    new_index[i] = static_cast<std::int32_t>(here);
    n.children.clear();
    if (i == index_) {
      n.parent = -1;
      n.depth = 0;
    } else {
      n.parent = new_index[static_cast<std::size_t>(n.parent)];
      auto& parent = out->nodes[static_cast<std::size_t>(n.parent)];
      parent.children.push_back(here);
      n.depth = parent.depth + 1;
    }
    out->index_of_uid[n.uid] = static_cast<std::int32_t>(here);
    out->nodes.push_back(std::move(n));
  }
  return place(std::move(out), 0);
}

place place::unsliced() const {
  auto const& t = tree();
  if (!t.full) return *this;
  return place(t.full, id());
}

bool place::same_machine(place const& other) const noexcept {
  if (!tree_ || !other.tree_) return tree_ == other.tree_;
  return tree_->machine_id == other.tree_->machine_id;
}

bool place::contains(place const& other) const {
  auto const& t = tree();
  if (!same_machine(other)) return false;
  auto i = t.find_uid(other.id());
  for (; i >= 0; i = t.nodes[static_cast<std::size_t>(i)].parent)
    if (static_cast<std::uint32_t>(i) == index_) return true;
  return false;
}

place place::common_ancestor(place const& other) const {
  auto const& t = tree();
  auto j = same_machine(other) ? t.find_uid(other.id()) : -1;
  if (j < 0)
    throw invalid_argument("common_ancestor: place '" + other.path() +
                           "' is not part of the tree of '" + path() +
                           "'; expected two places of the same (sliced) tree");
  auto i = static_cast<std::int32_t>(index_);
  while (t.nodes[i].depth > t.nodes[j].depth) i = t.nodes[i].parent;
  while (t.nodes[j].depth > t.nodes[i].depth) j = t.nodes[j].parent;
  while (i != j) {
    i = t.nodes[i].parent;
    j = t.nodes[j].parent;
  }
  return at(static_cast<std::uint32_t>(i));
}

std::uint32_t place::distance(place const& other) const {
  if (!same_machine(other))
    throw invalid_argument("distance: places '" + path() + "' and '" + other.path() +
                           "' belong to different machines; expected places of one machine");
  auto full = unsliced();
  auto ancestor = full.common_ancestor(other);
  auto d_full = [](place const& p) { return p.unsliced().depth(); };
  return d_full(*this) + d_full(other) - 2 * ancestor.depth();
}

std::size_t place::hash() const noexcept {
  if (!tree_) return 0;
  return std::hash<std::uint64_t>{}(tree_->machine_id * 0x9E3779B97F4A7C15ull ^
                                    tree_->nodes[index_].uid);
}

std::ostream& operator<<(std::ostream& os, place const& p) {
  return os << (p.valid() ? p.path() : std::string("<empty place>"));
}

}  // namespace strata
