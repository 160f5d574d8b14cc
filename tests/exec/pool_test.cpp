// The threads backend's pool: shutdown with pending work, work confined to one PU,
// continuations that throw, fibers abandoned early. Regressions from a review.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "exec/backends.hpp"

namespace strata {
namespace {

using namespace std::chrono_literals;

bool ready_within(event const& e, std::chrono::milliseconds limit) {
  auto t0 = std::chrono::steady_clock::now();
  while (!e.ready() && std::chrono::steady_clock::now() - t0 < limit)
    std::this_thread::sleep_for(1ms);
  return e.ready();
}

TEST(Pool, RuntimeShutdownRunsPendingQueueWork) {
  std::atomic<int> hits{0};
  {
    runtime rt;
    queue q(rt.machine());
    for (int i = 0; i < 4; ++i)
      q.launch(grid(4), [&hits](auto const&) {
        std::this_thread::sleep_for(2ms);
        hits++;
      });
  }  // no wait: the runtime drains before it ends
  EXPECT_EQ(hits.load(), 16);
}

TEST(Pool, WorkConfinedToEachProcessorProgressesWithoutAWaiter) {
  runtime rt;
  for (auto const& pu : rt.machine().slice(isa::host).processors()) {
    auto e = launch(pu, grid(4), [](auto const&) {});
    EXPECT_TRUE(ready_within(e, 5000ms)) << pu << ": nobody ran it";
    e.wait();
  }
}

TEST(Pool, NestedLaunchOnTheFirstProcessorFromAWorker) {
  runtime rt;
  auto pus = rt.machine().slice(isa::host).processors();
  if (pus.size() < 2) GTEST_SKIP() << "needs two processors";
  std::atomic<bool> inner_done{false};
  auto outer = launch(pus.back(), grid(1), [&](auto const&) {
    launch(pus.front(), grid(1), [](auto const&) {}).wait();
    inner_done = true;
  });
  EXPECT_TRUE(ready_within(outer, 5000ms)) << "the worker waited forever for the first PU";
  outer.wait();
  EXPECT_TRUE(inner_done.load());
}

TEST(Pool, AThrowingContinuationDoesNotStrandOthers) {
  runtime rt;
  auto gate = event::pending();
  gate.then([] { throw std::runtime_error("continuation"); });
  int ran = 0;
  auto later = launch(after(gate), rt.machine(), grid(1), [&ran](auto const&) { ++ran; });
  std::thread opener([gate] { gate.complete(); });
  opener.join();
  later.wait();
  EXPECT_EQ(ran, 1);
}

TEST(Pool, LongAfterChainsOnInlineBackendsDoNotRecurse) {
  runtime rt;
  auto gate = event::pending();
  auto where = on(rt.machine(), backend_id::serial);
  event last = gate;
  int count = 0;
  for (int i = 0; i < 20000; ++i)
    last = launch(after(last), where, grid(1), [&count](auto const&) { ++count; });
  gate.complete();  // 20000 launches become ready at once
  last.wait();
  EXPECT_EQ(count, 20000);
}

class FiberEdges : public test::on_every_backend {};

TEST_P(FiberEdges, ThrowBeforeTheFirstBarrier) {
  for (int thrower : {0, 3}) {
    auto e = launch(here(), grid(2).block(parallel, 4), [thrower](auto const& self) {
      if (self.block().linear_index() == thrower) throw std::runtime_error("early");
      self.block().barrier();
      self.block().barrier();
    });
    EXPECT_THROW(e.wait(), std::runtime_error);
  }
}

TEST_P(FiberEdges, KernelSwallowingCancellationStillEnds) {
  auto e = launch(here(), grid(1).block(parallel, 4), [](auto const& self) {
    if (self.block().linear_index() == 2) throw std::runtime_error("boom");
    for (int i = 0; i < 3; ++i) {
      try {
        self.block().barrier();
      } catch (...) {  // a kernel that catches everything, cancellation included
      }
    }
  });
  EXPECT_THROW(e.wait(), std::runtime_error);
}

INSTANTIATE_TEST_SUITE_P(Cpu, FiberEdges, testing::ValuesIn(test::cpu_backends()),
                         test::backend_name);

}  // namespace
}  // namespace strata
