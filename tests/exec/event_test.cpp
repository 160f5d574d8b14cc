// Events' continuations and joins (src/exec/event.cpp, include/strata/exec/
// inline_function.hpp): order, errors, ownership and races of `then` and `when_all`.
#include <gtest/gtest.h>

#include <strata/strata.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace strata {
namespace {

using detail::continuation;
using detail::inline_function;

// Counts the live copies of itself, to show that what a callable captured dies exactly once.
struct tracked {
  explicit tracked(std::atomic<int>& live) : live(&live) { ++live; }
  tracked(tracked const& o) noexcept : live(o.live) { ++*live; }
  tracked(tracked&& o) noexcept : live(o.live) { ++*live; }
  ~tracked() { --*live; }
  std::atomic<int>* live;
};

TEST(InlineFunction, SmallCapturesStayInPlaceAndLargeOnesGoToTheHeap) {
  std::atomic<int> live{0};
  auto owner = std::make_shared<int>(7);
  int out = 0;
  auto small = [owner, &out, t = tracked(live)] { out += *owner; };
  std::array<char, 200> big_payload{};
  big_payload[199] = 3;
  auto big = [big_payload, &out, t = tracked(live)] { out += big_payload[199]; };
  static_assert(continuation::fits<decltype(small)>);
  static_assert(!continuation::fits<decltype(big)>);
  {
    continuation a(std::move(small)), b(std::move(big));
    EXPECT_TRUE(a && b);
    continuation c(std::move(a)), d;
    d = std::move(b);
    EXPECT_FALSE(a);  // moved from: empty
    EXPECT_FALSE(b);
    c();
    d();
    EXPECT_EQ(out, 10);
    EXPECT_EQ(owner.use_count(), 2);  // `c` holds it (`small` was moved from)
  }
  EXPECT_EQ(owner.use_count(), 1);
  EXPECT_EQ(live.load(), 2);  // the moved-from lambdas' own members
}

TEST(InlineFunction, EmptyOnesThrowBadFunctionCallAndOthersPassArguments) {
  continuation empty;
  EXPECT_FALSE(empty);
  EXPECT_THROW(empty(), std::bad_function_call);
  continuation from_empty{std::function<void()>()};
  EXPECT_FALSE(from_empty);
  EXPECT_THROW(from_empty(), std::bad_function_call);
  inline_function<int(int, std::unique_ptr<int>), 16> add = [](int a, std::unique_ptr<int> b) {
    return a + *b;
  };
  EXPECT_EQ(add(2, std::make_unique<int>(40)), 42);
  add.reset();
  EXPECT_FALSE(add);
}

// Moving into a function the continuation that owns the source (a review found the source
// freed before it was read: the old callable was destroyed first).
TEST(InlineFunction, MoveAssignmentFromSomethingTheOldCallableOwns) {
  int hit = 0;
  auto inner = std::make_unique<continuation>([&hit] { ++hit; });
  continuation* owned = inner.get();
  continuation f([keep = std::move(inner)] {});
  f = std::move(*owned);
  f();
  EXPECT_EQ(hit, 1);
}

// `then` takes any callable, as with std::function: one that returns a value too.
TEST(Events, ThenTakesCallablesThatReturnAValue) {
  auto e = event::pending();
  int x = 0;
  e.then([&x] { return ++x; });
  inline_function<int(int), 16> twice = [](int v) { return 2 * v; };
  EXPECT_EQ(twice(21), 42);
  e.complete();
  EXPECT_EQ(x, 1);
}

// An empty continuation fails where it stands (logged) and takes no other's place.
TEST(Events, EmptyContinuationsFailAloneAndTheOthersRunInOrder) {
  auto e = event::pending();
  std::vector<int> order;
  e.then(std::function<void()>());
  e.then([&order] { order.push_back(1); });
  e.then(std::function<void()>());
  e.then([&order] { order.push_back(2); });
  e.complete();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_THROW(e.then(std::function<void()>()), std::bad_function_call);  // complete: runs now
}

TEST(Events, ContinuationsRunOnceInTheOrderTheyWereAdded) {
  auto e = event::pending();
  std::vector<int> order;
  for (int i = 0; i < 5; ++i) e.then([&order, i] { order.push_back(i); });
  e.complete();
  e.complete();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  e.then([&order] { order.push_back(5); });  // complete: runs now
  EXPECT_EQ(order.size(), 6u);
}

// The join fails with the first failure in the order of its parts, whichever completes
// first, for joins of two parts (errors kept in the join) and of many (on the heap).
TEST(Events, AJoinFailsWithTheFirstFailureInItsPartsOrder) {
  for (std::size_t n : {2u, 3u, 4u, 5u, 9u}) {
    std::vector<event> parts;
    for (std::size_t i = 0; i < n; ++i) parts.push_back(event::pending());
    auto all = when_all(after(parts));
    // Complete from the last to the first; parts 1 and n - 1 fail.
    for (std::size_t i = n; i-- > 0;) {
      EXPECT_FALSE(all.ready()) << n;
      if (i == 1 || i == n - 1)
        parts[i].complete(std::make_exception_ptr(std::runtime_error(std::to_string(i))));
      else
        parts[i].complete();
    }
    ASSERT_TRUE(all.ready());
    try {
      all.wait();
      FAIL() << n;
    } catch (std::runtime_error const& e) {
      EXPECT_STREQ(e.what(), "1") << n;
    }
  }
  // A part that had already failed when the join was made, and one still pending.
  auto failed = event::failed(std::make_exception_ptr(std::logic_error("early")));
  auto pending = event::pending();
  auto all = when_all(after(pending, failed, event::completed()));
  EXPECT_FALSE(all.ready());
  pending.complete();
  EXPECT_THROW(all.wait(), std::logic_error);
}

// Parts complete on other threads while the join is being made (between its count of
// pending parts and its registration on each): it completes once, after all of them.
TEST(Events, AJoinOfPartsCompletingWhileItIsMadeCompletesOnceAfterAll) {
  runtime rt;
  for (int round = 0; round < 300; ++round) {
    std::array<event, 4> parts{event::pending(), event::pending(), event::pending(),
                               event::pending()};
    std::atomic<int> done{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> completers;
    for (std::size_t i = 0; i < parts.size(); ++i)
      completers.emplace_back([&, i] {
        while (!go.load(std::memory_order_acquire)) {
        }
        done.fetch_add(1);
        if (i == 2)
          parts[i].complete(std::make_exception_ptr(std::runtime_error("two")));
        else
          parts[i].complete();
      });
    go.store(true, std::memory_order_release);
    auto all = when_all(after(parts[0], parts[1], parts[2], parts[3]));
    int runs = 0;
    all.then([&] {
      ++runs;
      EXPECT_EQ(done.load(), 4);
    });
    EXPECT_THROW(all.wait(), std::runtime_error);
    for (auto& t : completers) t.join();
    EXPECT_EQ(runs, 1);
  }
}

// A join does not keep its parts alive, and a part that can never complete (every handle
// gone) frees the join with it: nothing leaks through the continuation between them.
TEST(Events, AJoinNeitherKeepsItsPartsNorOutlivesAPartThatCannotComplete) {
  std::weak_ptr<detail::event_state> join_watch, part_watch;
  {
    auto done = event::pending();
    auto never = event::pending();
    auto all = when_all(after(done, never));
    join_watch = all.watch();
    part_watch = never.watch();
    done.complete();
    EXPECT_FALSE(all.ready());
  }
  EXPECT_TRUE(part_watch.expired());
  EXPECT_TRUE(join_watch.expired());
}

}  // namespace
}  // namespace strata
