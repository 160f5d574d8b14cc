// Task graphs (Ripple §5.3): built once, run many times on the runtime's work-stealing
// pool (Ripple §6; the threads backend's workers, see docs/tasks.md).
//
//   strata::graph g;
//   g.emplace("A", [] { ... })       // level 0
//    .then("B", [] { ... })          // after A
//    .emplace("C", [] { ... })       // same level as B: after A, parallel with B
//    .then([] { return strata::copy(dst, src); });  // after B and C; completes with the copy
//   strata::run(g).wait();           // again and again
//
// Levels follow Ripple §5.3.2: `emplace` adds a node to the current level (depending on
// every node of the previous level), `then` starts a new level. `split`/`then_split` add
// one node per partition of a partitioned argument; a `then_split` after a split of the
// same partitioning depends only on the node of the same partition (§5.3.3). `reduce`
// folds each partition as soon as it is ready and completes a `reduction_result`. `sync`
// waits for every node so far (§5.3.4). A graph passed to `emplace`/`then` runs as a
// sub-graph (§5.3.5); `conditional` re-runs the graph while a predicate holds (§5.3.6).
// Explicit edges (`node_ref::precede`) build shapes levels cannot (wavefronts, trees).
//
// A node's callable takes no argument (split: the partition) and returns void or an
// `event`: a node that launches kernels or copies returns their event and completes when
// it does, without blocking its worker (Phalanx §III-B). An exception in a node cancels
// the nodes not yet started and is rethrown by `wait`. Cycles (possible only through
// explicit edges) are rejected when the graph is run, naming the nodes on the cycle.
#pragma once

#include <strata/exec/event.hpp>
#include <strata/machine/place.hpp>
#include <strata/task/partitioned.hpp>
#include <strata/task/task_group.hpp>

#include <new>

#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

/// Where a node's work runs (Ripple's ExecutionKind). Device nodes are scheduled by the
/// device-priority workers first (Ripple §6.2): they submit device work and handle
/// completions; other workers take device work only when they have nothing else.
enum class execution_kind : std::uint8_t { cpu, device };

/// Name, kind and place of one node; any may be left out. A node with a place of host
/// PUs runs on those PUs only (whatever PUs the graph runs on); a node with a device
/// place (sim or CUDA) is a device node, and its body finds the place with
/// `strata::current_node_place()`.
struct node_options {
  std::string name;
  std::optional<execution_kind> kind;
  std::optional<strata::place> where;
  node_options() = default;
  node_options(char const* n) : name(n) {}             // NOLINT: g.emplace("A", fn)
  node_options(std::string n) : name(std::move(n)) {}  // NOLINT
  node_options(execution_kind k) : kind(k) {}  // NOLINT: g.emplace(execution_kind::device, fn)
  node_options(strata::place p) : where(std::move(p)) {}  // NOLINT: g.emplace(cpus, fn)
  node_options(std::string n, execution_kind k) : name(std::move(n)), kind(k) {}
  node_options(std::string n, strata::place p) : name(std::move(n)), where(std::move(p)) {}
};

/// The place given to the node the calling thread runs (null outside such a node).
strata::place const* current_node_place() noexcept;

class task_group;

namespace task::detail {

struct graph_state;
struct arena;
struct node;

/// What a node needs rarely (names, splits, many successors, a place), apart from its
/// hot part: made only for nodes that need it.
struct node_extra {
  std::string name;
  partition_key partitioning{};  // split nodes: which partitioning, which part
  bool split = false;
  std::size_t part = 0;
  std::size_t parts = 0;
  std::vector<std::size_t> reach;  // other parts whose data it touched (tensor halos)
  std::vector<node*> successors;   // all of them, once there are more than two
  std::optional<strata::place> where;
  void const* slots = nullptr;  // host PUs of `where` (a slot_set), if it has any
  arena* in = nullptr;          // their arena, set when a run starts
  long branch = -1;             // a condition node's choice in this run
  bool weak_in = false;         // some condition node may choose this node
};

/// The body of a node: runs it, returning the event of the work it launched (empty for
/// work done in the call).
using node_call = event (*)(node&);

// What a run touches is in the first cache line (body, owner, successors); the second
// holds the body's closure when it fits (most lambdas do), so a node is one allocation
// of 128 bytes, taken from its graph's blocks (docs/tasks.md, "Nodes").
struct node;
/// The node's graph must visit it when it is destroyed (a closure to destroy).
void needs_cleanup(node& n) noexcept;

struct alignas(64) node {
  enum : std::uint8_t { fan = 1, condition = 2, placed = 4, heap = 8 };

