// Regression tests of issue 12: nested waits that hang, graph semantics, dynamic tasking,
// condition nodes, node places, graph memory. Each scenario that could hang runs under a
// watchdog that fails the test (and ends the process) instead of hanging CI.
#include <gtest/gtest.h>

#include <strata/strata.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>

#include "support/hang_guard.hpp"

// Bytes the calling thread allocates while `counting` is set (for the 1-node graph check).
namespace {
thread_local bool counting = false;
thread_local std::size_t counted_bytes = 0;
thread_local std::size_t counted_news = 0;
}  // namespace

// ASan and clang's TSan own operator new (mixing them is an error; clang links TSan's
// replacements statically, so a second definition does not even link).
#if !defined(STRATA_ASAN) && !defined(STRATA_TSAN)
// These deletes free what the news above them malloc'ed; g++ sees only the free after an
// inlined `new` and warns.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  if (counting) {
    counted_bytes += n;
    ++counted_news;
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  if (counting) {
    counted_bytes += n;
    ++counted_news;
  }
  auto const al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

#endif

namespace strata {
namespace {

#if defined(STRATA_TSAN) || defined(STRATA_ASAN)
constexpr int scale = 10;
#else
constexpr int scale = 1;
#endif

using testing_support::finishes_within;

constexpr auto limit = std::chrono::seconds(60);

place one_pu(runtime& rt, std::size_t i = 0) {
  auto pus = rt.machine().descendants(place_type::pu);
  return pus.at(std::min(i, pus.size() - 1));
}

// Defect 1a: one PU, a task waits on an event that a sibling task completes.
TEST(NestedWait, OnePuTaskWaitsForSibling) {
  runtime rt;
  finishes_within(limit, "one PU, sibling completes the awaited event", [&] {
    for (int round = 0; round < 50; ++round) {
      auto e = event::pending();
      graph g;
      // Either order of the two siblings: the waiter must run the other one.
      if (round % 2)
        g.emplace([e] { e.wait(); }).emplace([e] { e.complete(); });
      else
        g.emplace([e] { e.complete(); }).emplace([e] { e.wait(); });
      run(g, one_pu(rt)).wait();
    }
  });
}

// Defect 1b: a task waits, then the main thread submits a new graph (or a launch) that
// the waiter itself must run (its arena has one PU), on the first and the last PU.
TEST(NestedWait, WaiterRunsAGraphSubmittedLater) {
  runtime rt;
  auto pus = rt.machine().descendants(place_type::pu);
  for (auto const& pu : {pus.front(), pus.back()}) {
    finishes_within(limit, "waiter must run a graph injected later", [&] {
      for (int round = 0; round < 20; ++round) {
        auto e = event::pending();
        std::atomic<bool> waiting{false};
        graph waiter;
        waiter.emplace([e, &waiting] {
          waiting = true;
          e.wait();
        });
        auto first = run(waiter, pu);
        while (!waiting) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // let it park
        graph later;
        later.emplace([e] { e.complete(); });
        run(later, pu).wait();
        first.wait();
      }
    });
  }
}

struct complete_event {
  template <class Self>
  void operator()(Self const& self, detail::event_state* s) const {
    if (self.global_index()[0] == 0) s->complete();
  }
};

TEST(NestedWait, WaiterRunsALaunchSubmittedLater) {
  runtime rt;
  auto pus = rt.machine().descendants(place_type::pu);
  finishes_within(limit, "waiter must run a launch submitted later", [&] {
    for (int round = 0; round < 20; ++round) {
      auto e = event::pending();
      std::atomic<bool> waiting{false};
      graph waiter;
      waiter.emplace([e, &waiting] {
        waiting = true;
        e.wait();
      });
      auto first = run(waiter, pus.back());
      while (!waiting) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      launch(pus.back(), grid(1), complete_event{}, e.state()).wait();
      first.wait();
    }
  });
}

// Defect 1c: the device-priority worker blocks in a nested wait while device nodes are
// queued; the device work must still run.
TEST(NestedWait, DeviceWorkRunsWhileItsWorkerWaits) {
  runtime rt({.sim_devices = "1"});
  finishes_within(limit, "device node behind a blocked device-priority worker", [&] {
    for (int round = 0; round < 20; ++round) {
      auto e = event::pending();
      graph g;
      for (int i = 0; i < 4; ++i) g.emplace(execution_kind::device, [e] { e.wait(); });
      g.emplace(execution_kind::device, [e] { e.complete(); });
      run(g).wait();
    }
  });
}

// Defect 2: complete() of a reduction is false while the next run still reduces.
TEST(GraphSemantics, ReductionIsNotCompleteWhileTheNextRunReduces) {
  runtime rt;
  std::vector<int> v(100, 1);
  partitioned parts(v, 4);
  auto result = make_reduction_result<int>(0);
  std::atomic<bool> gate{true};
  graph g;
  g.emplace([&] {
     while (!gate.load()) std::this_thread::yield();
   }).then_reduce(parts, result, [](int a, int b) { return a + b; });
  run(g).wait();
  EXPECT_TRUE(result.complete());
  EXPECT_EQ(result.value(), 100);
  gate = false;
  auto e = run(g);
  EXPECT_FALSE(result.complete()) << "complete() still true from the previous run";
  gate = true;
  e.wait();
  EXPECT_TRUE(result.complete());
  EXPECT_EQ(result.value(), 100);
}

// Defect 3: two partitionings of one base with different extents are different
// partitionings: a then_split over the second depends on every node of the first.
TEST(GraphSemantics, PartitioningsOfOneBaseWithOtherExtentsDependWhole) {
  runtime rt;
  std::vector<int> v(16, 0);
  partitioned whole(v, 2);                               // [0,8) [8,16)
  partitioned half(std::span<int>(v.data(), 8), 2);      // [0,4) [4,8)
  partitioned strided(std::span<int>(v.data(), 16), 4);  // other part count
  EXPECT_FALSE(whole.partitioning() == half.partitioning());
  EXPECT_FALSE(whole.partitioning() == strided.partitioning());
  EXPECT_TRUE(whole.partitioning() == partitioned(v, 2).partitioning());
  int* const base = v.data();
  for (int round = 0; round < 5; ++round) {
    std::fill(v.begin(), v.end(), 0);
    std::atomic<int> bad{0};
    graph g;
    g.split(
         [base](std::span<int> p) {
           // The second part of `half` writes late.
           if (p.data() != base) std::this_thread::sleep_for(std::chrono::milliseconds(5));
           for (auto& x : p) x = 1;
         },
         half)
        .then_split(
            [&bad, base](std::span<int> p) {
              // Part 0 of `whole` covers both parts of `half`: both must have written.
              if (p.data() == base)
                for (int x : p) bad += x != 1;
            },
            whole);
    run(g).wait();
    EXPECT_EQ(bad.load(), 0) << "a split read data its predecessor had not written yet";
  }
}

// Defect 4: emplace after sync runs after the sync, not as a new root.
TEST(GraphSemantics, EmplaceAfterSyncRunsAfterIt) {
  runtime rt;
  std::mutex m;
  std::vector<std::string> order;
  auto note = [&](std::string s) {
    return [&, s] {
      std::lock_guard lock(m);
      order.push_back(s);
    };
  };
  // A and B take a while, so that roots after the sync (the defect) would run first.
  auto slow = [&](std::string s) {
    return [&, s] {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::lock_guard lock(m);
      order.push_back(s);
    };
  };
  graph g;
  g.emplace(slow("A")).emplace(slow("B")).sync(note("S")).emplace(note("C")).emplace(note("D"));
  g.then(note("E"));
  for (int pass = 0; pass < 5; ++pass) {
    order.clear();
    run(g).wait();
    ASSERT_EQ(order.size(), 6u);
    auto at = [&](std::string const& s) { return std::find(order.begin(), order.end(), s); };
    EXPECT_LT(at("A"), at("S"));
    EXPECT_LT(at("B"), at("S"));
    EXPECT_LT(at("S"), at("C")) << "emplace after sync ran before the sync";
    EXPECT_LT(at("S"), at("D"));
    EXPECT_LT(at("C"), at("E"));
    EXPECT_LT(at("D"), at("E"));
  }
}

// Defect 5: an exception in the parent graph cancels a running sub-graph.
TEST(GraphSemantics, ParentFailureCancelsARunningSubgraph) {
  runtime rt;
  std::atomic<int> ran{0};
  graph sub;
  sub.emplace([&] {
    ran++;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  for (int i = 1; i < 200; ++i)
    sub.then([&] {
      ran++;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
  std::atomic<bool> sub_started{false};
  graph parent;
  parent.emplace([&] { sub_started = true; }).then(sub).emplace([&] {
    while (ran.load() < 3) std::this_thread::yield();
    throw std::runtime_error("parent failed");
  });
  EXPECT_THROW(run(parent).wait(), std::runtime_error);
  EXPECT_LT(ran.load(), 100) << "the sub-graph ran on after its parent failed";
  // Both graphs can run again.
  ran = 0;
  run(sub).wait();
  EXPECT_EQ(ran.load(), 200);
}

// Dynamic tasking: a recursive tree of spawned tasks.
long tree(int depth) {
  if (depth == 0) return 1;
  long left = 0;
  task_group children;
  children.spawn([&left, depth] { left = tree(depth - 1); });
  long right = tree(depth - 1);
  children.join();
  return left + right + 1;
}

TEST(Dynamic, RecursiveSpawnAndJoinInsideGraphsAndFromOutside) {
  runtime rt;
  int const depth = 16 - (scale > 1 ? 4 : 0);
  long const expected = (1L << (depth + 1)) - 1;
  for (auto const& where : {rt.machine(), one_pu(rt)}) {
    long got = 0;
    graph g;
    g.emplace([&] { got = tree(depth); });
    finishes_within(limit, "recursive spawn", [&] { run(g, where).wait(); });
    EXPECT_EQ(got, expected);
  }
  // From a thread that is not a worker: children are injected, join parks.
  finishes_within(limit, "spawn from outside", [&] { EXPECT_EQ(tree(depth), expected); });
}

TEST(Dynamic, SiblingsWaitOnEachOtherOnOnePu) {
  runtime rt;
  finishes_within(limit, "spawned siblings waiting on each other", [&] {
    for (int round = 0; round < 50; ++round) {
      graph g;
      g.emplace([](task_group& tg) {
        auto e = event::pending();
        tg.spawn([e] { e.wait(); });
        tg.spawn([e] { e.complete(); });
      });
      run(g, one_pu(rt)).wait();
    }
  });
}

TEST(Dynamic, ExceptionsReachJoinAndTheGroupIsReusable) {
  runtime rt;
  task_group tg;
  tg.spawn([] { throw std::logic_error("child failed"); });
  EXPECT_THROW(tg.join(), std::logic_error);
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) tg.spawn([&] { ran++; });
  tg.join();
  EXPECT_EQ(ran.load(), 100);
  // A subflow node's child failure fails the graph.
  graph g;
  g.emplace([](task_group& children) {
    children.spawn([] {});
    children.spawn([] { throw std::runtime_error("subflow child failed"); });
  });
  EXPECT_THROW(run(g).wait(), std::runtime_error);
}

TEST(Dynamic, SubflowNodesCompleteAfterTheirChildren) {
  runtime rt;
  std::atomic<int> children{0};
  int seen = -1;
  graph g;
  g.emplace([&](task_group& tg) {
     for (int i = 0; i < 1000; ++i) tg.spawn([&] { children++; });
   }).then([&] { seen = children.load(); });
  for (int pass = 0; pass < 3; ++pass) {
    children = 0;
    run(g).wait();
    EXPECT_EQ(seen, 1000);
  }
}

// Workers count a group's tasks in batches and keep the counts of the tasks they finish
// (credits): they must give them back before they wait, park or run something else, or a
// join would wait for counts nobody returns. One group filled from tasks on every worker
// and joined from outside; a task that spawns into a group joined by another thread and
// then waits for that join; nested groups; each on all PUs and on one.
TEST(Dynamic, CountsHeldByWorkersNeverHoldUpAJoin) {
  runtime rt;
  for (auto const& where : {rt.machine(), one_pu(rt)}) {
    finishes_within(limit, "a group filled from every worker, joined from outside", [&] {
      for (int round = 0; round < 20 * (scale > 1 ? 1 : 5); ++round) {
        std::atomic<int> ran{0};
        task_group shared;
        graph g;
        for (int n = 0; n < 8; ++n)
          g.emplace([&] {
            for (int i = 0; i < 100; ++i)
              shared.spawn([&, i] {
                ran++;
                if (i % 7 == 0) shared.spawn([&] { ran++; });
              });
          });
        run(g, where).wait();
        shared.join();
        EXPECT_EQ(ran.load(), 8 * (100 + 15));
      }
    });
    finishes_within(limit, "a task waits for the join of a group it spawned into", [&] {
      for (int round = 0; round < 50; ++round) {
        task_group other;
        auto spawned = event::pending(), joined = event::pending();
        std::atomic<int> ran{0};
        graph g;
        g.emplace([&] {
          for (int i = 0; i < 10; ++i) other.spawn([&] { ran++; });
          spawned.complete();
          joined.wait();  // the counts this worker holds for `other` must go back first
        });
        auto running = run(g, where);
        spawned.wait();
        other.join();
        EXPECT_EQ(ran.load(), 10);
        joined.complete();
        running.wait();
      }
    });
    finishes_within(limit, "nested groups joined inside tasks", [&] {
      std::atomic<long> leaves{0};
      graph g;
      g.emplace([&](task_group& outer) {
        for (int i = 0; i < 64; ++i)
          outer.spawn([&] {
            task_group inner;
            for (int j = 0; j < 16; ++j)
              inner.spawn([&] {
                leaves++;
                outer.spawn([&] { leaves++; });  // into the enclosing group, unjoined here
              });
            inner.join();
          });
      });
      for (int pass = 0; pass < 5; ++pass) {
        leaves = 0;
        run(g, where).wait();
        EXPECT_EQ(leaves.load(), 64 * 16 * 2);
      }
    });
  }
}

// spawn(inline_if_busy, f): at once inside a task on one PU (nobody could steal), queued
// from a thread that is not a worker, bounded nesting, exceptions and cancellation as for
// queued tasks, and a recursion over every PU that computes what it should.
long inline_tree(task_group& tg, std::atomic<long>& count, int depth) {
  count++;
  if (depth > 0) {
    tg.spawn(inline_if_busy, [&tg, &count, depth] { inline_tree(tg, count, depth - 1); });
    tg.spawn(inline_if_busy, [&tg, &count, depth] { inline_tree(tg, count, depth - 1); });
  }
  return 0;
}

void inline_chain(task_group& tg, std::atomic<long>& count, long left) {
  count++;
  if (left > 0)
    tg.spawn(inline_if_busy, [&tg, &count, left] { inline_chain(tg, count, left - 1); });
}

TEST(Dynamic, InlineIfBusyRunsAtOnceOnlyWhereItMay) {
  runtime rt;
  finishes_within(limit, "inline_if_busy", [&] {
    // One PU: the child runs inside spawn.
    bool ran_inside = false;
    graph g;
    g.emplace([&](task_group& tg) {
      bool done = false;
      tg.spawn(inline_if_busy, [&done] { done = true; });
      ran_inside = done;
    });
    run(g, one_pu(rt)).wait();
    EXPECT_TRUE(ran_inside);
    // Not a worker: queued, runs on a worker.
    task_group outside;
    std::atomic<bool> on_caller{true};
    auto const me = std::this_thread::get_id();
    outside.spawn(inline_if_busy, [&] { on_caller = std::this_thread::get_id() == me; });
    outside.join();
    EXPECT_FALSE(on_caller.load());
    // A chain 10^5 long, each link spawning the next: the nesting is bounded, the rest
    // queued (no stack overflow), every link runs.
    long const links = 100000 / scale;
    for (auto const& where : {rt.machine(), one_pu(rt)}) {
      std::atomic<long> count{0};
      graph chain;
      chain.emplace([&](task_group& tg) { inline_chain(tg, count, links - 1); });
      run(chain, where).wait();
      EXPECT_EQ(count.load(), links);
      // A tree over every PU (children run inline or are stolen).
      std::atomic<long> nodes{0};
      graph tree;
      int const depth = 14 - (scale > 1 ? 4 : 0);
      tree.emplace([&](task_group& tg) { inline_tree(tg, nodes, depth); });
      run(tree, where).wait();
      EXPECT_EQ(nodes.load(), (1L << (depth + 1)) - 1);
    }
    // An inline child's exception reaches join; once the group failed, inline children
    // are skipped like queued ones.
    graph failing;
    std::atomic<int> after{0};
    failing.emplace([&](task_group& tg) {
      tg.spawn(inline_if_busy, [] { throw std::logic_error("inline child failed"); });
      tg.spawn(inline_if_busy, [&] { after++; });
    });
    EXPECT_THROW(run(failing, one_pu(rt)).wait(), std::logic_error);
    EXPECT_EQ(after.load(), 0);
  });
}

// Condition nodes: a loop inside the graph (init -> body -> cond -> body | done).
TEST(Condition, LoopsInsideAGraph) {
  runtime rt;
  int iterations = 0, done = 0;
  graph g;
  auto init = g.add([&] { iterations = 0; });
  auto body = g.add([&] { ++iterations; });
  auto cond = g.add_condition([&] { return iterations < 10 ? 0 : 1; });
  auto fin = g.add([&] { ++done; });
  init.precede(body);
  body.precede(cond);
  cond.precede(body);  // 0: again
  cond.precede(fin);   // 1: out
  for (int pass = 1; pass <= 3; ++pass) {
    finishes_within(limit, "condition loop", [&] { run(g).wait(); });
    EXPECT_EQ(iterations, 10);
    EXPECT_EQ(done, pass);
  }
  // A choice out of range ends that branch; the run still ends.
  graph h;
  std::atomic<int> after{0};
  auto c = h.add_condition([] { return 7; });
  c.precede(h.add([&] { after++; }));
  h.add([&] { after += 10; });
  run(h).wait();
  EXPECT_EQ(after.load(), 10);
}

TEST(Condition, BranchesAndErrors) {
  runtime rt;
  std::atomic<int> left{0}, right{0};
  int choice = 0;
  graph g;
  auto c = g.add_condition([&] { return choice; });
  auto l = g.add([&] { left++; });
  auto r = g.add([&] { right++; });
  c.precede(l);
  c.precede(r);
  run(g).wait();
  choice = 1;
  run(g).wait();
  EXPECT_EQ(left.load(), 1);
  EXPECT_EQ(right.load(), 1);
  graph bad;
  bad.add_condition([]() -> int { throw std::runtime_error("condition failed"); });
  EXPECT_THROW(run(bad).wait(), std::runtime_error);
  // A node only a condition can reach is no root; a graph of such nodes cannot start.
  graph none;
  auto a = none.add_condition([] { return 0; });
  auto b = none.add_condition([] { return 0; });
  a.precede(b);
  b.precede(a);
  EXPECT_THROW(run(none), invalid_argument);
}

// A node with a place of its own runs on those PUs, whatever the graph runs on.
TEST(Places, NodesRunOnTheirOwnPus) {
  runtime rt;
  auto pus = rt.machine().descendants(place_type::pu);
  auto last = pus.back();
  std::atomic<int> off{0};
  std::atomic<int> ran{0};
  graph g;
  for (int i = 0; i < 50; ++i)
    g.emplace(node_options("pinned", last), [&] {
      ran++;
      auto const* p = current_node_place();
      if (!p || *p != last) off++;
    });
  g.then([&] { off += current_node_place() != nullptr; });
  run(g).wait();
  EXPECT_EQ(ran.load(), 50);
  EXPECT_EQ(off.load(), 0);
}

// A sub-graph node placed on other PUs starts the sub-graph from a worker outside the
// sub-graph's arena, which queues its roots in one batch: once they are queued the whole
// run may end and the graphs be destroyed, so the start must not touch them after that.
// (A review found a loop over the roots after the batch. The window is too short for
// this test to hit it reliably — it passed 3 of 3 times under ASan with that loop — so it
// checks the path runs and ends, and ASan would report a hit.)
TEST(Places, SubgraphsPlacedOnOtherPusStartAndEndWithoutTouchingFreedGraphs) {
  runtime rt;
  auto pus = rt.machine().descendants(place_type::pu);
  if (pus.size() < 2) GTEST_SKIP() << "needs two PUs";
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> ran{0};
    auto sub = std::make_unique<graph>();
    for (int k = 0; k < 4; ++k) sub->emplace([&] { ran++; });
    auto parent = std::make_unique<graph>();
    parent->emplace(*sub, node_options("sub", pus.back()));
    run(*parent, pus.front()).wait();
    ASSERT_EQ(ran.load(), 4) << "round " << round;
    parent.reset();  // at once, while the thread that started the sub-graph may still run
    sub.reset();
  }
}

// A 1-node graph costs well under 1 KiB; building N nodes costs O(N).
TEST(Lightweight, OneNodeGraphIsSmall) {
#if defined(STRATA_ASAN) || defined(STRATA_TSAN)
  GTEST_SKIP() << "counts bytes through a replaced operator new, which the sanitizer owns";
#endif
  runtime rt;
  counted_bytes = 0;
  counting = true;
  {
    graph g;
    g.emplace([] {});
  }
  counting = false;
  EXPECT_LT(counted_bytes, 1024u);
  RecordProperty("one_node_graph_bytes", static_cast<int>(counted_bytes));
}

// A join of two pending events is one allocation (its event, countdown and errors in one
// block; the parts' continuations kept in place), and completing it allocates nothing:
// halo exchanges and graph passes make such joins every step. Session 47 measured 7.
TEST(Lightweight, AJoinOfTwoPendingEventsIsOneAllocation) {
#if defined(STRATA_ASAN) || defined(STRATA_TSAN)
  GTEST_SKIP() << "counts allocations through a replaced operator new, which the sanitizer owns";
#endif
  auto a = event::pending(), b = event::pending();
  after deps(a, b);
  counted_news = 0;
  counting = true;
  auto all = when_all(deps);
  a.complete();
  b.complete();
  counting = false;
  EXPECT_TRUE(all.ready());
  EXPECT_EQ(counted_news, 1u);
}

// A real graph of 10^6 tasks (a 1000 x 1000 wavefront), run once, every node once and
// after its two predecessors.
TEST(Lightweight, AMillionTaskGraph) {
  runtime rt;
  int const n = 1000 / (scale > 1 ? 4 : 1);
  std::vector<std::atomic<int>> state(static_cast<std::size_t>(n) * n);
  std::atomic<int> bad{0};
  graph g;
  std::vector<node_ref> row(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      auto at = static_cast<std::size_t>(i) * n + j;
      auto r = g.add([&, i, j, at] {
        if ((i > 0 && state[at - n].load() != 1) || (j > 0 && state[at - 1].load() != 1)) bad++;
        if (state[at].fetch_add(1) != 0) bad++;
      });
      if (i > 0) row[static_cast<std::size_t>(j)].precede(r);
      if (j > 0) row[static_cast<std::size_t>(j - 1)].precede(r);
      row[static_cast<std::size_t>(j)] = r;
    }
  finishes_within(limit, "10^6-task graph", [&] { run(g).wait(); });
  EXPECT_EQ(bad.load(), 0);
  for (auto& s : state) ASSERT_EQ(s.load(), 1);
}

}  // namespace
}  // namespace strata
