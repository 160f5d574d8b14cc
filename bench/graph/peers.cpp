// oneTBB flow_graph and OpenMP task versions of the graph benchmarks' workloads (see
// peers.hpp). Written the way each library's documentation teaches: flow_graph with
// continue_nodes and edges, built once and run by putting a message into its source;
// OpenMP with `task depend` where tasks have predecessors (chain, wavefront) and, for the
// fork-join shapes (tree, fanout), both plain recursive tasks / taskwait and `task depend`.
#include "graph/peers.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#if defined(STRATA_BENCH_HAVE_TBB)
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif

namespace strata::bench::graph_peers {
namespace {

// One accumulator per thread, each on its own cache line.
struct alignas(64) slot {
  std::atomic<std::uint64_t> sum{0};
};
constexpr int max_slots = 256;
std::array<slot, max_slots> slots;
std::atomic<int> next_slot{0};

std::uint64_t body_value(std::size_t index) noexcept {
  std::uint64_t x = index * 0x9E3779B97F4A7C15ull + 1;
  for (int k = 0; k < 16; ++k) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
  }
  return x;
}

std::string label(char const* lib, int threads) {
  return std::string(lib) + "/" + std::to_string(threads);
}

}  // namespace

std::size_t task_count(shape s, std::size_t size) noexcept {
  switch (s) {
    case shape::chain:
      return size;
    case shape::tree:
      return (std::size_t{1} << size) - 1;
    case shape::wavefront:
      return size * size;
    case shape::fanout:
      return size + 2;
  }
  return 0;
}

void task_body(std::size_t index) noexcept {
  thread_local int mine = next_slot.fetch_add(1, std::memory_order_relaxed) % max_slots;
  auto& s = slots[std::size_t(mine)].sum;
  // Only this thread writes the slot (modulo wrap-around past 256 threads, which the
  // benchmarks never reach), so a relaxed load and store suffice.
  s.store(s.load(std::memory_order_relaxed) + body_value(index), std::memory_order_relaxed);
}

std::uint64_t checksum() noexcept {
  std::uint64_t total = 0;
  for (auto& s : slots) total += s.sum.load(std::memory_order_relaxed);
  return total;
}

void reset_checksum() noexcept {
  for (auto& s : slots) s.sum.store(0, std::memory_order_relaxed);
}

std::uint64_t expected_checksum(std::size_t n) noexcept {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < n; ++i) total += body_value(i);
  return total;
}

// ---------------------------------------------------------------- OpenMP tasks
namespace {

class omp_peer final : public peer {
 public:
  omp_peer(shape s, std::size_t size, int threads, bool depend)
      : shape_(s),
        size_(size),
        threads_(threads),
        depend_(depend || s == shape::chain || s == shape::wavefront),
        name_(label(depend_ ? "omp-task-depend" : "omp-task", threads)) {
    if (depend_) deps_.assign(task_count(s, size), 0);
  }
  char const* name() const override { return name_.c_str(); }

  void run() override {
    switch (shape_) {
      case shape::chain:
        chain();
        break;
      case shape::tree:
        depend_ ? tree_depend() : tree_root();
        break;
      case shape::wavefront:
        wavefront();
        break;
      case shape::fanout:
        depend_ ? fanout_depend() : fanout();
        break;
    }
  }

 private:
  void chain() {
    [[maybe_unused]] char token = 0;  // g++ 12 does not count depend clauses as uses
    std::size_t const n = size_;
#pragma omp parallel num_threads(threads_)
#pragma omp single
    for (std::size_t i = 0; i < n; ++i) {
#pragma omp task depend(inout : token) firstprivate(i)
      task_body(i);
    }
  }

  // Node `i` of a heap-numbered binary tree runs, then forks its two children.
  static void tree(std::size_t i, std::size_t nodes) {
    task_body(i);
    std::size_t l = 2 * i + 1, r = 2 * i + 2;
    if (l < nodes) {
#pragma omp task firstprivate(l, nodes)
      tree(l, nodes);
    }
    if (r < nodes) {
#pragma omp task firstprivate(r, nodes)
      tree(r, nodes);
    }
  }
  void tree_root() {
    std::size_t const nodes = task_count(shape::tree, size_);
#pragma omp parallel num_threads(threads_)
#pragma omp single
    tree(0, nodes);  // the implicit barrier at the end of single waits for every task
  }