  std::atomic<std::int32_t> pending{0};  // predecessors not yet done in this run
  std::int32_t initial = 0;              // strong predecessors; `pending` resets to it
  std::int32_t out = 0;                  // successors: in `near` up to 2, else at `far`
  execution_kind kind = execution_kind::cpu;
  std::uint8_t flags = 0;
  node_call call = nullptr;
  graph_state* owner = nullptr;
  node* near[2] = {nullptr, nullptr};
  node* const* far = nullptr;
  node_extra* extra = nullptr;

  std::uint32_t index = 0;  // in the graph, for names in messages
  // Trace only: the flow arrow from the predecessor whose completion made it ready (set
  // by that predecessor before the push that publishes the node; 0: none).
  std::uint32_t trace_flow = 0;
  void (*destroy)(node&) = nullptr;
  static constexpr std::size_t inline_size = 48;
  alignas(16) unsigned char storage[inline_size];

  node() = default;
  node(node const&) = delete;
  node& operator=(node const&) = delete;
  ~node() {
    if (destroy) destroy(*this);
  }

  /// The closure of type F, in place or on the heap.
  template <class F>
  F& closure() noexcept {
    if constexpr (sizeof(F) <= inline_size && alignof(F) <= 16)
      return *std::launder(reinterpret_cast<F*>(storage));
    else
      return **std::launder(reinterpret_cast<F**>(storage));
  }
  template <class F>
  void store(F&& fn) {
    using D = std::decay_t<F>;
    if (destroy) destroy(*this);
    destroy = nullptr;
    if constexpr (sizeof(D) <= inline_size && alignof(D) <= 16)
      ::new (static_cast<void*>(storage)) D(std::forward<F>(fn));
    else
      ::new (static_cast<void*>(storage)) D*(new D(std::forward<F>(fn)));
    if constexpr (sizeof(D) <= inline_size && alignof(D) <= 16 &&
                  std::is_trivially_destructible_v<D>)
      return;  // nothing to undo: the graph frees the node without visiting it
    destroy = [](node& n) {
      if constexpr (sizeof(D) <= inline_size && alignof(D) <= 16)
        n.closure<D>().~D();
      else
        delete &n.closure<D>();
    };
    needs_cleanup(*this);
  }
};
static_assert(sizeof(node) == 128, "a node is two cache lines");

/// Runs a subflow body: fn(group), then joins the group (helping), rethrowing.
void run_subflow(void* fn, void (*call)(void*, task_group&));

template <class F>
void set_body(node& n, F&& fn) {
  using D = std::decay_t<F>;
  n.store(std::forward<F>(fn));
  if constexpr (std::is_invocable_v<D&, task_group&>) {
    n.call = [](node& self) {
      run_subflow(&self.closure<D>(),
                  [](void* f, task_group& g) { (void)(*static_cast<D*>(f))(g); });
      return event();
    };
  } else if constexpr (std::is_same_v<std::invoke_result_t<D&>, event>) {
    n.call = [](node& self) { return self.closure<D>()(); };
  } else {
    n.call = [](node& self) {
      (void)self.closure<D>()();
      return event();
    };
  }
}

}  // namespace task::detail

template <class F>
concept node_body = std::invocable<F&> || std::invocable<F&, task_group&>;

class graph;

