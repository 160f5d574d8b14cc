// The machine as a tree of places (Phalanx §III-A).
//
// Processors are the leaves; inner nodes are groups (packages, caches, cores, devices);
// memories are leaves attached to the group of processors they are local to, so a
// processor sees the chain of memories above it on its path to the root, nearest first.
// A place is a cheap handle (shared tree + index): copy it freely, compare it, hash it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata {

/// Phalanx's place categories: what `slice(place_kind)` filters on.
enum class place_kind : std::uint8_t { processor, memory, group };

/// The instruction set a place's processors run (Phalanx's `x86` / `sm`), or that its
/// memory belongs to. `sim` is Strata's emulated accelerator (a test and planning tool).
enum class isa : std::uint8_t { host, cuda, sim };

/// What a place is, finer than its kind. `cluster` and `rank` are the levels above a
/// machine once Strata runs over MPI: a cluster's children are ranks, each holding the
/// machine tree of its process.
enum class place_type : std::uint8_t {
  cluster,
  rank,
  machine,
  package,
  die,
  group,
  cache,
  core,
  pu,            // a hardware thread of a host core (hwloc's PU)
  device,        // an accelerator: a CUDA GPU or a sim device
  compute_unit,  // a processor of a device: a CUDA SM or a sim worker
  host_memory,   // a NUMA node's memory
  device_memory  // an accelerator's own memory
};

/// The kind implied by a type: pu and compute_unit are processors, the two memories are
/// memories, everything else groups.
constexpr place_kind kind_of(place_type t) noexcept {
  switch (t) {
    case place_type::pu:
    case place_type::compute_unit:
      return place_kind::processor;
    case place_type::host_memory:
    case place_type::device_memory:
      return place_kind::memory;
    default:
      return place_kind::group;
  }
}

std::string_view to_string(place_kind k) noexcept;
std::string_view to_string(isa a) noexcept;
std::string_view to_string(place_type t) noexcept;
std::optional<place_kind> parse_place_kind(std::string_view text) noexcept;
std::optional<isa> parse_isa(std::string_view text) noexcept;
std::optional<place_type> parse_place_type(std::string_view text) noexcept;

/// The connection of a device to the host: bytes per second and seconds per transfer.
/// Zero means unknown.
struct link_model {
  double bandwidth = 0.0;
  double latency = 0.0;
  bool operator==(link_model const&) const = default;
};

/// Everything a place knows about itself. Built by discovery (or by `machine_builder`).
struct place_info {
  place_type type = place_type::group;
  strata::isa isa = strata::isa::host;
  std::string name;
  std::int32_t os_index = -1;    // the OS's number (PU, NUMA node, device); -1 if none
  std::uint64_t capacity = 0;    // bytes of a memory or cache; 0 if unknown or n/a
  std::uint8_t cache_level = 0;  // 1, 2, 3... for caches
  link_model link{};             // devices: their link to the host
  double speed = 1.0;            // devices: relative compute speed (sim's `speed`)
  std::int32_t rank = 0;         // the process that owns this place (MPI later)
  std::vector<std::pair<std::string, std::string>> attributes;  // free-form details

  bool operator==(place_info const&) const = default;
};

namespace detail {
struct place_tree;
struct place_access;
}  // namespace detail

/// A node of a place tree (Phalanx `place`). Sliced trees are trees of their own whose
/// places keep the identity (`id()`) of the machine's places they came from.
class place {
 public:
  /// An empty handle; every query on it throws `strata::invalid_argument`.
  place() = default;

  bool valid() const noexcept { return tree_ != nullptr; }

  place_kind kind() const;
  strata::isa isa() const;
  place_type type() const;
  std::string const& name() const;
  std::int32_t os_index() const;
  /// Index among the places of the same type and ISA, in depth-first order (hwloc's
  /// logical index for host places; `sim1` has logical index 1).
  std::int32_t logical_index() const;
  std::uint64_t capacity() const;
  place_info const& info() const;
  /// Edges from the root of this place's tree.
  std::uint32_t depth() const;
  /// Stable number of this place in its machine; equal across slices of that machine.
  std::uint32_t id() const;
  /// "Machine/Package 0/L3 0/..." in this place's tree, for messages and logs.
  std::string path() const;

