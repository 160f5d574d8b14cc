// Launch targets, events and their errors.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

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