  // The tree as a static task graph: node i after its parent (i - 1) / 2.
  void tree_depend() {
    std::size_t const nodes = task_count(shape::tree, size_);
    [[maybe_unused]] char* d = deps_.data();  // g++ 12 does not count depend clauses as uses
#pragma omp parallel num_threads(threads_)
#pragma omp single
    {
#pragma omp task depend(out : d[0])
      task_body(0);
      for (std::size_t i = 1; i < nodes; ++i) {
#pragma omp task depend(in : d[(i - 1) / 2]) depend(out : d[i]) firstprivate(i)
        task_body(i);
      }
    }
  }

  // One -> n -> one with depend edges: the middle tasks read the source's item, and the
  // sink's inout on it orders the sink after every one of them (OpenMP's rule for an out
  // dependence after in dependences on the same list item).
  void fanout_depend() {
    std::size_t const n = size_;
    [[maybe_unused]] char* d = deps_.data();
#pragma omp parallel num_threads(threads_)
#pragma omp single
    {
#pragma omp task depend(out : d[0])
      task_body(0);
      for (std::size_t i = 1; i <= n; ++i) {
#pragma omp task depend(in : d[0]) firstprivate(i)
        task_body(i);
      }
#pragma omp task depend(inout : d[0])
      task_body(n + 1);
    }
  }

  void wavefront() {
    std::size_t const n = size_;
    char* d = deps_.data();
    char none = 0;  // what blocks on the top row and left column "depend" on: never written
#pragma omp parallel num_threads(threads_)
#pragma omp single
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        char* up = i > 0 ? &d[(i - 1) * n + j] : &none;
        char* left = j > 0 ? &d[i * n + j - 1] : &none;
#pragma omp task depend(in : *up, *left) depend(out : d[i * n + j]) firstprivate(i, j)
        task_body(i * n + j);
      }
  }

  void fanout() {
    std::size_t const n = size_;
#pragma omp parallel num_threads(threads_)
#pragma omp single
    {
      task_body(0);
      for (std::size_t i = 1; i <= n; ++i) {
#pragma omp task firstprivate(i)
        task_body(i);
      }
#pragma omp taskwait
      task_body(n + 1);
    }
  }

  shape shape_;
  std::size_t size_;
  int threads_;
  bool depend_;
  std::string name_;
  std::vector<char> deps_;
};

}  // namespace

std::unique_ptr<peer> make_omp(shape s, std::size_t size, int threads) {
  return std::make_unique<omp_peer>(s, size, threads, false);
}

std::unique_ptr<peer> make_omp_depend(shape s, std::size_t size, int threads) {
  if (s == shape::chain || s == shape::wavefront) return nullptr;
  // libgomp 12 runs the depend form of a 10^5-wide fanout in ~150 us per task at 1 thread
  // (~15 s a run: undeferred tasks scan every earlier reader of the source's item), so the
  // benchmark leaves it out unless asked for (STRATA_BENCH_OMP_DEPEND_FANOUT=1); the peer
  // test still checks it at small sizes.
  if (s == shape::fanout && size > 4096 && !std::getenv("STRATA_BENCH_OMP_DEPEND_FANOUT"))
    return nullptr;
  return std::make_unique<omp_peer>(s, size, threads, true);
}

// ---------------------------------------------------------------- oneTBB flow_graph
#if defined(STRATA_BENCH_HAVE_TBB)
namespace {

namespace flow = oneapi::tbb::flow;
using node_t = flow::continue_node<flow::continue_msg>;

class tbb_peer final : public peer {
 public:
  tbb_peer(shape s, std::size_t size, int threads)
      : arena_(threads), name_(label("tbb-flow_graph", threads)) {
    // The graph belongs to the arena it is built in, so build (and run) it there.
    arena_.execute([&] { build(s, size); });
  }
  ~tbb_peer() override {
    arena_.execute([&] {
      g_->wait_for_all();
      nodes_.clear();
      g_.reset();
    });
  }
  char const* name() const override { return name_.c_str(); }

