// Launch targets, events and their errors.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "exec/backends.hpp"
#include "machine/example_machines.hpp"

namespace strata {
namespace {

TEST(Launch, NeedsARuntime) {
  EXPECT_THROW(launch(test::phalanx_fig1(), grid(1), [](auto const&) {}), error);
}

TEST(Launch, DefaultBackendIsThreadsAndConfigurable) {
  {
    runtime rt;
    EXPECT_EQ(rt.default_cpu_backend(), backend_id::threads);
  }
  runtime rt({.cpu_backend = backend_id::serial});
  EXPECT_EQ(rt.default_cpu_backend(), backend_id::serial);
  int hits = 0;
  launch(rt.machine(), grid(10), [&hits](auto const&) { ++hits; }).wait();  // serial: no race
  EXPECT_EQ(hits, 10);
}

TEST(Launch, BadTargetsAreClearErrors) {
  runtime rt({.sim_devices = "1"});
  auto m = rt.machine();
  auto noop = [](auto const&) {};
  EXPECT_THROW(launch(place{}, grid(1), noop), invalid_argument);
  EXPECT_THROW(launch(test::phalanx_fig1(), grid(1), noop), invalid_argument);
  EXPECT_THROW(launch(m.memories().front(), grid(1), noop), invalid_argument);
  EXPECT_THROW(launch(on(m.slice(isa::sim), backend_id::threads), grid(1), noop), invalid_argument);
  try {
    launch(on(m.slice(isa::host), backend_id::sim), grid(1), noop);
    FAIL();
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("runs on sim devices"), std::string::npos) << e.what();
  }
}

// launch(after(e), ...) checks the call when it is made, as a launch without `after`
// does: a pointer of another memory and an oversized parallel block throw in the caller
// (session 63; before, they failed the event when `e` completed).
TEST(Launch, ArgumentErrorsAfterAPendingEventThrowInTheCaller) {
  runtime rt({.sim_devices = "1"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  auto d = allocate<int, sim_space>(sim0, 4);
  auto gate = event::pending();
  int ran = 0;
  auto count = [&ran](auto const&, int*) { ++ran; };
  for (auto b : test::cpu_backends()) {
    auto where = on(rt.machine().slice(isa::host), b);
    try {
      (void)launch(after(gate), where, grid(1), count, d);
      FAIL() << "a sim pointer on the host was accepted";
    } catch (invalid_argument const& e) {
      EXPECT_NE(std::string(e.what()).find("argument 1"), std::string::npos) << e.what();
    }
    EXPECT_THROW(
        (void)launch(after(gate), where, grid(1).block(parallel, 2048), [](auto const&) {}),
        invalid_argument);
  }
  // The same launch with a host pointer is accepted and runs once the gate opens.
  int x = 0;
  auto ok = launch(after(gate), on(rt.machine().slice(isa::host), backend_id::serial), grid(3),
                   count, &x);
  EXPECT_FALSE(ok.ready());
  gate.complete();
  ok.wait();
  EXPECT_EQ(ran, 3);
  deallocate(d);
}

// Kernel arguments larger than the room a threads-backend job keeps for them (256 bytes)
// take the other path (a body of their own); both reach every block intact, on every CPU
// backend and a sim device, launched at once and after an event.
struct big_arg {
  std::array<std::int64_t, 80> v;  // 640 bytes
};
struct sum_big_k {
  template <class Self>
  void operator()(Self const& self, big_arg a, std::int64_t* out) const {
    std::int64_t s = 0;
    for (auto x : a.v) s += x;
    out[self.block_index()[0]] = s;
  }
};
static_assert(sizeof(big_arg) > threads::job_body_bytes,
              "big_arg must not fit a threads job's room for its body");
TEST(Launch, LargeArgumentsReachEveryBlockOnEveryBackend) {
  runtime rt({.sim_devices = "1"});
  big_arg a{};
  std::int64_t want = 0;
  for (std::size_t i = 0; i < a.v.size(); ++i) want += a.v[i] = static_cast<std::int64_t>(i * i);
  constexpr index_t blocks = 37;
  for (int deferred = 0; deferred < 2; ++deferred) {
    for (auto b : test::cpu_backends()) {
      std::vector<std::int64_t> out(blocks, -1);
      auto gate = deferred ? event::pending() : event::completed();
      auto e = launch(after(gate), on(rt.machine().slice(isa::host), b), grid(blocks), sum_big_k{},
                      a, out.data());
      gate.complete();
      e.wait();
      for (auto v : out) EXPECT_EQ(v, want) << to_string(b) << (deferred ? " after" : "");
    }
    auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
    auto d = allocate<std::int64_t, sim_space>(sim0, blocks);
    auto gate = deferred ? event::pending() : event::completed();
    auto e = launch(after(gate), sim0, grid(blocks), sum_big_k{}, a, d);
    gate.complete();
    e.wait();
    std::vector<std::int64_t> out(blocks, -1);
    copy(ptr<std::int64_t>(out.data(), 0), d, blocks).wait();
    for (auto v : out) EXPECT_EQ(v, want) << "sim" << (deferred ? " after" : "");
    deallocate(d);
  }
}

// Every copy a launch makes of its arguments is destroyed, whichever path kept them: in
// the threads job's own room (small), beside it (large), in a sim queue, or until events
// complete. Counted once the runtime is gone: the pool may keep a finished job (and its
// arguments) until it takes the next one.
template <std::size_t Bytes>
struct counted_arg {
  static inline std::atomic<int> live{0};
  std::array<char, Bytes> pad{};
  counted_arg() { ++live; }
  counted_arg(counted_arg const& o) : pad(o.pad) { ++live; }
  counted_arg& operator=(counted_arg const&) = default;
  ~counted_arg() { --live; }
};
struct touch_k {
  template <class Self, std::size_t B1, std::size_t B2>
  void operator()(Self const&, counted_arg<B1> const& a, counted_arg<B2> const& b, int* out) const {
    if (a.pad[0] == 0 && b.pad[0] == 0) *out = 1;
  }
};
TEST(Launch, EveryCopyOfAnArgumentIsDestroyed) {
  {
    runtime rt({.sim_devices = "1"});
    auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
    auto d = allocate<int, sim_space>(sim0, 1);
    counted_arg<8> small;
    counted_arg<512> big;
    for (int deferred = 0; deferred < 2; ++deferred) {
      std::vector<event> done;
      std::vector<int> out(8, 0);
      int i = 0;
      for (auto b : test::cpu_backends()) {
        auto gate = deferred ? event::pending() : event::completed();
        auto where = on(rt.machine().slice(isa::host), b);
        done.push_back(launch(after(gate), where, grid(5), touch_k{}, small, small, &out[i++]));
        done.push_back(launch(after(gate), where, grid(5), touch_k{}, big, small, &out[i++]));
        gate.complete();
      }
      auto gate = deferred ? event::pending() : event::completed();
      done.push_back(launch(after(gate), sim0, grid(5), touch_k{}, small, big, d));
      gate.complete();
      wait_all(done);
      for (int k = 0; k < i; ++k) EXPECT_EQ(out[static_cast<std::size_t>(k)], 1) << k;
    }
    deallocate(d);
    EXPECT_GE(counted_arg<8>::live.load(), 1);  // `small` itself
  }
  EXPECT_EQ(counted_arg<8>::live.load(), 0);
  EXPECT_EQ(counted_arg<512>::live.load(), 0);
}

TEST(Events, EmptyEventIsReady) {
  event e;
  EXPECT_TRUE(e.ready());
  EXPECT_NO_THROW(e.wait());
  EXPECT_FALSE(e.has_failed());
}

TEST(Events, CompletionRunsContinuationsAndWakesWaiters) {
  runtime rt;
  auto e = event::pending();
  int ran = 0;
  e.then([&ran] { ++ran; });
  EXPECT_FALSE(e.ready());
  std::thread producer([e] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    e.complete();
  });
  e.wait();  // sleeps, then is woken by the completion
  producer.join();
  EXPECT_TRUE(e.ready());
  EXPECT_EQ(ran, 1);
  e.then([&ran] { ++ran; });  // already complete: runs now
  EXPECT_EQ(ran, 2);
  e.complete(std::make_exception_ptr(std::runtime_error("late")));  // completes once only
  EXPECT_FALSE(e.has_failed());
}

TEST(Events, WaitAllRethrowsTheFirstFailure) {
  auto ok = event::completed();
  auto bad1 = event::failed(std::make_exception_ptr(std::runtime_error("one")));
  auto bad2 = event::failed(std::make_exception_ptr(std::logic_error("two")));
  try {
    wait_all({ok, bad1, bad2});
    FAIL();
  } catch (std::runtime_error const& e) {
    EXPECT_STREQ(e.what(), "one");
  }
  auto all = when_all(after(ok, event::completed()));
  EXPECT_TRUE(all.ready());
  EXPECT_FALSE(all.has_failed());
}

TEST(Events, AfterAnEventFromAnotherThread) {
  runtime rt;
  auto gate = event::pending();
  int value = 0;
  auto e = launch(after(gate), rt.machine(), grid(1), [&value](auto const&) { value = 42; });
  EXPECT_FALSE(e.ready());
  std::thread opener([gate] { gate.complete(); });
  e.wait();
  opener.join();
  EXPECT_EQ(value, 42);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

struct named_for_cuda_k {
  template <class Self>
  void operator()(Self const&, int*) const {}
};

// This file is compiled by the host compiler, so its kernels have no device code: a
// launch on the CUDA backend says so and how to fix it, whether or not a GPU exists.
TEST(Launch, CudaLaunchFromAHostCompiledFileNamesTheKernel) {
  runtime rt;
  int x = 0;
  for (int chained = 0; chained < 2; ++chained) {
    try {
      if (chained)
        launch(after(event::pending()), on(rt.machine(), backend_id::cuda), grid(4),
               named_for_cuda_k{}, &x);
      else
        launch(on(rt.machine(), backend_id::cuda), grid(4), named_for_cuda_k{}, &x);
      FAIL() << "no exception";
    } catch (not_supported const& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("kernel strata::(anonymous namespace)::named_for_cuda_k was not compiled "
                          "for CUDA: compile this file with nvcc"),
                std::string::npos)
          << what;
    }
  }
}

}  // namespace
}  // namespace strata
