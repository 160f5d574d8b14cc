// Issue 21: crashes, use-after-free and hangs found when the exec and memory layers were
// tried as a new user would. Each test fails (crashes, hangs or reads wrong data) before
// its fix; a hang ends the binary with a message (support/hang_guard.hpp).
#include <gtest/gtest.h>

#include <strata/strata.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/hang_guard.hpp"

namespace strata {
namespace {

using testing_support::finishes_within;
constexpr auto limit = std::chrono::seconds(60);

#if defined(STRATA_TSAN) || defined(STRATA_ASAN)
constexpr int chain_length = 20000;
#else
constexpr int chain_length = 50000;
#endif

// Defect 1: host copies under 1 MiB run inline and complete at once; a chain of them
// waiting on one gate used to start each copy inside the completion of the one before,
// one stack frame per copy, and crashed.
TEST(Hardening, ChainedSmallCopiesDoNotGrowTheStack) {
  runtime rt;
  finishes_within(limit, "a chain of small copies", [&] {
    std::vector<int> a(4), b(4);
    a = {1, 2, 3, 4};
    auto gate = event::pending();
    event last = gate;
    for (int i = 0; i < chain_length; ++i) {
      auto& from = i % 2 ? b : a;
      auto& to = i % 2 ? a : b;
      last = copy(after(last), ptr<int>(to.data(), 0), ptr<int>(from.data(), 0), 4);
    }
    gate.complete();
    last.wait();
    EXPECT_EQ(b, (std::vector<int>{1, 2, 3, 4}));
  });
}

TEST(Hardening, ChainedSmallCopiesThroughAQueueDoNotGrowTheStack) {
  runtime rt;
  finishes_within(limit, "a queue of small copies", [&] {
    std::vector<int> a{1, 2, 3, 4}, b(4);
    queue q(rt.machine());
    auto gate = event::pending();
    // The first operation holds the queue until the gate opens; every copy piles up.
    q.launch(grid(1), [gate](auto const&) { gate.wait(); });
    for (int i = 0; i < chain_length; ++i) {
      auto& from = i % 2 ? b : a;
      auto& to = i % 2 ? a : b;
      q.copy(ptr<int>(to.data(), 0), ptr<int>(from.data(), 0), 4);
    }
    gate.complete();
    q.wait();
    EXPECT_EQ(b, (std::vector<int>{1, 2, 3, 4}));
  });
}

// Host copies of at most 4 KiB after their dependencies start in the completing thread,
// a few levels deep (launch.hpp's start_after `small`). Two users build chains at once,
// of uneven sizes on both sides of that bound (4 B, 400 B: started inline; 4,400 B: by
// a job), each copy moving the start of one slot into the next: a copy that started
// before the one it depends on leaves a zero behind. The gates open from a third thread,
// so the chains complete inside another thread's continuations.
TEST(Hardening, SmallCopyChainsOpenedByAnotherThreadKeepTheirOrder) {
  runtime rt;
  constexpr int links = chain_length / 10;
  static constexpr std::size_t width[] = {1, 100, 1100};  // ints per copy, in turn
  constexpr std::size_t slot = 1100;                      // ints per slot
  finishes_within(limit, "small copy chains opened by another thread", [&] {
    std::vector<event> gates{event::pending(), event::pending()};
    std::vector<std::vector<int>> slots(2);
    std::vector<event> ends(2);
    std::vector<std::thread> users;
    for (int u = 0; u < 2; ++u)
      users.emplace_back([&, u] {
        slots[u].assign((links + 1) * slot, 0);
        slots[u][0] = 42 + u;
        event last = gates[u];
        for (int i = 0; i < links; ++i) {
          std::size_t const at = static_cast<std::size_t>(i) * slot;
          last = copy(after(last), ptr<int>(slots[u].data() + at + slot, 0),
                      ptr<int>(slots[u].data() + at, 0), width[i % 3]);
        }
        ends[u] = last;
      });
    for (auto& t : users) t.join();
    std::thread opener([&] {
      gates[0].complete();
      gates[1].complete();
    });
    wait_all({ends[0], ends[1]});
    opener.join();
    for (int u = 0; u < 2; ++u)
      for (int i = 0; i <= links; ++i)
        ASSERT_EQ(slots[u][static_cast<std::size_t>(i) * slot], 42 + u)
            << "user " << u << ", slot " << i;
  });
}

std::atomic<int> kernel_runs{0};

struct write_sevens {
  template <class Self>
  void operator()(Self const& self, int* d) const {
    for (auto i : self.elements()) d[i] = 7;
    kernel_runs.fetch_add(1);
  }
};

// Defect 2: work issued with after(e) is queued on the device only when e completes; a
// free before that returned at once and the kernel later wrote into the freed block.
TEST(Hardening, FreeingSimMemoryWaitsForWorkStillWaitingForItsDependencies) {
  runtime rt({.sim_devices = "1"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  finishes_within(limit, "a free behind pending work", [&] {
    kernel_runs = 0;
    auto d = allocate<int, sim_space>(sim0, 1024);
    auto gate = event::pending();
    auto k = launch(after(gate), sim0, grid(4).elements(256), write_sevens{}, d);
    std::thread opener([gate] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gate.complete();
    });
    deallocate(d);  // must not return before the kernel that names `d` has run
    EXPECT_EQ(kernel_runs.load(), 4);
    EXPECT_TRUE(k.ready());
    opener.join();
    k.wait();
  });
}

// Defect 2, the same for a sim arena's reset(): its memory is handed out again only after
// the work naming it has run.
TEST(Hardening, ResettingASimArenaWaitsForWorkStillWaitingForItsDependencies) {
  runtime rt({.sim_devices = "1"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  finishes_within(limit, "an arena reset behind pending work", [&] {
    kernel_runs = 0;
    arena<sim_space> a(sim0, 1 << 16);
    auto d = a.allocate<int>(1024);
    auto gate = event::pending();
    auto k = launch(after(gate), sim0, grid(4).elements(256), write_sevens{}, d);
    std::thread opener([gate] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gate.complete();
    });
    a.reset();
    EXPECT_EQ(kernel_runs.load(), 4);
    opener.join();
    k.wait();
  });
}

// What a free waits for is work that can still run: an operation whose dependency was
// dropped unfinished (every handle gone) can never run, and must not hold frees forever.
TEST(Hardening, AnAbandonedSimOperationDoesNotHoldFreesForever) {
  runtime rt({.sim_devices = "1"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  finishes_within(limit, "a free after an abandoned operation", [&] {
    auto d = allocate<int, sim_space>(sim0, 64);
    {
      auto never = event::pending();
      launch(after(never), sim0, grid(1), write_sevens{}, d);
    }
    deallocate(d);
  });
}

// Defect 3: a sim kernel that launches on its own device and waits used to hang (one
// kernel at a time per device). The nested kernel runs (as a child grid would).
TEST(Hardening, SimKernelLaunchesOnItsOwnDeviceAndWaits) {
  runtime rt({.sim_devices = "1"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  finishes_within(limit, "nested launch on the same sim device", [&] {
    auto d = allocate<int, sim_space>(sim0, 64);
    launch(
        sim0, grid(1),
        [sim0](auto const&, int* p) {
          launch(sim0, grid(2).elements(32), write_sevens{}, p).wait();
          p[0] += 1;
        },
        d)
        .wait();
    std::vector<int> back(64);
    copy(ptr<int>(back.data(), 0), d, 64).wait();
    EXPECT_EQ(back[0], 8);
    EXPECT_EQ(back[63], 7);
    deallocate(d);
  });
}

// Defect 4: a pool worker freeing sim memory blocked without helping, while the device's
// running kernel waited for work only that worker's PU could run.
TEST(Hardening, WorkerFreeingSimMemoryHelpsTheWorkTheDeviceWaitsFor) {
  runtime rt({.sim_devices = "1"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  auto pu = rt.machine().descendants(place_type::pu).back();
  finishes_within(limit, "a worker's free while the device waits for its PU", [&] {
    auto d = allocate<int, sim_space>(sim0, 64);
    std::atomic<bool> freeing{false};
    auto device_work = launch(sim0, grid(1), [&freeing, pu](auto const&) {
      while (!freeing.load()) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the free is waiting
      launch(pu, grid(1), [](auto const&) {}).wait();  // needs the PU of the freeing worker
    });
    launch(pu, grid(1), [&freeing, d](auto const&) {
      freeing = true;
      deallocate(d);
    }).wait();
    device_work.wait();
  });
}

// Defect 5: a waiter for a long sim transfer must not delay a tiny kernel launched on the
// first PU meanwhile (it used to sleep until the transfer's expected end).
TEST(Hardening, WaitingForALongTransferDoesNotDelayOtherWork) {
  runtime rt({.sim_devices = "1:bw=100MB/s,lat=10us"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  auto first = rt.machine().descendants(place_type::pu).front();
  std::vector<char> host(std::size_t{20} << 20);  // 200 ms over the modeled link
  auto d = allocate<char, sim_space>(sim0, host.size());
  auto transfer = copy(d, ptr<char>(host.data(), 0), host.size());
  std::thread waiter([&] { transfer.wait(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the waiter is asleep
  launch(first, grid(1), [](auto const&) {}).wait();
  // Not a timing bound: the order of two events 200 ms apart.
  EXPECT_FALSE(transfer.ready()) << "the tiny kernel waited for the whole transfer";
  waiter.join();
  deallocate(d);
}

[[maybe_unused]] double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

#if !defined(STRATA_TSAN) && !defined(STRATA_ASAN)
// Defect 6: while somebody waits for a first-PU launch, no thread may poll: a kernel that
// sleeps 50 ms must cost (nearly) no CPU. The bound is loose (the busy loop cost 40 ms).
TEST(Hardening, WaitingForAFirstPuLaunchDoesNotSpin) {
  runtime rt;
  auto first = rt.machine().descendants(place_type::pu).front();
  // Every worker started (a launch over the whole machine) and parked again: on a machine
  // with many PUs, workers still starting (binding, first spin) would be counted below.
  launch(rt.machine(), grid(256), [](auto const&) {}).wait();
  launch(first, grid(1), [](auto const&) {}).wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto c0 = cpu_seconds();
  launch(first, grid(1), [](auto const&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }).wait();
  double const used = cpu_seconds() - c0;
  RecordProperty("cpu_seconds", std::to_string(used));
  EXPECT_LT(used, 0.015) << "threads used " << used * 1e3 << " ms of CPU during a 50 ms sleep";
}
#endif

// Defect 7: an argument error thrown at submission must reject that call only; the queue
// keeps working.
TEST(Hardening, ARejectedCallDoesNotPoisonTheQueue) {
  runtime rt;
  queue q(rt.machine());
  buffer<int> a(rt.machine(), 8), b(rt.machine(), 9);
  for (int i = 0; i < 8; ++i) a(i) = i;
  EXPECT_THROW(q.copy(b, a), invalid_argument);  // extents differ
  buffer<int> c(rt.machine(), 8);
  EXPECT_NO_THROW(q.copy(c, a).wait());
  EXPECT_EQ(c(7), 7);
  EXPECT_NO_THROW(q.wait());
}

// Defect 8: a dependency that fails or never completes: the result completes (failed) or
// keeps nothing alive beyond the dependency.
TEST(Hardening, ResultsOfOperationsAfterAFailedDependencyFail) {
  runtime rt;
  auto gate = event::pending();
  std::vector<int> a(4, 1), b(4);
  auto c = copy(after(gate), ptr<int>(b.data(), 0), ptr<int>(a.data(), 0), 4);
  auto k = launch(after(gate), rt.machine(), grid(1), [](auto const&) {});
  gate.complete(std::make_exception_ptr(std::runtime_error("dependency failed")));
  EXPECT_THROW(c.wait(), std::runtime_error);
  EXPECT_THROW(k.wait(), std::runtime_error);
}

struct big_capture {
  std::shared_ptr<int> alive;
  template <class Self>
  void operator()(Self const&) const {}
};

TEST(Hardening, AnAbandonedDependencyDoesNotLeakWhatWaitsForIt) {
  runtime rt;
  auto alive = std::make_shared<int>(1);
  std::weak_ptr<int> watch = alive;
  {
    auto never = event::pending();
    auto other = event::pending();
    // Two dependencies (when_all) and a deferred launch capturing `alive`.
    auto k = launch(after(never, other), rt.machine(), grid(1), big_capture{std::move(alive)});
    other.complete();
  }  // every handle to `never` and to the launch's result is gone
  EXPECT_TRUE(watch.expired()) << "a reference cycle keeps the kernel's captures alive";
}

}  // namespace
}  // namespace strata
