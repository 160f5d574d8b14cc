// Launching thread arrays (PARRAY §4.2-4.4, §4.8, §4.10, §4.11): `for P { ... }` creates
// an array of threads laid out by the thread-array type P (layout/thread_type.hpp); each
// thread runs the body with its `tid` (per sub-dimension too) and may `sync` with its
// group; the caller waits for all of them.
//
//   PARRAY                                 Strata
//   parray pthd [[3][4]] P                 thread_array<thread_kind::pthd> P{dims{3, 4}};
//   for P as(int x) { tid, tid_0, sync }   for_threads(P, [&](thread_context const& t) {
//                                            t.tid(); t.tid(0); t.sync(); });
//   parallel { for A {..} for B {..} }     parallel_context c; c.start(A, f); c.start(B, g);
//                                          c.join();
//   parray cuda [512][[4][32]] C           thread_array<thread_kind::cuda> C{512, dims{4, 32}};
//   for C as(args) { tid_1_1, sync_1 }     launch(place, C, kernel{}, args...); in the kernel
//                                          device_thread t(self, tree); t.tid(1, 1); t.sync(1)
//
// `pthd` threads are operating-system threads of this process, all running at once (so
// they may block, sleep and sync however the body likes); they are kept between launches
// and parked on the runtime's one sleep/wake mechanism (src/exec/threads/wake.hpp) while
// idle or waiting in a sync. `omp` threads are an OpenMP parallel region's. A `cuda`
// thread array is a kernel launch on any place: its first top-level dimension is the grid
// of blocks and its second the threads of a block (a block barrier is `sync(1)`); with
// one top-level dimension the threads are regrouped into blocks of 256 (PARRAY §4.4).
//
// Errors: an exception in any thread reaches the caller's wait; the threads waiting in a
// sync of that array are released with an error instead of hanging, and so are those of
// a group one of whose threads returned without reaching the sync they wait in.
#pragma once

#include <strata/exec/event.hpp>
#include <strata/exec/launch.hpp>
#include <strata/exec/shape.hpp>
#include <strata/layout/thread_type.hpp>

#include <concepts>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

class thread_context;

namespace detail {

struct thread_array_state;  // src/exec/thread_array.cpp

/// The body of a CPU thread array, type-erased: `fn` is the user's callable.
using thread_body = void (*)(void const* fn, thread_context const& t);

enum class cpu_thread_kind : int { pthd, omp };

/// Starts the threads of a CPU thread array (each runs body(fn, ...)); the event completes
/// when all have returned, with the first exception if any thread threw. A caller that
/// will wait for it (`caller_joins`) runs thread 0 itself before returning.
event start_thread_array(cpu_thread_kind kind, thread_tree const& tree, thread_body body,
                         std::shared_ptr<void const> fn, bool caller_joins);
/// Thread `tid`'s arrival at the sync of tree node `node`; returns when its group has met.
void thread_array_sync(thread_array_state* s, index_t tid, int node);
/// The node of a sub-dimension path, or a clear error naming the path.
[[noreturn]] void bad_thread_path(int const* path, int depth, thread_tree const& tree);

/// A misuse inside a thread array's kernel: an error on the host, a trap on a GPU.
STRATA_FN inline void thread_array_check(bool ok, char const* what) {
  if (ok) return;
#if STRATA_DEVICE_CODE
  (void)what;
  __trap();
#else
  throw invalid_argument(what);
#endif
}

template <class... I>
STRATA_FN constexpr int thread_node(thread_tree const& tree, I... path) {
  if constexpr (sizeof...(I) == 0) {
    return 0;
  } else {
    int const p[] = {static_cast<int>(path)...};
    int const n = tree.find(p, static_cast<int>(sizeof...(I)));
#if STRATA_DEVICE_CODE
    thread_array_check(n >= 0, "thread array: no such sub-dimension");
#else
    if (n < 0) bad_thread_path(p, static_cast<int>(sizeof...(I)), tree);
#endif
    return n;
  }
}

}  // namespace detail

/// A thread of a CPU thread array, as its body sees it (PARRAY's context of a `for`).
class thread_context {
 public:
  thread_context(detail::thread_array_state* s, thread_tree const* tree, index_t tid)
      : state_(s), tree_(tree), tid_(tid) {}