  bool is_root() const;
  std::optional<place> parent() const;
  place root() const;
  std::vector<place> children() const;
  /// This place and all places below it, depth-first (parents before children).
  std::vector<place> descendants() const;
  /// The places of one type in this subtree (this place included), depth-first.
  std::vector<place> descendants(place_type t) const;
  /// The processor leaves of this subtree (this place if it is a processor).
  std::vector<place> processors() const;
  /// The memories in this subtree (this place if it is a memory).
  std::vector<place> memories() const;
  /// Bytes of the highest-level caches in this subtree, summed over their instances (a
  /// machine's last-level cache); 0 when discovery found none.
  std::uint64_t last_level_cache() const;
  /// The memories on the path from this place to the root, nearest first: this place if
  /// it is a memory, then the memories attached to each ancestor (Phalanx §III-A).
  std::vector<place> memories_above() const;

  /// Filtered trees (Phalanx Fig. 1c-d, slice_by_type / slice_by_isa): keeps the places
  /// that match and the groups on their paths, rooted at this place.
  place slice(place_kind k) const;
  place slice(strata::isa a) const;
  place slice(std::function<bool(place const&)> const& keep) const;
  /// The same place in the full machine tree (itself when not from a slice).
  place unsliced() const;

  /// Whether `other` is this place or below it, in this place's tree. A place filtered
  /// out of this tree is not contained even when it is below physically.
  bool contains(place const& other) const;
  /// The deepest place of this tree above (or equal to) both. Throws
  /// `strata::invalid_argument` when `other` is not part of this tree.
  place common_ancestor(place const& other) const;
  /// Hops between the two places through their common ancestor in the machine tree:
  /// 0 for the same place, larger for places further apart.
  std::uint32_t distance(place const& other) const;
  /// Whether both places describe the same machine (discovered or loaded together).
  bool same_machine(place const& other) const noexcept;

  /// The same physical place of the same machine, whatever slice each came from.
  friend bool operator==(place const& a, place const& b) noexcept {
    return a.same_machine(b) && (!a.valid() || a.id() == b.id());
  }

  std::size_t hash() const noexcept;

 private:
  friend class machine_builder;
  friend struct detail::place_access;
  place(std::shared_ptr<detail::place_tree const> tree, std::uint32_t index) noexcept
      : tree_(std::move(tree)), index_(index) {}
  detail::place_tree const& tree() const;  // throws on an empty handle
  place at(std::uint32_t index) const { return place(tree_, index); }

  std::shared_ptr<detail::place_tree const> tree_;
  std::uint32_t index_ = 0;
};

/// Free-function spelling of `p.memories_above()`, as in the Phalanx paper.
inline std::vector<place> memories_above(place const& processor) {
  return processor.memories_above();
}

/// Writes the place's path.
std::ostream& operator<<(std::ostream& os, place const& p);

/// Assembles place trees: discovery, JSON loading, tests and (later) the MPI layer that
/// grafts each rank's machine under a cluster root all build through it.
class machine_builder {
 public:
  using node_id = std::uint32_t;

  explicit machine_builder(place_info root);
  ~machine_builder();
  machine_builder(machine_builder&&) noexcept;
  machine_builder& operator=(machine_builder&&) noexcept;

  node_id root() const noexcept { return 0; }
  /// Adds a child; processors and memories are leaves, so they cannot be parents.
  node_id add(node_id parent, place_info info);
  /// Copies the tree below (and including) `subtree` under `parent`.
  node_id graft(node_id parent, place const& subtree);
  /// The finished tree's root; the builder is empty afterwards.
  place build();

 private:
  struct node;
  std::vector<node> nodes_;
};

}  // namespace strata

template <>
struct std::hash<strata::place> {
  std::size_t operator()(strata::place const& p) const noexcept { return p.hash(); }
};
