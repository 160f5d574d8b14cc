// Issue 12's stress test: 10^4 randomly generated programs (fewer under sanitizers) from
// three external threads at once, mixing nested waits (sub-graphs run and waited for
// inside nodes, to depth 4), events completed by sibling nodes and awaited by others,
// spawned children that wait on each other, device nodes with sim copies (returned or
// waited for inside the node), on all PUs or one-PU arenas. Every program must finish,
// every node run exactly once per run; a watchdog fails the binary on a hang.
#include <gtest/gtest.h>

#include <strata/strata.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <random>
#include <thread>
#include <vector>

namespace strata {
namespace {

#if defined(STRATA_TSAN) || defined(STRATA_ASAN)
constexpr int programs = 600;
#else
constexpr int programs = 10000;
#endif

struct world {
  std::vector<place> pus;
  place machine;
  place sim;
  std::vector<int> host = std::vector<int>(64, 1);
};

// Builds a random program into `g`; returns how many node executions one run makes
// (counted into `ran`). `depth`: nesting level of this program (nested ones run inside
// a node, on the same PUs).
long build(graph& g, std::mt19937& rng, world& w, place const& where, int depth,
           std::atomic<long>& ran, std::vector<std::unique_ptr<graph>>& keep,
           std::vector<ptr<int, sim_space>>& device_memory) {
  int const nodes = 1 + static_cast<int>(rng() % 7);
  long expected = 0;
  std::vector<node_ref> refs;
  // An event one root completes and some later node waits for (roots never depend on
  // the waiter, and a waiting worker helps, so the root always gets to run).
  auto shared = std::make_shared<event>(event::pending());
  bool completer = false;
  for (int i = 0; i < nodes; ++i) {
    auto kind = rng() % 6;
    node_ref r;
    if (i == 0 || (kind == 0 && !completer)) {
      completer = true;
      r = g.add([&ran, shared] {
        ran++;
        shared->complete();
      });
      expected += 1;
    } else if (kind == 1 && depth < 4) {
      auto sub = std::make_unique<graph>();
      long const inner = build(*sub, rng, w, where, depth + 1, ran, keep, device_memory);
      graph* s = sub.get();
      keep.push_back(std::move(sub));
      // A nested wait: run a graph inside a node and wait for it.
      r = g.add([&ran, s, where] {
        ran++;
        run(*s, where).wait();
      });
      expected += 1 + inner;
    } else if (kind == 2) {
      r = g.add([&ran, shared] {
        ran++;
        shared->wait();
      });
      expected += 1;
    } else if (kind == 3) {
      // Spawned children, one waiting for the other.
      r = g.add([&ran](task_group& tg) {
        ran++;
        auto e = event::pending();
        tg.spawn([&ran, e] {
          ran++;
          e.wait();
        });
        tg.spawn([&ran, e] {
          ran++;
          e.complete();
        });
      });
      expected += 3;
    } else if (kind == 4) {
      auto dev = allocate<int, sim_space>(w.sim, w.host.size());
      device_memory.push_back(dev);
      bool const inside = rng() % 2;
      r = g.add(node_options(execution_kind::device), [&ran, &w, dev, inside]() -> event {
        ran++;
        auto e = copy(dev, ptr<int>(w.host.data(), 0), w.host.size());
        if (!inside) return e;
        e.wait();  // a nested wait on a device completion
        return event();
      });
      expected += 1;
    } else {
      r = g.add([&ran] { ran++; });
      expected += 1;
    }
    // Random edges from earlier nodes (a DAG).
    for (auto& earlier : refs)
      if (rng() % 3 == 0) earlier.precede(r);
    refs.push_back(r);
  }
  return expected;
}

TEST(RandomPrograms, AllFinishFromThreeThreads) {
  runtime rt({.sim_devices = "1:bw=50GB/s,lat=1us"});
  world w{rt.machine().descendants(place_type::pu), rt.machine(),
          rt.machine().slice(isa::sim).descendants(place_type::device).front()};
  std::atomic<int> done{0};
  std::atomic<int> wrong{0};
  auto worker = [&](int id) {
    for (int p = id; p < programs; p += 3) {
      std::mt19937 rng(static_cast<unsigned>(p) * 7919u + 17u);
      place where = rng() % 2 ? w.machine : w.pus[rng() % w.pus.size()];
      std::atomic<long> ran{0};
      std::vector<std::unique_ptr<graph>> keep;
      std::vector<ptr<int, sim_space>> device_memory;
      graph g;
      long const expected = build(g, rng, w, where, 0, ran, keep, device_memory);
      int const runs = 1 + static_cast<int>(rng() % 2);
      for (int r = 0; r < runs; ++r) {
        ran = 0;
        run(g, where).wait();
        if (ran.load() != expected) wrong++;
      }
      for (auto d : device_memory) deallocate(d);
      done++;
    }
  };
  std::promise<void> finished;
  auto f = finished.get_future();
  std::thread watchdog_target([&] {
    std::vector<std::thread> threads;
    for (int id = 0; id < 3; ++id) threads.emplace_back(worker, id);
    for (auto& t : threads) t.join();
    finished.set_value();
  });
  if (f.wait_for(std::chrono::seconds(100)) != std::future_status::ready) {
    std::fprintf(stderr, "HANG: random programs stopped after %d of %d\n", done.load(), programs);
    std::fflush(stderr);
    std::_Exit(3);
  }
  watchdog_target.join();
  EXPECT_EQ(done.load(), programs);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace strata