  /// The thread's id in the whole array (PARRAY `tid`).
  index_t tid() const { return tid_; }
  /// Its index in a sub-dimension: `tid(0, 1)` is PARRAY's `tid_0_1`.
  template <std::integral... I>
  requires(sizeof...(I) >= 1) index_t tid(I... path)
  const { return tree_->index(detail::thread_node(*tree_, path...), tid_); }
  /// Threads in the array (PARRAY `size` in the context), or in a sub-dimension.
  template <std::integral... I>
  index_t size(I... path) const {
    return tree_->nodes[detail::thread_node(*tree_, path...)].size;
  }
  /// Waits until every thread of the array has arrived (PARRAY `sync`).
  void sync() const { detail::thread_array_sync(state_, tid_, 0); }
  /// Waits for the threads that differ from this one only in the given sub-dimension
  /// (PARRAY `sync_1`: in `[[3][4]]` the 4 threads of this thread's row).
  template <std::integral... I>
  requires(sizeof...(I) >= 1) void sync(I... path) const {
    detail::thread_array_sync(state_, tid_, detail::thread_node(*tree_, path...));
  }
  thread_tree const& tree() const { return *tree_; }

 private:
  detail::thread_array_state* state_;
  thread_tree const* tree_;
  index_t tid_;
};

namespace detail {
template <class Kind, class F>
event start_threads(thread_array<Kind> const& threads, F&& body, bool caller_joins) {
  static_assert(!std::is_same_v<Kind, thread_kind::cuda>,
                "start_threads: a cuda thread array is a kernel; launch it on a place with "
                "strata::launch(place, threads, kernel, args...)");
  static_assert(!std::is_same_v<Kind, thread_kind::mpi>,
                "start_threads: an mpi thread array is the processes of a team; run it with "
                "strata::dist::for_ranks(team, threads, body) on every member");
  using fn_t = std::decay_t<F>;
  auto fn = std::make_shared<fn_t const>(std::forward<F>(body));
  detail::thread_body run = [](void const* f, thread_context const& t) {
    (*static_cast<fn_t const*>(f))(t);
  };
  auto const kind = std::is_same_v<Kind, thread_kind::omp> ? detail::cpu_thread_kind::omp
                                                           : detail::cpu_thread_kind::pthd;
  return detail::start_thread_array(kind, threads.tree(), run, std::move(fn), caller_joins);
}
}  // namespace detail

/// Starts the thread array `threads` running `body(thread_context const&)` on every
/// thread; the event completes when all have returned. `body` is shared by the threads
/// (called as const) and kept alive until then.
template <class Kind, class F>
requires std::invocable<F const&, thread_context const&> event
start_threads(thread_array<Kind> const& threads, F&& body) {
  return detail::start_threads(threads, std::forward<F>(body), false);
}

/// PARRAY's `for P { ... }`: runs the thread array and waits for it; rethrows the first
/// exception of any of its threads.
template <class Kind, class F>
requires std::invocable<F const&, thread_context const&>
void for_threads(thread_array<Kind> const& threads, F&& body) {
  detail::start_threads(threads, std::forward<F>(body), true).wait();
}

/// PARRAY's `parallel { ... }` (§4.11): thread arrays (and any other work given as events)
/// started together and joined once.
class parallel_context {
 public:
  parallel_context() = default;
  parallel_context(parallel_context const&) = delete;
  parallel_context& operator=(parallel_context const&) = delete;
  /// Waits for what was started and not joined; errors are dropped (call join to see them).
  ~parallel_context() {
    for (auto const& e : events_) {
      try {
        e.wait();
      } catch (...) {
      }
    }
  }

  template <class Kind, class F>
  void start(thread_array<Kind> const& threads, F&& body) {
    events_.push_back(start_threads(threads, std::forward<F>(body)));
  }
  /// Other work of the context (a device thread array's launch, a copy).
  void add(event e) { events_.push_back(std::move(e)); }
  /// Waits for everything started; rethrows the first failure (in start order).
  void join() {
    auto events = std::move(events_);
    events_.clear();
    wait_all(events);
  }

 private:
  std::vector<event> events_;
};

/// A thread of a `cuda` thread array inside its kernel: `self` is the kernel's domain.
template <class Self>
class device_thread {
 public:
  STRATA_FN device_thread(Self const& self, thread_tree const& tree)
      : self_(self), tree_(tree), tid_(self.global_linear_index()) {}

