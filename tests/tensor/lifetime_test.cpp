// Defects an outside probe found in session 30, each a test that failed before its fix:
// dropping a tensor's last handle while a kernel still runs on its host blocks (the memory
// was freed under the kernel), the dependencies of a periodic tensor's padding loads when it
// is not the first tensor argument (they came from the first one), a block index outside
// the tensor in load_padding (a segfault), and hybrid solves asked for no sweep.
#include "../support/hang_guard.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace strata;
using tensor_test::gather;
using tensor_test::places;
using tensor_test::scatter;

namespace {

constexpr auto limit = std::chrono::seconds(120);

class TensorLifetime : public ::testing::TestWithParam<std::string> {};

TEST_P(TensorLifetime, DroppingTheLastHandleWaitsForARunningKernel) {
  // The kernel's first cell sleeps; the tensor's last handle goes while it runs. The drop
  // must wait for it (as freeing sim memory does), so the kernel has finished by then.
  testing_support::finishes_within(limit, "dropping a tensor under a running kernel", [&] {
    std::atomic<int> finished{0};
    event e;
    {
      tensor<double, 1> t(places(GetParam()), {.extent = {1 << 14}, .partitions = {2}});
      e = for_each_cell(
          [&finished] STRATA_FN(auto& x) {
            if (x.global_index(0) == 0) {
              std::this_thread::sleep_for(std::chrono::milliseconds(50));
              finished.fetch_add(1);
            }
            *x = 42.0;
          },
          t);
    }
    EXPECT_EQ(finished.load(), 1) << "the tensor's memory went while its kernel ran";
    e.wait();
    // The memory is reusable and untouched by the old kernel.
    tensor<double, 1> u(places(GetParam()), {.extent = {1 << 14}, .partitions = {2}});
    fill(u, 1.0).wait();
    for (double v : gather(u)) ASSERT_EQ(v, 1.0);
  });
}

TEST_P(TensorLifetime, DroppingTheLastHandleWaitsForPendingCopiesAndLoads) {
  // Operations issued after a gate that completes on another thread shortly after the drop
  // began: the drop waits for them rather than freeing what they will read and write.
  testing_support::finishes_within(limit, "dropping a tensor with pending operations", [&] {
    std::vector<double> out(64, 0.0);
    auto gate = event::pending();
    event copied, loaded;
    std::thread opener;
    {
      tensor<double, 1> t(places(GetParam()), {.extent = {64}, .partitions = {4}, .padding = 1});
      fill(t, 3.0).wait();
      copied = copy(after(gate), view<double, 1>(ptr<double, host_space>(out.data(), 0), {64}), t);
      loaded = load_padding(after(gate), t);
      opener = std::thread([gate] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        gate.complete();
      });
    }
    EXPECT_TRUE(copied.ready());
    EXPECT_TRUE(loaded.ready());
    opener.join();
    copied.wait();
    loaded.wait();
    for (double v : out) ASSERT_EQ(v, 3.0);
  });
}

TEST(TensorLifetimeOnePu, DroppingTheLastHandleInsideAKernelRunsTheWorkItWaitsFor) {
  // Everything on one PU: a kernel drops the last handle of a tensor whose own kernel is
  // still queued there. The drop's wait must run that kernel (helping the pool), not sleep
  // while the only processor that could run it waits.
  testing_support::finishes_within(limit, "a drop inside a kernel on one PU", [&] {
    auto pu = tensor_test::rt().machine().descendants(place_type::pu).front();
    std::optional<tensor<double, 1>> held(std::in_place, std::vector<place>{pu},
                                          tensor_spec<1>{.extent = {4096}});
    tensor<double, 1> u(std::vector<place>{pu}, {.extent = {64}});
    std::atomic<int> written{0};
    for (int run = 0; run < 20; ++run) {
      if (!held) held.emplace(std::vector<place>{pu}, tensor_spec<1>{.extent = {4096}});
      auto filled = for_each_cell(
          [&written] STRATA_FN(auto& x) {
            *x = 7.0;
            if (x.global_index(0) == 4095) written.fetch_add(1);
          },
          *held);
      for_each_cell(
          [&held] STRATA_FN(auto& y) {
            if (y.global_index(0) == 0) held.reset();
            *y = 1.0;
          },
          u)
          .wait();
      EXPECT_EQ(written.load(), run + 1) << "the dropped tensor's kernel had not run";
      filled.wait();
    }
  });
}

