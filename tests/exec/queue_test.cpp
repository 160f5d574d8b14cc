// Queue features of issue 21 (Alpaka §3.4.5 queues and events): blocking queues, fill and
// memset on queues, a queue operation that waits for an event, and timed waits.
#include <gtest/gtest.h>

#include <strata/strata.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>
#include <vector>

namespace strata {
namespace {

using namespace std::chrono_literals;

TEST(Queues, ABlockingQueueCompletesEachOperationBeforeReturning) {
  runtime rt;
  queue q(rt.machine(), queue_mode::blocking);
  EXPECT_EQ(q.mode(), queue_mode::blocking);
  std::atomic<int> ran{0};
  auto e = q.launch(grid(2), [&ran](auto const&) {
    std::this_thread::sleep_for(5ms);
    ran.fetch_add(1);
  });
  EXPECT_TRUE(e.ready());
  EXPECT_EQ(ran.load(), 2);
  // A kernel's exception reaches the call itself.
  EXPECT_THROW(q.launch(grid(1), [](auto const&) { throw std::runtime_error("kernel"); }),
               std::runtime_error);
}

TEST(Queues, FillAndMemsetRunInTheQueuesOrder) {
  runtime rt({.sim_devices = "1:bw=1GB/s,lat=10us"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  buffer<int, 1, sim_space> d(sim0, 1000);
  std::vector<int> a(1000, -1), b(1000, -1);
  queue q(sim0);
  q.fill(d, 5);
  q.copy(ptr<int>(a.data(), 0), d.data(), 1000);
  q.memset(d, 0);
  q.copy(ptr<int>(b.data(), 0), d.data(), 1000);
  q.wait();
  for (std::size_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(a[i], 5) << i;
    ASSERT_EQ(b[i], 0) << i;
  }
}

TEST(Queues, AnOperationWaitingForAnEventHoldsTheLaterOnes) {
  runtime rt;
  queue q(rt.machine());
  auto gate = event::pending();
  std::atomic<bool> ran{false};
  q.enqueue_wait(gate);
  auto k = q.launch(grid(1), [&ran](auto const&) { ran = true; });
  std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(ran.load());
  EXPECT_FALSE(k.ready());
  gate.complete();
  q.wait();
  EXPECT_TRUE(ran.load());

  // A failed event fails what comes after it in the queue.
  auto bad = event::pending();
  q.enqueue_wait(bad);
  auto later = q.launch(grid(1), [](auto const&) {});
  bad.complete(std::make_exception_ptr(std::runtime_error("producer failed")));
  EXPECT_THROW(later.wait(), std::runtime_error);
}

TEST(Events, TimedWaitsReturnAtTheDeadlineOrAtCompletion) {
  runtime rt;
  auto e = event::pending();
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(e.wait_for(20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  std::thread producer([e] {
    std::this_thread::sleep_for(5ms);
    e.complete();
  });
  EXPECT_TRUE(e.wait_for(60s));
  producer.join();
  EXPECT_TRUE(event::completed().wait_for(0s));
  auto failed = event::failed(std::make_exception_ptr(std::runtime_error("x")));
  EXPECT_THROW(failed.wait_for(1s), std::runtime_error);

  // Timeouts beyond the clock's range wait (now + hours::max() overflowed into the past
  // and returned false at once); zero, negative and NaN ones only look.
  auto later = event::pending();
  std::thread completer([later] {
    std::this_thread::sleep_for(30ms);
    later.complete();
  });
  EXPECT_TRUE(later.wait_for(std::chrono::hours::max()));
  completer.join();
  auto again = event::pending();
  std::thread completer2([again] {
    std::this_thread::sleep_for(30ms);
    again.complete();
  });
  EXPECT_TRUE(again.wait_for(std::chrono::duration<double>(1e300)));
  completer2.join();
  auto open = event::pending();
  EXPECT_FALSE(open.wait_for(std::chrono::hours::min()));
  EXPECT_FALSE(open.wait_for(-1s));
  EXPECT_FALSE(open.wait_for(std::chrono::duration<double>(std::nan(""))));
  open.complete();

  // Inside a task, a timed wait helps and then gives up.
  std::atomic<int> outcome{-1};
  graph g;
  g.emplace([&outcome] {
    auto never = event::pending();
    outcome = never.wait_for(5ms) ? 1 : 0;
  });
  run(g).wait();
  EXPECT_EQ(outcome.load(), 0);
}

}  // namespace
}  // namespace strata
