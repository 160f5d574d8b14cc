#include <strata/task/graph.hpp>

#include <strata/error.hpp>
#include <strata/runtime.hpp>

#include "exec/exec_state.hpp"
#include "exec/threads/pool.hpp"
#include "task/graph_state.hpp"
#include "task/scheduler.hpp"

#include <algorithm>
#include <string>

namespace strata {

using task::detail::graph_state;
using task::detail::node;
using task::detail::node_extra;

namespace task::detail {

std::string label(node const& n) {
  return n.extra && !n.extra->name.empty() ? "\"" + n.extra->name + "\""
                                           : "#" + std::to_string(n.index);
}

namespace {

node_extra& extra_of(node& n) {
  if (!n.extra) {
    n.extra = new node_extra();
    n.owner->cleanup = true;
  }
  return *n.extra;
}

}  // namespace

void needs_cleanup(node& n) noexcept {
  n.owner->cleanup = true;
}
}  // namespace task::detail

using task::detail::extra_of;
using task::detail::label;

namespace {

event start(graph& g, strata::detail::slot_set const* slots, graph_state* parent);

}  // namespace

node_ref& node_ref::precede(node_ref later) {
  if (!n_ || !later.n_)
    throw invalid_argument("node_ref::precede: an empty node_ref; expected nodes of a graph");
  if (n_->owner != later.n_->owner)
    throw invalid_argument("node_ref::precede: nodes of two different graphs (" + label(*n_) +
                           ", " + label(*later.n_) +
                           "); expected nodes of one graph (use a sub-graph across graphs)");
  if (n_->owner->running.load(std::memory_order_acquire))
    throw error("node_ref::precede: the graph is running; expected edges added between runs");
  auto* n = n_;
  if (n->out < 2) {
    n->near[n->out] = later.n_;
  } else {
    auto& all = extra_of(*n).successors;
    if (n->out == 2) all.assign(n->near, n->near + 2);
    all.push_back(later.n_);
  }
  ++n->out;
  // A condition node's edges are weak: its choice schedules the successor directly.
  if (n->flags & node::condition) {
    extra_of(*later.n_).weak_in = true;
  } else {
    ++later.n_->initial;
    later.n_->pending.store(later.n_->initial, std::memory_order_relaxed);
    // An edge to an earlier (or the same) node may close a cycle; edges that all go
    // forward in the order of creation cannot (finalize skips its cycle check then).
    if (later.n_->index <= n->index) n->owner->backward = true;
  }
  n->owner->finalized = false;
  return *this;
}

std::string_view node_ref::name() const noexcept {
  return n_ && n_->extra ? std::string_view(n_->extra->name) : std::string_view();
}

graph::graph(execution_kind kind) : s_(std::make_unique<graph_state>(kind)) {}

graph::~graph() {
  // Destroying a graph while it runs would free nodes that workers are executing.
  if (s_ && s_->running.load(std::memory_order_acquire)) {
    try {
      s_->done.wait();
    } catch (...) {  // the run's failure belongs to whoever waits on its event
    }
  }
}

graph::graph(graph&&) noexcept = default;
graph& graph::operator=(graph&&) noexcept = default;

node* graph::make(node_options o) {
  if (s_->running.load(std::memory_order_acquire))
    throw error(
        "strata::graph: a node was added while the graph runs; expected the graph "
        "built between runs");
  node* n = s_->new_node();
  n->kind = o.kind.value_or(s_->default_kind);
  n->owner = s_.get();
  n->index = s_->count++;
  if (!o.name.empty()) extra_of(*n).name = std::move(o.name);
  if (o.where) {
    auto& x = extra_of(*n);
    auto& exec = strata::detail::current_exec();
    strata::detail::check_runtime_place(*o.where, "strata::graph: a node's place");
    auto [threads, slots] = exec.slots.of(*o.where);
    bool const device = o.where->type() == place_type::device && o.where->isa() != isa::host;
    if (device) {
      n->kind = execution_kind::device;
    } else if (threads > 0) {
      x.slots = slots;
      n->flags |= node::placed;
    } else {
      throw invalid_argument("strata::graph: node place " + o.where->name() +
                             " has neither host PUs nor is a device; expected CPUs to run "
                             "the node on or a device to give it");
    }
    x.where = std::move(o.where);
  }
  s_->tails.push_back(n);
  s_->finalized = false;
  return n;
}

void graph::mark_condition(node* n) {
  n->flags |= node::condition;
  extra_of(*n);  // holds the branch taken
}

void graph::on_pass(std::function<void()> fn) {
  s_->pass_hooks.push_back(std::move(fn));
}

void graph::add_to_level(node* n, void const*) {
  for (auto* p : s_->previous) node_ref(p).precede(node_ref(n));
  s_->current.push_back(n);
}

void graph::join_level(node* n) {
  s_->current.push_back(n);
}

void graph::new_level() {
  if (s_->current.empty()) return;  // then() on a fresh graph or after sync
  s_->previous = std::move(s_->current);
  s_->current.clear();
}

namespace {
/// Whether a split node touched `part`'s data besides its own part (a tensor halo).
bool reaches(node_extra const& x, std::size_t part) {
  for (auto r : x.reach)
    if (r == part) return true;
  return false;
}
}  // namespace

void graph::add_split_node(node* n, partition_key const& partitioning, std::size_t part,
                           std::size_t parts, bool same_part_only) {
  auto& x = extra_of(*n);
  x.split = true;
  x.partitioning = partitioning;
  x.part = part;
  x.parts = parts;
  for (auto* p : s_->previous) {
    // Ripple §5.3.3: after a split of the same partitioning (same memory, extent,
    // stride, parts and map), only the same partition's nodes (and nodes that are not
    // split at all) come before. Any other split, overlapping or not, comes before whole.
    bool const split_same = p->extra && p->extra->split && p->extra->partitioning == partitioning &&
                            p->extra->parts == parts;
    if (same_part_only && split_same && p->extra->part != part && !reaches(*p->extra, part))
      continue;
    node_ref(p).precede(node_ref(n));
  }
  s_->current.push_back(n);
}

void graph::add_part_node(node* n, partition_key const& key, std::size_t part, std::size_t parts,
                          std::span<std::size_t const> after_parts,
                          std::span<std::size_t const> reach) {
  auto& x = extra_of(*n);
  x.split = true;
  x.partitioning = key;
  x.part = part;
  x.parts = parts;
  x.reach.assign(reach.begin(), reach.end());
  for (auto* p : s_->previous) {
    bool const split_same =
        p->extra && p->extra->split && p->extra->partitioning == key && p->extra->parts == parts;
    if (split_same) {
      bool touches = false;
      for (auto a : after_parts)
        if (p->extra->part == a || reaches(*p->extra, a)) {
          touches = true;
          break;
        }
      if (!touches) continue;
    }
    node_ref(p).precede(node_ref(n));
  }
  s_->current.push_back(n);
}

void graph::add_sync(node* n) {
  // Every node that has no successor yet (all work so far ends in one of them).
  auto& tails = s_->tails;
  std::vector<node*> open;
  for (auto* p : tails)
    if (p != n && p->out == 0) open.push_back(p);
  for (auto* p : open) node_ref(p).precede(node_ref(n));
  tails.assign(1, n);
  // What follows comes after the sync: `emplace` adds to the level after it.
  s_->previous.assign(1, n);
  s_->current.clear();
}

graph& graph::emplace(graph& sub, node_options o) {
  if (&sub == this)
    throw invalid_argument("strata::graph: a graph emplaced into itself; expected another graph");
  if (o.name.empty()) o.name = "subgraph";
  auto* n = make(std::move(o));
  // The sub-graph runs on the PUs its parent runs on, and is cancelled with it.
  struct run_sub {
    graph* sub;
    graph_state* owner;
    event operator()() const { return start(*sub, owner->where->slots, owner); }
  };
  task::detail::set_body(*n, run_sub{&sub, s_.get()});
  s_->sub_nodes.emplace_back(n, sub.s_.get());
  add_to_level(n, nullptr);
  return *this;
}

graph& graph::then(graph& sub, node_options o) {
  new_level();
  return emplace(sub, std::move(o));
}

graph& graph::conditional(std::function<bool()> pred) {
  s_->predicate = std::move(pred);
  return *this;
}

node_ref graph::last() const {
  if (s_->count == 0) throw invalid_argument("strata::graph::last: the graph has no node");
  auto& b = s_->blocks.back();
  return node_ref(b.nodes.get() + (b.used - 1));
}

node_ref graph::find(std::string_view name) const {
  node* found = nullptr;
  s_->for_each_node([&](node* n) {
    if (!found && n->extra && n->extra->name == name) found = n;
  });
  if (found) return node_ref(found);
  throw invalid_argument("strata::graph::find: no node named \"" + std::string(name) + "\"");
}

std::size_t graph::size() const noexcept {
  return s_->count;
}

namespace {

event start(graph& g, strata::detail::slot_set const* slots, graph_state* parent) {
  g.finalize();
  auto& s = g.state();
  auto& pool = strata::detail::current_exec().get_pool();
  bool expected = false;
  if (!s.running.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
    throw error(
        "strata::run: the graph is already running; expected one run of a graph at a "
        "time (wait for the previous run's event)");
  s.cancelled.store(false, std::memory_order_relaxed);
  s.error = nullptr;
  s.parent = parent;
  s.done = event::pending();
  event done = s.done;
  try {
    pool.tasks().start(s, slots);
  } catch (...) {
    s.running.store(false, std::memory_order_release);
    throw;
  }
  return done;
}

}  // namespace

namespace {
// From this many successors on, a fan-out's successors run as one self-splitting range
// task instead of one deque entry each (below it pushing them one by one costs as little).
constexpr std::int32_t fan_min = 8;
}  // namespace

void graph::finalize() {
  auto& s = *s_;
  if (s.finalized) return;
  auto const count = s.count;
  std::vector<node*> roots;
  bool conditions = false, placed = false;
  long sinks = 0;
  // One pass: roots, sinks, successor lists, counters and fan-out flags (what a node
  // reads of its successors was set while they were built).
  s.for_each_node([&](node* n) {
    if (n->initial == 0 && (!n->extra || !n->extra->weak_in)) roots.push_back(n);
    conditions = conditions || (n->flags & node::condition);
    placed = placed || (n->flags & node::placed);
    n->far = n->out <= 2 ? n->near : n->extra->successors.data();
    n->pending.store(n->initial, std::memory_order_relaxed);
    if (n->out == 0) ++sinks;
    bool fan = n->out >= fan_min && !(n->flags & node::condition);
    for (auto *it = n->far, *end = n->far + n->out; fan && it != end; ++it)
      fan = (*it)->initial == 1 && (*it)->kind == execution_kind::cpu &&
            !((*it)->flags & node::placed) && !((*it)->extra && (*it)->extra->weak_in);
    n->flags = static_cast<std::uint8_t>(fan ? (n->flags | node::fan) : (n->flags & ~node::fan));
  });
  // Kahn's algorithm over the strong edges, only when some edge goes back in the order
  // of creation (else no cycle is possible): what is never freed lies on or behind a
  // cycle (a condition node's weak edges may loop).
  if (s.backward) check_acyclic();
  check_sub_graphs();
  if (roots.empty() && count > 0)
    throw invalid_argument(
        "strata::graph: no node can start (every node without predecessors is the target of "
        "a condition node); expected at least one node without predecessors");
  s.roots = std::move(roots);
  s.sinks = sinks;
  s.conditions = conditions;
  s.placed = placed;
  s.finalized = true;
}

void graph::check_sub_graphs() {
  auto& subs = s_->sub_nodes;
  if (subs.size() < 2) return;
  // Whether `to` follows `from` along successor edges (far is set by finalize's pass).
  auto reaches = [&](node* from, node* to) {
    std::vector<node*> stack{from};
    std::vector<bool> seen(s_->count, false);
    while (!stack.empty()) {
      node* n = stack.back();
      stack.pop_back();
      for (auto *it = n->far, *end = n->far + n->out; it != end; ++it) {
        if (*it == to) return true;
        if (!seen[(*it)->index]) {
          seen[(*it)->index] = true;
          stack.push_back(*it);
        }
      }
    }
    return false;
  };
  auto name = [](node* n) {
    return (n->extra && !n->extra->name.empty() ? "\"" + n->extra->name + "\" " : std::string()) +
           "(node " + std::to_string(n->index) + ")";
  };
  for (std::size_t i = 0; i < subs.size(); ++i)
    for (std::size_t j = i + 1; j < subs.size(); ++j)
      if (subs[i].second == subs[j].second && !reaches(subs[i].first, subs[j].first) &&
          !reaches(subs[j].first, subs[i].first))
        throw invalid_argument(
            "strata::graph: one sub-graph is emplaced in nodes " + name(subs[i].first) + " and " +
            name(subs[j].first) +
            ", which may run at once; a graph runs once at a time, so expected the two "
            "nodes ordered (then, precede) or two sub-graphs");
}

void graph::check_acyclic() {
  auto& s = *s_;
  auto const count = s.count;
  std::vector<std::int32_t> in(count);
  std::vector<node*> ready;
  s.for_each_node([&](node* n) {
    in[n->index] = n->initial;
    if (n->initial == 0) ready.push_back(n);
  });
  std::size_t seen = 0;
  while (!ready.empty()) {
    auto* n = ready.back();
    ready.pop_back();
    ++seen;
    if (n->flags & node::condition) continue;
    for (auto *it = n->far, *end = n->far + n->out; it != end; ++it)
      if (--in[(*it)->index] == 0) ready.push_back(*it);
  }
  if (seen == count) return;
  // Walk backwards along unfreed predecessors from an unfreed node until one repeats:
  // that stretch is a cycle. Predecessors are found from the successor lists.
  std::vector<std::vector<node*>> preds(count);
  node* first = nullptr;
  s.for_each_node([&](node* n) {
    if (in[n->index] <= 0 || (n->flags & node::condition)) return;
    if (!first) first = n;
    for (auto *it = n->far, *end = n->far + n->out; it != end; ++it)
      if (in[(*it)->index] > 0) preds[(*it)->index].push_back(n);
  });
  if (!first)  // only condition nodes left unfreed: cannot happen (they add no count)
    throw error("strata::graph: inconsistent edge counts");
  std::vector<std::size_t> pos(count, SIZE_MAX);
  std::vector<node*> path;
  node* at = first;
  while (pos[at->index] == SIZE_MAX) {
    pos[at->index] = path.size();
    path.push_back(at);
    at = preds[at->index].front();
  }
  std::vector<node*> cycle(path.begin() + static_cast<std::ptrdiff_t>(pos[at->index]), path.end());
  std::reverse(cycle.begin(), cycle.end());
  std::string text;
  for (auto* c : cycle) text += label(*c) + " -> ";
  text += label(*cycle.front());
  throw invalid_argument("strata::graph: the graph has a cycle: " + text +
                         "; expected a directed acyclic graph (loops go through condition "
                         "nodes)");
}

event run(graph& g) {
  auto& exec = strata::detail::current_exec();
  return start(g, exec.slots.of(exec.machine).second, nullptr);
}

event run(graph& g, place const& cpus) {
  strata::detail::check_runtime_place(cpus, "strata::run(graph, place)");
  auto [threads, slots] = strata::detail::current_exec().slots.of(cpus);
  if (threads == 0)
    throw invalid_argument("strata::run(graph, place): place " + cpus.name() +
                           " has no host PU; expected a place with CPUs to run the graph on");
  return start(g, slots, nullptr);
}

}  // namespace strata