  STRATA_FN index_t tid() const { return tid_; }
  template <std::integral... I>
  requires(sizeof...(I) >= 1) STRATA_FN index_t tid(I... path)
  const { return tree_.index(detail::thread_node(tree_, path...), tid_); }
  template <std::integral... I>
  STRATA_FN index_t size(I... path) const {
    return tree_.nodes[detail::thread_node(tree_, path...)].size;
  }
  /// PARRAY `sync_1` (the block's threads) and trailing sub-dimensions of the block
  /// (`sync(1, 1)` in `[512][[4][32]]`: the 32 threads of a row). A GPU's blocks cannot
  /// meet, so neither `sync()` nor other groups are allowed.
  template <std::integral... I>
  requires(sizeof...(I) >= 1) STRATA_FN void sync(I... path) const {
    int const n = detail::thread_node(tree_, path...);
    int const block = tree_.nodes[0].children == 2 ? tree_.nodes[0].first_child + 1 : -1;
    detail::thread_array_check(block >= 0,
                               "device thread array sync: this array has one top-level "
                               "dimension (threads regrouped into blocks of 256) and no block "
                               "to sync; expected it declared as [blocks][threads]");
    if (n == block) {
      self_.block().barrier();
      return;
    }
    bool inside = false;
    for (int k = tree_.nodes[n].parent; k >= 0; k = tree_.nodes[k].parent)
      inside = inside || k == block;
    detail::thread_array_check(inside && tree_.nodes[n].stride == 1,
                               "device thread array sync: expected the block dimension "
                               "(sync(1)) or one of its trailing sub-dimensions (a GPU's "
                               "blocks cannot meet)");
    self_.block().group(tree_.nodes[n].size).barrier();
  }
  STRATA_FN Self const& self() const { return self_; }

 private:
  Self const& self_;
  thread_tree const& tree_;
  index_t tid_;
};

namespace detail {

/// The kernel of a `cuda` thread array: the user's kernel with the thread tree; threads
/// past the array's size (the last block of a regrouped array) skip the body.
template <class K>
struct thread_array_kernel {
  K kernel;
  thread_tree tree;
  template <class Self, class... A>
  STRATA_FN void operator()(Self const& self, A&&... args) const {
    if (self.global_linear_index() >= tree.size()) return;
    kernel(device_thread<Self>(self, tree), args...);
  }
};

/// Threads per block of a thread array with one top-level dimension (PARRAY §4.4's
/// _PA_DEFAULT_NTHREADS).
inline constexpr index_t default_block_threads = 256;

}  // namespace detail

/// PARRAY's `for C as(args) { ... }` for a `cuda` thread array: the kernel runs once per
/// thread, as `kernel(device_thread<Self> const&, args...)`, on any place.
template <class Kernel, class... Args>
event launch(target const& where, thread_array<thread_kind::cuda> const& threads, Kernel&& kernel,
             Args&&... args) {
  detail::thread_array_kernel<std::decay_t<Kernel>> k{std::forward<Kernel>(kernel), threads.tree()};
  auto const& t = threads.tree();
  if (threads.ndim() == 2) {
    auto s = grid(t.nodes[t.nodes[0].first_child].size)
                 .block(parallel, t.nodes[t.nodes[0].first_child + 1].size)
                 .scratchpad(threads.scratchpad_bytes());
    return launch(where, s, k, std::forward<Args>(args)...);
  }
  if (threads.ndim() > 2)
    throw invalid_argument("launch: a cuda thread array has " + std::to_string(threads.ndim()) +
                           " top-level dimensions; expected [threads] or [blocks][threads]");
  if (threads.scratchpad_bytes() != 0)
    throw invalid_argument(
        "launch: a cuda thread array with one top-level dimension has no blocks to share a "
        "scratchpad; expected [blocks][threads]");
  index_t const n = threads.size();
  index_t const b = n < detail::default_block_threads ? n : detail::default_block_threads;
  // Parallel blocks here too: the form is known only at run time, and a kernel written
  // for [blocks][threads] (a scratchpad, sync(1)) must compile for this one as well.
  return launch(where, grid((n + b - 1) / b).block(parallel, b), k, std::forward<Args>(args)...);
}

}  // namespace strata