/// A node of a graph, for explicit edges and lookups. Valid while its graph lives.
class node_ref {
 public:
  node_ref() = default;
  /// This node runs before `later` (an edge this → later).
  node_ref& precede(node_ref later);
  /// This node runs after `earlier`.
  node_ref& succeed(node_ref earlier) {
    earlier.precede(*this);
    return *this;
  }
  std::string_view name() const noexcept;
  explicit operator bool() const noexcept { return n_ != nullptr; }

 private:
  friend class graph;
  friend class task_group;
  explicit node_ref(task::detail::node* n) : n_(n) {}
  task::detail::node* n_ = nullptr;
};

/// The result of a reduce: the value and whether the reduction has completed (Ripple
/// §5.3.3's ReductionResult). Copies share the value.
template <class T>
class reduction_result {
 public:
  explicit reduction_result(T identity = T{}) : s_(std::make_shared<state>(identity)) {}

  /// The reduced value (the identity until the reduction completes).
  T value() const { return s_->value; }
  /// Whether the reduction of the current run has completed.
  bool complete() const noexcept { return s_->done.load(std::memory_order_acquire); }
  /// The value, then back to the identity and not complete (Ripple's value_and_reset,
  /// for conditional loops).
  T value_and_reset() {
    T v = s_->value;
    reset();
    return v;
  }
  void reset() {
    s_->done.store(false, std::memory_order_relaxed);
    s_->value = s_->identity;
  }
  T identity() const { return s_->identity; }

  /// Producer side: a pass of the graph that computes it starts (not complete until the
  /// final node of this pass sets it).
  void begin() noexcept { s_->done.store(false, std::memory_order_release); }
  /// Producer side (the reduce's final node).
  void set(T v) {
    s_->value = std::move(v);
    s_->done.store(true, std::memory_order_release);
  }

 private:
  struct state {
    explicit state(T i) : identity(i), value(i) {}
    T identity;
    T value;
    std::atomic<bool> done{false};
  };
  std::shared_ptr<state> s_;
};

template <class T>
reduction_result<T> make_reduction_result(T identity = T{}) {
  return reduction_result<T>(std::move(identity));
}

class graph {
 public:
  /// `kind`: the execution kind of nodes that name none (Ripple's Graph(ExecutionKind)).
  explicit graph(execution_kind kind = execution_kind::cpu);
  ~graph();
  graph(graph&&) noexcept;
  graph& operator=(graph&&) noexcept;

  /// A node in the current level (after every node of the previous level).
  template <class F>
  requires node_body<F> graph& emplace(node_options o, F&& fn) {
    auto* n = make(std::move(o));
    task::detail::set_body(*n, std::forward<F>(fn));
    add_to_level(n, nullptr);
    return *this;
  }
  template <class F>
  requires node_body<F> graph& emplace(F&& fn) {
    return emplace(node_options{}, std::forward<F>(fn));
  }
  /// A node in a new level: after every node of the current one.
  template <class F>
  requires node_body<F> graph& then(node_options o, F&& fn) {
    new_level();
    return emplace(std::move(o), std::forward<F>(fn));
  }
  template <class F>
  requires node_body<F> graph& then(F&& fn) { return then(node_options{}, std::forward<F>(fn)); }
  /// A sub-graph as one node of this level / of a new level (Ripple §5.3.5): it runs,
  /// with its own levels and loop, when its predecessors are done; `sub` must outlive
  /// this graph's runs.
  graph& emplace(graph& sub, node_options o = {});
  graph& then(graph& sub, node_options o = {});

  /// One node per partition, in the current level: fn(part) (Ripple §5.3.3).
  template <partitioned_range P, class F>
  requires(!tensor_argument<P>) graph& split(node_options o, F&& fn, P& parts) {
    return add_split(std::move(o), std::forward<F>(fn), parts, false);
  }
  template <partitioned_range P, class F>
  requires(!tensor_argument<P>) graph& split(F&& fn, P& parts) {
    return split(node_options{}, std::forward<F>(fn), parts);
  }
  /// One node per partition in a new level; after a split of the same partitioning each
  /// depends only on its own partition's node (and on nodes that are not split).
  template <partitioned_range P, class F>
  requires(!tensor_argument<P>) graph& then_split(node_options o, F&& fn, P& parts) {
    new_level();
    return add_split(std::move(o), std::forward<F>(fn), parts, true);
  }
  template <partitioned_range P, class F>
  requires(!tensor_argument<P>) graph& then_split(F&& fn, P& parts) {
    return then_split(node_options{}, std::forward<F>(fn), parts);
  }

