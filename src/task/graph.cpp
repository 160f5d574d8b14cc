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

namespace {

event start(graph& g, strata::detail::slot_set const* slots);

}  // namespace

node_ref& node_ref::precede(node_ref later) {
  if (!n_ || !later.n_)
    throw invalid_argument("node_ref::precede: an empty node_ref; expected nodes of a graph");
  if (n_->owner != later.n_->owner)
    throw invalid_argument("node_ref::precede: nodes of two different graphs (\"" + n_->info->name +
                           "\", \"" + later.n_->info->name +
                           "\"); expected nodes of one graph (use a sub-graph across graphs)");
  if (n_->owner->running.load(std::memory_order_acquire))
    throw error("node_ref::precede: the graph is running; expected edges added between runs");
  n_->successors.push_back(later.n_);
  ++later.n_->initial;
  later.n_->pending.store(later.n_->initial, std::memory_order_relaxed);
  n_->owner->finalized = false;
  return *this;
}

std::string_view node_ref::name() const noexcept {
  return n_ ? std::string_view(n_->info->name) : std::string_view();
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
  // Nodes live in blocks of 1024 (128 KiB), contiguous so that a run streams them.
  constexpr std::size_t block = 1024;
  auto const i = s_->nodes.size();
  if (i % block == 0) s_->blocks.push_back(std::make_unique<node[]>(block));
  auto* n = &s_->blocks.back()[i % block];
  s_->nodes.push_back(n);
  n->info = &s_->infos.emplace_back();
  n->info->name = std::move(o.name);
  n->kind = o.kind.value_or(s_->default_kind);
  n->owner = s_.get();
  n->info->index = i;
  s_->finalized = false;
  return n;
}

void graph::add_to_level(node* n, void const*) {
  for (auto* p : s_->previous) node_ref(p).precede(node_ref(n));
  s_->current.push_back(n);
}

void graph::join_level(node* n) {
  s_->current.push_back(n);
}

void graph::new_level() {
  if (s_->current.empty()) return;  // then() on a fresh graph: nothing to follow yet
  s_->previous = std::move(s_->current);
  s_->current.clear();
}

void graph::add_split_node(node* n, void const* partitioning, std::size_t part, std::size_t parts,
                           bool same_part_only) {
  n->info->partitioning = partitioning;
  n->info->part = part;
  n->info->parts = parts;
  for (auto* p : s_->previous) {
    // Ripple §5.3.3: after a split of the same partitioning, only the same partition's
    // nodes (and nodes that are not split at all) come before.
    bool const split_same = p->info->partitioning == partitioning && p->info->parts == parts;
    if (same_part_only && split_same && p->info->part != part) continue;
    node_ref(p).precede(node_ref(n));
  }
  s_->current.push_back(n);
}

void graph::add_sync(node* n) {
  // Every node that has no successor yet (all work so far ends in one of them).
  for (auto* p : s_->nodes)
    if (p != n && p->successors.empty()) node_ref(p).precede(node_ref(n));
  s_->previous.clear();
  s_->current.assign(1, n);
}

graph& graph::emplace(graph& sub, node_options o) {
  if (&sub == this)
    throw invalid_argument("strata::graph: a graph emplaced into itself; expected another graph");
  if (o.name.empty()) o.name = "subgraph";
  auto* n = make(std::move(o));
  // The sub-graph runs on the PUs its parent runs on.
  n->body = [&sub, owner = s_.get()] { return start(sub, owner->where->slots); };
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
  if (s_->nodes.empty()) throw invalid_argument("strata::graph::last: the graph has no node");
  return node_ref(s_->nodes.back());
}

node_ref graph::find(std::string_view name) const {
  for (auto* n : s_->nodes)
    if (n->info->name == name) return node_ref(n);
  throw invalid_argument("strata::graph::find: no node named \"" + std::string(name) + "\"");
}