  void run() override {
    arena_.execute([&] {
      nodes_.front()->try_put(flow::continue_msg{});
      g_->wait_for_all();
    });
  }

 private:
  node_t& add(std::size_t index) {
    nodes_.push_back(
        std::make_unique<node_t>(*g_, [index](flow::continue_msg const&) { task_body(index); }));
    return *nodes_.back();
  }

  void build(shape s, std::size_t size) {
    g_ = std::make_unique<flow::graph>();
    std::size_t const count = task_count(s, size);
    nodes_.reserve(count);
    for (std::size_t i = 0; i < count; ++i) add(i);
    switch (s) {
      case shape::chain:
        for (std::size_t i = 1; i < count; ++i) flow::make_edge(*nodes_[i - 1], *nodes_[i]);
        break;
      case shape::tree:
        for (std::size_t i = 1; i < count; ++i) flow::make_edge(*nodes_[(i - 1) / 2], *nodes_[i]);
        break;
      case shape::wavefront:
        for (std::size_t i = 0; i < size; ++i)
          for (std::size_t j = 0; j < size; ++j) {
            if (i > 0) flow::make_edge(*nodes_[(i - 1) * size + j], *nodes_[i * size + j]);
            if (j > 0) flow::make_edge(*nodes_[i * size + j - 1], *nodes_[i * size + j]);
          }
        break;
      case shape::fanout:
        for (std::size_t i = 1; i <= size; ++i) {
          flow::make_edge(*nodes_[0], *nodes_[i]);
          flow::make_edge(*nodes_[i], *nodes_[size + 1]);
        }
        break;
    }
  }

  oneapi::tbb::task_arena arena_;
  std::string name_;
  std::unique_ptr<flow::graph> g_;
  std::vector<std::unique_ptr<node_t>> nodes_;
};

}  // namespace

std::unique_ptr<peer> make_tbb(shape s, std::size_t size, int threads) {
  return std::make_unique<tbb_peer>(s, size, threads);
}

namespace {
class tbb_build_run final : public peer {
 public:
  tbb_build_run(shape s, std::size_t size, int threads)
      : s_(s), size_(size), threads_(threads), name_(label("tbb-flow_graph-build", threads)) {}
  char const* name() const override { return name_.c_str(); }
  void run() override {
    tbb_peer p(s_, size_, threads_);  // construct (in its arena), run once, destroy
    p.run();
  }

 private:
  shape s_;
  std::size_t size_;
  int threads_;
  std::string name_;
};
}  // namespace

std::unique_ptr<peer> make_tbb_build_run(shape s, std::size_t size, int threads) {
  return std::make_unique<tbb_build_run>(s, size, threads);
}

std::vector<double> tbb_wake_latencies(int threads, int samples, int idle_ms) {
  oneapi::tbb::task_arena arena(threads);
  oneapi::tbb::task_group tg;
  std::vector<double> out;
  arena.execute([&] { tg.run_and_wait([] {}); });  // start the workers
  for (int i = 0; i < samples; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
    std::atomic<std::int64_t> started{0};
    auto t0 = std::chrono::steady_clock::now();
    arena.enqueue([&] {
      started.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                    std::memory_order_release);
    });
    while (started.load(std::memory_order_acquire) == 0) std::this_thread::yield();
    auto t1 =
        std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(started.load()));
    out.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  return out;
}
#else
std::unique_ptr<peer> make_tbb(shape, std::size_t, int) {
  return nullptr;
}
std::unique_ptr<peer> make_tbb_build_run(shape, std::size_t, int) {
  return nullptr;
}
std::vector<double> tbb_wake_latencies(int, int, int) {
  return {};
}
#endif

}  // namespace strata::bench::graph_peers