  /// Ripple's split over tensors (§5.3.3, Listing 7): `kernel(args...)` runs for every
  /// cell, one node per block, where each tensor argument (or access specifier such as
  /// `concurrent_padded_access(t)`, §5.4) becomes an iterator at the cell and any other
  /// argument is passed as is. Needs <strata/tensor.hpp>, which defines the work.
  template <class F, class... A>
  requires(!std::is_convertible_v<F, node_options> &&
           (tensor_argument<A> || ...)) graph& split(F&& kernel, A&&... args) {
    return tensor_split(*this, node_options{}, false, std::forward<F>(kernel),
                        std::forward<A>(args)...);
  }
  template <class F, class... A>
  requires(tensor_argument<A> || ...) graph& split(node_options o, F&& kernel, A&&... args) {
    return tensor_split(*this, std::move(o), false, std::forward<F>(kernel),
                        std::forward<A>(args)...);
  }
  template <class F, class... A>
  requires(!std::is_convertible_v<F, node_options> &&
           (tensor_argument<A> || ...)) graph& then_split(F&& kernel, A&&... args) {
    return tensor_split(*this, node_options{}, true, std::forward<F>(kernel),
                        std::forward<A>(args)...);
  }
  template <class F, class... A>
  requires(tensor_argument<A> || ...) graph& then_split(node_options o, F&& kernel, A&&... args) {
    return tensor_split(*this, std::move(o), true, std::forward<F>(kernel),
                        std::forward<A>(args)...);
  }

  /// Folds every element of `parts` into `result` with `op(accumulated, element)`,
  /// starting from the result's identity: one node per partition (each starts as soon as
  /// its partition's predecessors are done) and a final node that combines the partial
  /// results with `op` and marks the result complete (Ripple §5.3.3, Figure 4).
  template <partitioned_range P, class T, class Op>
  requires(!tensor_argument<P>) graph& reduce(P& parts, reduction_result<T> result, Op op) {
    return add_reduce(parts, std::move(result), std::move(op), false);
  }
  template <partitioned_range P, class T, class Op>
  requires(!tensor_argument<P>) graph& then_reduce(P& parts, reduction_result<T> result, Op op) {
    new_level();
    return add_reduce(parts, std::move(result), std::move(op), true);
  }
  /// The same over a tensor: each block reduced where it lives (<strata/tensor.hpp>).
  template <tensor_argument P, class T, class Op>
  graph& reduce(P const& t, reduction_result<T> result, Op op) {
    return tensor_reduce(*this, false, t, std::move(result), std::move(op));
  }
  template <tensor_argument P, class T, class Op>
  graph& then_reduce(P const& t, reduction_result<T> result, Op op) {
    return tensor_reduce(*this, true, t, std::move(result), std::move(op));
  }
  /// The same reducing `transform(it)` with an iterator at each cell (a kernel over cells
  /// that returns the value to reduce): one pass, no tensor of values in between.
  template <tensor_argument P, class T, class Op, class Tr>
  graph& reduce(P const& t, reduction_result<T> result, Op op, Tr transform) {
    return tensor_reduce(*this, false, t, std::move(result), std::move(op), std::move(transform));
  }
  template <tensor_argument P, class T, class Op, class Tr>
  graph& then_reduce(P const& t, reduction_result<T> result, Op op, Tr transform) {
    return tensor_reduce(*this, true, t, std::move(result), std::move(op), std::move(transform));
  }
  /// A split whose kernel returns a value for each cell, folded with `op` into `result` in
  /// the same pass (Kokkos' parallel_reduce with a functor that also writes): the
  /// kernel's writes and the reduction cost one sweep over the cells. Arguments as
  /// split's (tensors, concurrent_padded_access, values); <strata/tensor.hpp>.
  template <class T, class Op, class F, class... A>
  requires(tensor_argument<A> || ...) graph& split_reduce(reduction_result<T> result, Op op,
                                                          F&& kernel, A&&... args) {
    return tensor_split_reduce(*this, false, std::move(result), std::move(op),
                               std::forward<F>(kernel), std::forward<A>(args)...);
  }
  template <class T, class Op, class F, class... A>
  requires(tensor_argument<A> || ...) graph& then_split_reduce(reduction_result<T> result, Op op,
                                                               F&& kernel, A&&... args) {
    return tensor_split_reduce(*this, true, std::move(result), std::move(op),
                               std::forward<F>(kernel), std::forward<A>(args)...);
  }

