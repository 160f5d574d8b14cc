// The Chase-Lev deque alone: order, growth, and every element taken exactly once while
// thieves race the owner (run under ThreadSanitizer too).
#include <gtest/gtest.h>

#include <strata/task/deque.hpp>

#include <atomic>
#include <thread>
#include <vector>

namespace strata::task {
namespace {

#if defined(STRATA_TSAN)
constexpr int scale = 20;  // TSan runs ~10x slower: fewer elements, same races
#else
constexpr int scale = 1;
#endif

TEST(Deque, OwnerIsLifoThievesAreFifoAndItGrows) {
  ws_deque<int*> q(4);
  std::vector<int> items(100);
  for (auto& i : items) q.push(&i);
  EXPECT_GE(q.capacity(), 100u);
  EXPECT_EQ(q.size(), 100);
  EXPECT_EQ(q.pop(), &items[99]);
  EXPECT_EQ(q.steal(), &items[0]);
  EXPECT_EQ(q.steal(), &items[1]);
  EXPECT_EQ(q.pop(), &items[98]);
  while (q.pop()) {
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.pop(), nullptr);
  EXPECT_EQ(q.steal(), nullptr);
}

TEST(Deque, EveryElementTakenOnceUnderContention) {
  int const n = 200000 / scale;
  std::vector<int> items(static_cast<std::size_t>(n));
  std::vector<std::atomic<int>> taken(static_cast<std::size_t>(n));
  ws_deque<int*> q(2);  // small, so that it grows while thieves read it
  std::atomic<bool> done{false};
  std::atomic<long> stolen{0};
  auto take = [&](int* p) { taken[static_cast<std::size_t>(p - items.data())].fetch_add(1); };
  std::vector<std::thread> thieves;
  for (int t = 0; t < 3; ++t)
    thieves.emplace_back([&] {
      while (!done.load(std::memory_order_acquire) || !q.empty())
        if (int* p = q.steal()) {
          take(p);
          stolen.fetch_add(1, std::memory_order_relaxed);
        }
    });
  // The owner pushes in bursts and pops some back, racing the thieves for the last one.
  for (int i = 0; i < n;) {
    for (int k = 0; k < 7 && i < n; ++k, ++i) q.push(&items[static_cast<std::size_t>(i)]);
    for (int k = 0; k < 3; ++k)
      if (int* p = q.pop()) take(p);
  }
  while (int* p = q.pop()) take(p);
  done.store(true, std::memory_order_release);
  for (auto& t : thieves) t.join();
  for (int i = 0; i < n; ++i) ASSERT_EQ(taken[static_cast<std::size_t>(i)].load(), 1) << i;
}

}  // namespace
}  // namespace strata::task
