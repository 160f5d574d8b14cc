// A graph's nodes, its levels while it is built, and the state of its current run.
#pragma once

#include <strata/task/graph.hpp>

#include <atomic>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace strata::detail {
struct slot_set;
}

namespace strata::task::detail {

struct arena;

struct graph_state {
  explicit graph_state(execution_kind k) : default_kind(k) {}

  execution_kind default_kind;
  std::vector<std::unique_ptr<node[]>> blocks;  // the nodes, in blocks (see graph::make)
  std::vector<node*> nodes;                     // every node, in the order added
  std::deque<node_info> infos;                  // one per node, same order
  std::vector<node*> previous, current;         // levels (Ripple §5.3.2)
  std::function<bool()> predicate;              // conditional (§5.3.6)

  // Set by finalize.
  bool finalized = false;
  std::vector<node*> roots;
  long sinks = 0;

  // The current run (one at a time). `done` and `error` are written only while no worker
  // can touch them: before the roots are pushed, and by the thread that ends the run.
  std::atomic<bool> running{false};
  std::atomic<bool> cancelled{false};
  std::atomic<long> sinks_left{0};
  std::mutex error_mutex;
  std::exception_ptr error;
  event done;
  arena* where = nullptr;

  /// Records the first failure and cancels the nodes not yet started.
  void fail(std::exception_ptr e) {
    {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::move(e);
    }
    cancelled.store(true, std::memory_order_release);
  }
};

}  // namespace strata::task::detail