  // Building blocks for layers above the graph (the tensor layer's splits, Ripple §5.4);
  // ordinary graphs do not need them.

  /// Starts a new level (as `then` does).
  void next_level() { new_level(); }
  /// A node for `part` (of `parts`) of the partitioning `key` in the current level. It
  /// comes after every node of the previous level that is not split over `key`, and after
  /// those split over `key` whose part, or whose reach, is one of `after_parts`. `reach`
  /// names the other parts whose data it touches (for the nodes of later levels).
  template <class F>
  node_ref add_part(node_options o, F&& fn, partition_key const& key, std::size_t part,
                    std::size_t parts, std::span<std::size_t const> after_parts,
                    std::span<std::size_t const> reach) {
    auto* n = make(std::move(o));
    task::detail::set_body(*n, std::forward<F>(fn));
    add_part_node(n, key, part, parts, after_parts, reach);
    return node_ref(n);
  }
  /// A node in the current level with no edge from the previous one (add them with
  /// `precede`).
  template <class F>
  node_ref add_joined(node_options o, F&& fn) {
    auto* n = make(std::move(o));
    task::detail::set_body(*n, std::forward<F>(fn));
    join_level(n);
    return node_ref(n);
  }
  /// Runs `fn` at the start of every pass of the graph (e.g. marking a result incomplete).
  void at_each_pass(std::function<void()> fn) { on_pass(std::move(fn)); }

  /// A node after every node so far (Ripple §5.3.4), starting a new level.
  template <class F>
  requires node_body<F> graph& sync(node_options o, F&& fn) {
    auto* n = make(std::move(o));
    task::detail::set_body(*n, std::forward<F>(fn));
    add_sync(n);
    return *this;
  }
  template <class F>
  requires node_body<F> graph& sync(F&& fn) { return sync(node_options{}, std::forward<F>(fn)); }
  graph& sync() {
    return sync("sync", [] {});
  }

  /// Re-runs the whole graph while `pred()` is true, checked after each pass (Ripple
  /// §5.3.6). Replaces an earlier predicate.
  graph& conditional(std::function<bool()> pred);

  /// A node outside the levels, for explicit edges (`precede`).
  template <class F>
  requires node_body<F> node_ref add(node_options o, F&& fn) {
    auto* n = make(std::move(o));
    task::detail::set_body(*n, std::forward<F>(fn));
    return node_ref(n);
  }
  template <class F>
  requires node_body<F> node_ref add(F&& fn) { return add(node_options{}, std::forward<F>(fn)); }

  /// A condition node outside the levels (Taskflow-style): `fn()` returns the index of
  /// the successor to run next (in the order `precede` added them); any other value runs
  /// none. Its edges are weak: a successor chosen runs at once, whatever its other
  /// predecessors, so an edge back to an earlier node makes a loop inside the graph.
  /// A node whose only predecessors are condition nodes is not a root.
  template <class F>
  requires std::is_integral_v<std::invoke_result_t<F&>> node_ref add_condition(node_options o,
                                                                               F&& fn) {
    auto* n = make(std::move(o));
    using D = std::decay_t<F>;
    n->store(std::forward<F>(fn));
    n->call = [](task::detail::node& self) {
      self.extra->branch = static_cast<long>(self.closure<D>()());
      return event();
    };
    mark_condition(n);
    return node_ref(n);
  }
  template <class F>
  requires std::is_integral_v<std::invoke_result_t<F&>> node_ref add_condition(F&& fn) {
    return add_condition(node_options{}, std::forward<F>(fn));
  }

