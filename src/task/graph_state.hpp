// A graph's nodes, its levels while it is built, and the state of its current run.
#pragma once

#include <strata/task/graph.hpp>

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace strata::task::detail {

struct arena;

struct graph_state {
  explicit graph_state(execution_kind k) : default_kind(k) {}
  ~graph_state() {
    // Only nodes with an extra or a closure to destroy need a visit: a graph of plain
    // nodes is freed without reading them again (a pass over 128 bytes per node).
    if (cleanup)
      for_each_node([](node* n) {
        delete n->extra;
        n->~node();
      });
  }
  graph_state(graph_state const&) = delete;
  graph_state& operator=(graph_state const&) = delete;

  // Nodes live in blocks that double in size from 1 to 4096 nodes: a 1-node graph costs
  // one 128-byte node, a big one streams through large contiguous blocks, and building N
  // nodes costs O(N) with no allocation per node once blocks are big. A block is raw
  // storage; new_node constructs each node as it is handed out.
  struct free_block {
    void operator()(node* p) const noexcept {
      ::operator delete (static_cast<void*>(p), std::align_val_t{alignof(node)});
    }
  };
  struct block {
    std::unique_ptr<node, free_block> nodes;
    std::size_t size = 0;
    std::size_t used = 0;
  };
  static constexpr std::size_t max_block = 4096;

  execution_kind default_kind;
  std::vector<block> blocks;
  std::uint32_t count = 0;
  bool cleanup = false;   // some node has an extra or a closure to destroy
  bool backward = false;  // some strong edge goes to an earlier node: check for cycles
  std::vector<node*> previous, current;  // levels (Ripple §5.3.2)
  // Nodes that had no successor when added; sync filters out those that got one since
  // (each node enters and leaves once: O(N) over a whole build).
  std::vector<node*> tails;
  std::function<bool()> predicate;                // conditional (§5.3.6)
  std::vector<std::function<void()>> pass_hooks;  // at the start of every pass
  // Nodes that run a sub-graph (emplace(graph&)): finalize refuses one sub-graph in two
  // nodes that may run at once (a graph runs once at a time).
  std::vector<std::pair<node*, void const*>> sub_nodes;

  template <class Fn>
  void for_each_node(Fn&& fn) {
    for (auto& b : blocks)
      for (std::size_t i = 0; i < b.used; ++i) fn(b.nodes.get() + i);
  }
  node* new_node() {
    if (blocks.empty() || blocks.back().used == blocks.back().size) {
      std::size_t size = blocks.empty() ? 1 : std::min(blocks.back().size * 2, max_block);
      blocks.reserve(blocks.size() + 1);
      std::unique_ptr<node, free_block> raw(static_cast<node*>(
          ::operator new (size * sizeof(node), std::align_val_t{alignof(node)})));
      blocks.push_back({std::move(raw), size, 0});
    }
    auto& b = blocks.back();
    return ::new (static_cast<void*>(b.nodes.get() + b.used++)) node;
  }

  // Set by finalize.
  bool finalized = false;
  bool conditions = false;  // some node is a condition node: runs end by counting tasks
  bool placed = false;      // some node has a place of its own
  std::vector<node*> roots;
  long sinks = 0;

  // The current run (one at a time). `done` and `error` are written only while no worker
  // can touch them: before the roots are pushed, and by the thread that ends the run.
  std::atomic<bool> running{false};
  std::atomic<bool> cancelled{false};
  // Sinks not yet done in this pass; in graphs with condition nodes, tasks scheduled and
  // not yet finished.
  std::atomic<long> sinks_left{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  event done;
  arena* where = nullptr;
  graph_state* parent = nullptr;  // the graph this one runs inside, as a sub-graph

  /// Whether nodes not yet started should be skipped: this run failed, or a graph it
  /// runs inside did (a parent's failure cancels its running sub-graphs).
  bool is_cancelled() const noexcept {
    for (auto const* g = this; g; g = g->parent)
      if (g->cancelled.load(std::memory_order_acquire)) return true;
    return false;
  }

  /// Records the first failure and cancels the nodes not yet started.
  void fail(std::exception_ptr e) {
    {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::move(e);
    }
    cancelled.store(true, std::memory_order_release);
  }
};

/// The name of a node for messages: its name, or #index.
std::string label(node const& n);

}  // namespace strata::task::detail
