// Session 31: hangs and unchecked input an outside probe of the installed exec and task
// layers found. Each test hangs or fails before its fix; a hang ends the binary with a
// message (support/hang_guard.hpp).
#include <gtest/gtest.h>

#include <strata/strata.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/hang_guard.hpp"

namespace strata {
namespace {

using testing_support::finishes_within;
constexpr auto limit = std::chrono::seconds(60);

// Passed by value: a host pointer in a struct is the test's business, not a sim pointer.
struct counter {
  std::atomic<int>* p;
};

// A sim kernel that launches on its own device after a dependency another thread
// completes: the deferred start queued the child behind its running parent (one kernel at
// a time), and the parent waited for it forever. The waiting unit runs it now.
TEST(Probe, SimChildLaunchedAfterAnotherThreadsEventRuns) {
  runtime rt({.sim_devices = "1"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  std::atomic<int> ran{0};
  finishes_within(limit, "a sim child after a gate", [&] {
    event gate = event::pending();
    std::thread opener([gate] {
      // Late enough that the parent's unit has parked in its wait.
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      gate.complete();
    });
    launch(
        sim0, grid(1),
        [](auto const&, event g, place me, counter c) {
          launch(
              after(g), me, grid(3), [](auto const&, counter k) { k.p->fetch_add(1); }, c)
              .wait();
        },
        gate, sim0, counter{&ran})
        .wait();
    opener.join();
  });
  EXPECT_EQ(ran.load(), 3);
}

// The same through a second device: a sim0 kernel waits for a sim1 kernel that launches on
// sim0 and waits.
TEST(Probe, SimChildLaunchedFromAnotherDevicesKernelRuns) {
  runtime rt({.sim_devices = "2"});
  auto sims = rt.machine().slice(isa::sim).descendants(place_type::device);
  std::atomic<int> ran{0};
  finishes_within(limit, "a sim child through another device", [&] {
    launch(
        sims[0], grid(1),
        [](auto const&, place me, place other, counter c) {
          launch(
              other, grid(1),
              [](auto const&, place back, counter k) {
                launch(
                    back, grid(1), [](auto const&, counter j) { j.p->fetch_add(1); }, k)
                    .wait();
              },
              me, c)
              .wait();
        },
        sims[0], sims[1], counter{&ran})
        .wait();
  });
  EXPECT_EQ(ran.load(), 1);
}

// An upload, then a child kernel after it, inside a sim kernel (the upload long enough
// that its copy engine, not the waiting unit, completes it).
TEST(Probe, SimChildAfterAnUploadInsideAKernelRuns) {
  runtime rt({.sim_devices = "1:bw=1GB/s"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  std::size_t const n = std::size_t{1} << 20;
  auto d = allocate<int, sim_space>(sim0, n);
  std::vector<int> host(n, 7);
  std::atomic<int> ran{0};
  struct args {
    ptr<int, sim_space> d;
    int* host;
    std::size_t n;
  };
  finishes_within(limit, "a sim child after an upload", [&] {
    launch(
        sim0, grid(1),
        [](auto const&, args a, place me, counter c) {
          auto up = copy(a.d, ptr<int>(a.host, 0), a.n);
          launch(
              after(up), me, grid(1), [](auto const&, counter k) { k.p->fetch_add(1); }, c)
              .wait();
        },
        args{d, host.data(), n}, sim0, counter{&ran})
        .wait();
  });
  EXPECT_EQ(ran.load(), 1);
  deallocate(d);
}

// Waiters run short transfers themselves and engines leave such transfers to polling
// waiters for a moment (src/exec/sim/device.cpp, help_engines, left_to_waiters): a
// transfer issued just after a wait, that nobody waits for, must still be taken by its
// engine and complete, on one PU too, and its data arrive whole. (Whether the engine's
// grace applies depends on how recently the wait polled: this checks the outcome, and
// that the grace is bounded, not that it was taken.)
TEST(Probe, ShortTransfersNobodyWaitsForCompleteAfterAWaiterPolled) {
  for (std::optional<std::string> topology :
       {std::optional<std::string>("synthetic:pack:1 core:1 pu:1"), std::optional<std::string>()}) {
    runtime rt({.topology = topology, .sim_devices = "2"});
    auto sims = rt.machine().slice(isa::sim).descendants(place_type::device);
    std::size_t const n = 4096;  // 32 KiB of doubles: short enough for a waiter's batch
    auto a = allocate<double, sim_space>(sims[0], n);
    auto b = allocate<double, sim_space>(sims[1], n);
    std::vector<double> host(n), back(n);
    finishes_within(limit, "short transfers after a wait", [&] {
      for (int round = 0; round < 50; ++round) {
        for (std::size_t i = 0; i < n; ++i) host[i] = round * 10000.0 + double(i);
        copy(a, ptr<double>(host.data(), 0), n).wait();  // a waiter polls the hook
        event moved = copy(b, a, n);                     // nobody waits for it ...
        while (!moved.ready()) std::this_thread::sleep_for(std::chrono::microseconds(50));
        event down = copy(ptr<double>(back.data(), 0), b, n);  // ... nor for this one
        while (!down.ready()) std::this_thread::sleep_for(std::chrono::microseconds(50));
        down.wait();
        ASSERT_EQ(back, host) << "round " << round << " topology '"
                              << topology.value_or("this machine") << "'";
      }
    });
    deallocate(a);
    deallocate(b);
  }
}

#if defined(_OPENMP)
// Every pool worker runs a graph node that launches an openmp-backend kernel whose team
// threads wait for Strata work (a graph run, a launch on the last PU). The workers sat in
// the region's closing barrier, and nobody ran that work.
TEST(Probe, OpenMPTeamsWaitingForStrataWorkInsideGraphNodesFinish) {
  runtime rt({.topology = "synthetic:pack:1 core:2 pu:1"});
  auto m = rt.machine();
  place last = m.descendants(place_type::pu).back();
  std::atomic<int> count{0};
  finishes_within(limit, "openmp kernels waiting inside graph nodes", [&] {
    for (int variant = 0; variant < 2; ++variant)
      for (int rep = 0; rep < 10; ++rep) {
        graph g;
        for (int i = 0; i < 2; ++i)
          g.emplace([&, variant] {
            launch_and_wait(
                on(m, backend_id::openmp), grid(2),
                [](auto const&, int v, place where, counter c) {
                  if (v == 0) {
                    graph inner;
                    inner.emplace([c] { c.p->fetch_add(1); });
                    run(inner).wait();
                  } else {
                    launch(
                        where, grid(1), [](auto const&, counter k) { k.p->fetch_add(1); }, c)
                        .wait();
                  }
                },
                variant, last, counter{&count});
          });
        run(g).wait();
      }
  });
  EXPECT_EQ(count.load(), 2 * 10 * 2 * 2);
}
#endif

// A scratchpad request whose byte count wraps (n * sizeof(T)) was granted 8 bytes.
TEST(Probe, AScratchpadRequestThatWrapsIsRefused) {
  runtime rt;
  for (auto b : {backend_id::serial, backend_id::threads}) {
    auto e = launch(on(rt.machine(), b), grid(1).block(parallel, 2).scratchpad(64),
                    [](auto const& self) {
                      auto n = std::numeric_limits<std::size_t>::max() / sizeof(double) + 2;
                      double* p = self.block().template scratchpad<double>(n);
                      p[0] = 1;  // never reached
                    });
    EXPECT_THROW(e.wait(), invalid_argument) << to_string(b);
  }
}

// A shape scratchpad the host cannot hold reached wait() as a bare std::bad_alloc.
TEST(Probe, AScratchpadTheHostCannotHoldIsNamed) {
#if defined(STRATA_TSAN) || defined(STRATA_ASAN)
  GTEST_SKIP() << "the sanitizers' allocators end the process on a request beyond 1 TiB";
#endif
  runtime rt;
  auto e = launch(on(rt.machine(), backend_id::threads),
                  grid(1).block(parallel, 2).scratchpad(std::size_t{1} << 60),
                  [](auto const& self) { self.block().template scratchpad<char>(1)[0] = 1; });
  try {
    e.wait();
    FAIL() << "expected out_of_memory";
  } catch (out_of_memory const& x) {
    EXPECT_NE(std::string(x.what()).find("1152921504606846976 bytes"), std::string::npos)
        << x.what();
  }
}

// Problems near the index range overflowed divide_work's rounding (a negative grid).
TEST(Probe, DivideWorkRefusesProblemsItCannotRoundUp) {
  runtime rt;
  auto m = rt.machine();
  auto const big = std::numeric_limits<index_t>::max();
  EXPECT_THROW(divide_work(m, big), invalid_argument);
  EXPECT_THROW(divide_work(m, big - 15), invalid_argument);
  EXPECT_THROW(divide_work(m, vec<2>{3, big / 2}), invalid_argument);
  EXPECT_NO_THROW(divide_work(m, vec<2>{1000, index_t{1} << 40}));
}

}  // namespace
}  // namespace strata