  /// The node added last.
  node_ref last() const;
  /// The node named `name` (the first, if several); throws invalid_argument if none.
  node_ref find(std::string_view name) const;
  std::size_t size() const noexcept;

  /// Checks the graph (cycles) and prepares it for runs; `run` calls it when needed.
  void finalize();

  task::detail::graph_state& state() noexcept { return *s_; }

 private:
  /// Throws invalid_argument naming a cycle if the strong edges have one.
  void check_acyclic();
  /// Throws invalid_argument if one sub-graph is in two nodes that are not ordered.
  void check_sub_graphs();
  task::detail::node* make(node_options o);
  void mark_condition(task::detail::node* n);
  /// Called at the start of every pass (a reduction's result is not complete then).
  void on_pass(std::function<void()> fn);
  void add_to_level(task::detail::node* n, void const* partitioning);
  void new_level();
  void add_sync(task::detail::node* n);
  /// Predecessors of a new split node for `part` of `partitioning` in the current level.
  void add_split_node(task::detail::node* n, partition_key const& partitioning, std::size_t part,
                      std::size_t parts, bool same_part_only);
  void add_part_node(task::detail::node* n, partition_key const& key, std::size_t part,
                     std::size_t parts, std::span<std::size_t const> after_parts,
                     std::span<std::size_t const> reach);

  template <class P, class F>
  graph& add_split(node_options o, F&& fn, P& parts, bool after) {
    auto const count = parts.parts();
    partition_key const id = parts.partitioning();
    for (std::size_t i = 0; i < count; ++i) {
      node_options oi = o;
      if (!oi.name.empty()) oi.name += "[" + std::to_string(i) + "]";
      auto* n = make(std::move(oi));
      task::detail::set_body(*n, [f = fn, &parts, i]() mutable { return f(parts.part(i)); });
      add_split_node(n, id, i, count, after);
    }
    return *this;
  }

  template <class P, class T, class Op>
  graph& add_reduce(P& parts, reduction_result<T> result, Op op, bool after) {
    auto const count = parts.parts();
    auto partial = std::make_shared<std::vector<T>>(count, result.identity());
    partition_key const id = parts.partitioning();
    on_pass([result]() mutable { result.begin(); });
    std::vector<task::detail::node*> folds;
    for (std::size_t i = 0; i < count; ++i) {
      auto* n = make("reduce[" + std::to_string(i) + "]");
      task::detail::set_body(*n, [&parts, partial, op, i, identity = result.identity()] {
        T acc = identity;
        for (auto&& x : parts.part(i)) acc = op(acc, x);
        (*partial)[i] = std::move(acc);
      });
      add_split_node(n, id, i, count, after);
      folds.push_back(n);
    }
    auto* fin = make("reduce");
    task::detail::set_body(*fin, [partial, op, result]() mutable {
      T acc = result.identity();
      for (auto const& p : *partial) acc = op(acc, p);
      result.set(std::move(acc));
    });
    for (auto* f : folds) node_ref(f).precede(node_ref(fin));
    join_level(fin);
    return *this;
  }
  /// Puts `n` in the current level without edges from the previous one.
  void join_level(task::detail::node* n);

  std::unique_ptr<task::detail::graph_state> s_;
};

/// Runs the graph on the runtime's pool (every host PU); the event completes when every
/// node has (and the conditional, if any, said stop). One run of a graph at a time.
event run(graph& g);
/// As above, on the host PUs of `cpus` only (e.g. 1 or 2 threads for a benchmark).
event run(graph& g, place const& cpus);

}  // namespace strata