std::size_t graph::size() const noexcept {
  return s_->nodes.size();
}

namespace {

event start(graph& g, strata::detail::slot_set const* slots) {
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
  s.sinks_left.store(s.sinks, std::memory_order_relaxed);
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

std::string label(node const& n) {
  return n.info->name.empty() ? "#" + std::to_string(n.info->index) : "\"" + n.info->name + "\"";
}

}  // namespace

namespace {
// From this many successors on, a fan-out's successors run as one self-splitting range
// task instead of one deque entry each (below it pushing them one by one costs as little).
constexpr std::size_t fan_min = 8;
}  // namespace

void graph::finalize() {
  auto& s = *s_;
  if (s.finalized) return;
  // Kahn's algorithm: what is never freed lies on or behind a cycle.
  auto const count = s.nodes.size();
  std::vector<std::int32_t> in(count);
  std::vector<node*> ready;
  for (auto* n : s.nodes) {
    in[n->info->index] = n->initial;
    if (n->initial == 0) ready.push_back(n);
  }
  std::vector<node*> roots = ready;
  std::size_t seen = 0;
  while (!ready.empty()) {
    auto* n = ready.back();
    ready.pop_back();
    ++seen;
    for (auto* m : n->successors)
      if (--in[m->info->index] == 0) ready.push_back(m);
  }
  if (seen != count) {
    // Walk backwards along unfreed predecessors from an unfreed node until one repeats:
    // that stretch is a cycle. Predecessors are found from the successor lists.
    std::vector<std::vector<node*>> preds(count);
    for (auto* n : s.nodes)
      if (in[n->info->index] > 0)
        for (auto* m : n->successors)
          if (in[m->info->index] > 0) preds[m->info->index].push_back(n);
    node* start = nullptr;
    for (auto* n : s.nodes)
      if (in[n->info->index] > 0) {
        start = n;
        break;
      }
    std::vector<std::size_t> pos(count, SIZE_MAX);
    std::vector<node*> path;
    node* at = start;
    while (pos[at->info->index] == SIZE_MAX) {
      pos[at->info->index] = path.size();
      path.push_back(at);
      at = preds[at->info->index].front();
    }
    std::vector<node*> cycle(path.begin() + static_cast<std::ptrdiff_t>(pos[at->info->index]),
                             path.end());
    std::reverse(cycle.begin(), cycle.end());
    std::string text;
    for (auto* c : cycle) text += label(*c) + " -> ";
    text += label(*cycle.front());
    throw invalid_argument("strata::graph: the graph has a cycle: " + text +
                           "; expected a directed acyclic graph");
  }
  s.roots = std::move(roots);
  s.sinks = 0;
  for (auto* n : s.nodes) {
    n->pending.store(n->initial, std::memory_order_relaxed);
    if (n->successors.empty()) ++s.sinks;
    // Most nodes have one or two successors: keep those in the node's own cache lines.
    n->out = static_cast<std::int32_t>(n->successors.size());
    if (n->successors.size() <= 2) std::copy(n->successors.begin(), n->successors.end(), n->near);
    n->far = n->successors.data();
    n->fan = n->successors.size() >= fan_min &&
             std::all_of(n->successors.begin(), n->successors.end(),
                         [](node* m) { return m->initial == 1 && m->kind == execution_kind::cpu; });
  }
  s.finalized = true;
}

event run(graph& g) {
  auto& exec = strata::detail::current_exec();
  return start(g, exec.host_slots(exec.machine).second);
}

event run(graph& g, place const& cpus) {
  strata::detail::check_runtime_place(cpus, "strata::run(graph, place)");
  auto [threads, slots] = strata::detail::current_exec().host_slots(cpus);
  if (threads == 0)
    throw invalid_argument("strata::run(graph, place): place " + cpus.name() +
                           " has no host PU; expected a place with CPUs to run the graph on");
  return start(g, slots);
}

}  // namespace strata