TEST_P(TensorLifetime, PeriodicPaddedArgumentAfterAPlainOneWaitsForItsWriters) {
  // x is periodic, y (first argument) is not: block 3's padding load reads block 0 of x,
  // which the previous level writes slowly. The load must come after that writer.
  testing_support::finishes_within(limit, "periodic padded access as a second argument", [&] {
    auto p = places(GetParam());
    tensor_spec<1> sp{.extent = {16}, .partitions = {4}, .padding = 1};
    tensor<double, 1> x(p, sp), y(p, sp);
    set_boundary(x, boundary::periodic{});
    fill(x, 0.0).wait();
    graph g;
    g.split(
        [] STRATA_FN(auto& xi) {
          if (xi.global_index(0) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
          *xi = 1.0;
        },
        x);
    g.then_split([] STRATA_FN(auto& yi, auto& xi) { *yi = *xi.offset(0, -1) + *xi.offset(0, 1); },
                 y, concurrent_padded_access(x));
    run(g).wait();
    auto out = gather(y);
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], 2.0) << "cell " << i;
  });
}

TEST_P(TensorLifetime, ExclusivePeriodicAccessAfterAPlainArgumentOverManyRuns) {
  // The exclusive form: block 0's kernel writes the cells block 3's load reads (periodic
  // wrap-around of the second argument); it must wait for that load. A race shows as
  // y[15] reading an updated cell in some of the runs.
  testing_support::finishes_within(limit, "exclusive periodic padded access", [&] {
    auto p = places(GetParam());
    tensor_spec<1> sp{.extent = {16}, .partitions = {4}, .padding = 1};
    tensor<double, 1> x(p, sp), y(p, sp);
    set_boundary(x, boundary::periodic{});
    std::vector<double> start(16);
    for (int i = 0; i < 16; ++i) start[static_cast<std::size_t>(i)] = i;
    int bad = 0;
    for (int run = 0; run < 100; ++run) {
      scatter(x, start);
      for_each_cell(
          [] STRATA_FN(auto& yi, auto& xi) {
            auto const i = xi.global_index(0);
            *yi = i == 0 ? *xi.offset(0, -1) : i == 15 ? *xi.offset(0, 1) : 0.0;
            *xi = *xi + 100;
          },
          y, exclusive_padded_access(x))
          .wait();
      auto out = gather(y);
      if (out[15] != 0.0 || out[0] != 15.0) ++bad;
    }
    EXPECT_EQ(bad, 0);
  });
}

TEST_P(TensorLifetime, LoadPaddingOfABlockOutsideTheTensorIsAnError) {
  tensor<double, 2> t(places(GetParam()), {.extent = {8, 8}, .partitions = {2, 2}, .padding = 1});
  set_boundary(t, boundary::copy{});
  fill(t, 1.0).wait();
  try {
    load_padding(after{}, t, 7).wait();
    FAIL() << "load_padding of block 7 of 4 was accepted";
  } catch (out_of_range const& e) {
    EXPECT_NE(std::string(e.what()).find("block 7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4 blocks"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_padding(after{}, t, 4, boundary::constant<double>{0.0}), out_of_range);
  load_padding(t).wait();  // still usable
}

INSTANTIATE_TEST_SUITE_P(Places, TensorLifetime, ::testing::Values("host", "sim4"));

TEST(HybridSweeps, NoSweepLeavesTheFieldAndANegativeCountIsAnError) {
  auto sims = tensor_test::sim_devices(2);
  auto jacobi = [] STRATA_FN(auto& c) {
    return 0.25 * (*c.offset(0, -1) + *c.offset(0, 1) + *c.offset(1, -1) + *c.offset(1, 1));
  };
  std::vector<double> a(32, 0.0), out(32, -1.0);
  auto whole = [](std::vector<double>& v) {
    return view<double, 2>(ptr<double, host_space>(v.data(), 0), vec<2>{8, 4});
  };
  hybrid_stencil<double> h({8, 4}, {.devices = sims, .boundary = 1.0, .max_iterations = 0});
  h.set(whole(a));
  EXPECT_EQ(h.solve(jacobi).iterations, 0);
  EXPECT_EQ(h.iterate(0, jacobi).iterations, 0);
  h.get(whole(out));
  EXPECT_EQ(out, a) << "a solve capped at 0 sweeps changed the field";
  EXPECT_THROW(h.iterate(-5, jacobi), invalid_argument);
  hybrid_stencil<double> bad({8, 4}, {.devices = sims, .boundary = 1.0, .max_iterations = -1});
  EXPECT_THROW(bad.solve(jacobi), invalid_argument);
  EXPECT_EQ(h.iterate(1, jacobi).iterations, 1);  // one sweep still runs one
}

}  // namespace
