// Dynamic re-partitioning of the hybrid stencil (hybrid-2d-stencil-scheme §9's future
// work) and the sim devices' run-time speed: the cut lines follow measured strip times
// (checked on the decision function with given times, so without timing thresholds), a
// device slowed mid-solve loses rows, and the results stay those of the references across
// re-partitions (Jacobi bitwise, the shortest path equal to Dijkstra).
#include "stencil_kernels.hpp"
#include "support.hpp"

#include <strata/machine/sim_config.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace strata;
using tensor_test::rt;

namespace {

/// Restores a sim device's speed when the test ends (the devices are shared by the tests).
struct speed_guard {
  place device;
  double before;
  explicit speed_guard(place d) : device(std::move(d)), before(sim::speed(device)) {}
  ~speed_guard() { sim::set_speed(device, before); }
};

TEST(HybridRebalance, CutsFollowMeasuredSpeedsAndStayWhenTimesAgree) {
  std::vector<index_t> const cuts{0, 50, 100};
  // Equal times, or within the threshold: no move.
  EXPECT_EQ(rebalanced_cuts(cuts, {1.0, 1.0}, 0.1), cuts);
  EXPECT_EQ(rebalanced_cuts(cuts, {1.0, 1.09}, 0.1), cuts);
  // The second strip takes three times as long: it is a third as fast, so it keeps a
  // quarter of the rows.
  EXPECT_EQ(rebalanced_cuts(cuts, {1.0, 3.0}, 0.1), (std::vector<index_t>{0, 75, 100}));
  EXPECT_EQ(rebalanced_cuts(cuts, {3.0, 1.0}, 0.1), (std::vector<index_t>{0, 25, 100}));
  // Damped: half of the way (50 -> 75 becomes 50 -> 63), none of it at 0.
  EXPECT_EQ(rebalanced_cuts(cuts, {1.0, 3.0}, 0.1, 0.5), (std::vector<index_t>{0, 63, 100}));
  EXPECT_EQ(rebalanced_cuts(cuts, {1.0, 3.0}, 0.1, 0.0), cuts);
  // Three strips: the middle one slows down; both cut lines move towards it.
  auto three = rebalanced_cuts({0, 30, 60, 90}, {1.0, 2.0, 1.0}, 0.1);
  EXPECT_EQ(three, (std::vector<index_t>{0, 36, 54, 90}));
  // Speeds are rows per second: a strip twice as tall taking twice as long is as fast, so
  // both get the same rows.
  EXPECT_EQ(rebalanced_cuts({0, 20, 60}, {1.0, 2.0}, 0.1), (std::vector<index_t>{0, 30, 60}));
  // No information (an unmeasured strip) or one strip: no move; every strip keeps a row.
  EXPECT_EQ(rebalanced_cuts(cuts, {0.0, 1.0}, 0.1), cuts);
  EXPECT_EQ(rebalanced_cuts(cuts, {std::nan(""), 1.0}, 0.1), cuts);
  EXPECT_EQ(rebalanced_cuts({0, 100}, {1.0}, 0.1), (std::vector<index_t>{0, 100}));
  EXPECT_EQ(rebalanced_cuts({0, 2, 4}, {1.0, 1e9}, 0.1), (std::vector<index_t>{0, 3, 4}));
}

// An outside probe: a NaN threshold moved the lines at every window, and a NaN damping
// packed every strip but the last into one row; neither was an error.
TEST(HybridRebalance, BadThresholdsAndDampingsAreClearErrors) {
  std::vector<index_t> const cuts{0, 50, 100};
  double const nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  for (double t : {nan, -0.1, -inf})
    EXPECT_THROW(rebalanced_cuts(cuts, {1.0, 3.0}, t), invalid_argument) << t;
  for (double d : {nan, -0.5, 1.5, inf})
    EXPECT_THROW(rebalanced_cuts(cuts, {1.0, 3.0}, 0.1, d), invalid_argument) << d;
  EXPECT_EQ(rebalanced_cuts(cuts, {1.0, 3.0}, inf), cuts);  // never moves
  rt();
  auto sims = tensor_test::sim_devices(2);
  auto make = [&](long every, double threshold, double damping) {
    return hybrid_stencil<double>({16, 8}, {.devices = sims,
                                            .rebalance = true,
                                            .rebalance_every = every,
                                            .rebalance_threshold = threshold,
                                            .rebalance_damping = damping});
  };
  EXPECT_THROW(make(0, 0.1, 0.5), invalid_argument);
  EXPECT_THROW(make(-4, 0.1, 0.5), invalid_argument);
  EXPECT_THROW(make(8, nan, 0.5), invalid_argument);
  EXPECT_THROW(make(8, -1.0, 0.5), invalid_argument);
  EXPECT_THROW(make(8, 0.1, nan), invalid_argument);
  EXPECT_THROW(make(8, 0.1, 2.0), invalid_argument);
  EXPECT_NO_THROW(make(1, 0.0, 1.0));
  EXPECT_NO_THROW(make(8, inf, 0.0));
}

TEST(HybridRebalance, SimSpeedIsSetAtRunTimeAndCheckedForBadInput) {
  rt();
  auto sims = tensor_test::sim_devices(2);
  speed_guard g(sims[0]);
  EXPECT_EQ(sim::speed(sims[0]), 1.0);
  sim::set_speed(sims[0], 0.25);
  EXPECT_EQ(sim::speed(sims[0]), 0.25);
  EXPECT_EQ(sim::speed(sims[1]), 1.0);   // one device only
  EXPECT_EQ(sims[0].info().speed, 1.0);  // the configured value stays
  EXPECT_THROW(sim::set_speed(sims[0], 0.0), invalid_argument);
  EXPECT_THROW(sim::set_speed(sims[0], -1.0), invalid_argument);
  EXPECT_THROW(sim::set_speed(sims[0], std::numeric_limits<double>::infinity()), invalid_argument);
  // Below the `speed` key's minimum a kernel's stretched time would overflow the clock.
  EXPECT_THROW(sim::set_speed(sims[0], 1e-30), invalid_argument);
  EXPECT_THROW(sim::set_speed(sims[0], std::numeric_limits<double>::quiet_NaN()), invalid_argument);
  sim::set_speed(sims[0], sim_min_speed);
  EXPECT_EQ(sim::speed(sims[0]), sim_min_speed);
  EXPECT_THROW(sim::set_speed(tensor_test::host()[0], 0.5), invalid_argument);
  EXPECT_THROW(sim::speed(tensor_test::host()[0]), invalid_argument);
}

// The device mixes of issue 16 whose strips can be slowed: the last device is a sim device.
std::vector<place> mix(std::string const& name) {
  auto host = tensor_test::host();
  auto sims = tensor_test::sim_devices(3);
  if (name == "cpu+sim") return {host[0], sims[0]};
  if (name == "cpu+2sim") return {host[0], sims[0], sims[1]};
  return {sims[0], sims[1]};  // "2sim"
}

class Rebalance : public ::testing::TestWithParam<std::string> {};

// The last device becomes 20 times slower after iteration 4: its strip must lose rows
// (a 20x gap is far beyond any threshold and any timing noise), and the field after every
// re-partition is still the sequential sweeps' field, bit for bit.
TEST_P(Rebalance, ASlowedDeviceLosesRowsAndJacobiStaysBitwiseEqual) {
  rt();
  index_t const rows = 96, cols = 96;
  long const sweeps = 60;
  auto devices = mix(GetParam());
  speed_guard g(devices.back());
  std::vector<double> init(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < init.size(); ++i) init[i] = static_cast<double>((i * 37) % 11);
  std::vector<std::vector<index_t>> seen;
  hybrid_stencil<double> h({rows, cols}, {.devices = devices,
                                          .boundary = 1.5,
                                          .rebalance = true,
                                          .rebalance_every = 4,
                                          .on_iteration = [&](hybrid_progress const& p) {
                                            if (p.iteration == 4)
                                              sim::set_speed(devices.back(), 0.05);
                                            if (seen.empty() || seen.back() != p.cuts)
                                              seen.push_back(p.cuts);
                                            EXPECT_EQ(p.strip_seconds.size(), devices.size());
                                          }});
  auto const before = h.cuts();
  h.set(view<double, 2>(ptr<double, host_space>(init.data(), 0), vec<2>{rows, cols}));
  auto r = h.iterate(sweeps, apps::jacobi_update{});
  EXPECT_EQ(r.iterations, sweeps);
  EXPECT_GE(r.repartitions, 1);
  EXPECT_GT(r.rows_moved, 0);
  auto const after = h.cuts();
  auto const n = devices.size();
  EXPECT_LT(after[n] - after[n - 1], before[n] - before[n - 1])
      << "the slowed device's strip did not shrink";
  EXPECT_GE(seen.size(), 2u);
  std::vector<double> out(init.size());
  h.get(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{rows, cols}));
  auto ref = apps::jacobi_reference(init, rows, cols, 1.5, sweeps);
  for (std::size_t i = 0; i < out.size(); ++i)
    ASSERT_EQ(out[i], ref[i]) << GetParam() << " cell " << i;
}

// The same slow-down during a shortest path solve: the elevations (an extra tensor) are
// re-cut with the strips, and the costs are Dijkstra's.
TEST_P(Rebalance, ShortestPathAcrossRepartitionsEqualsDijkstra) {
  rt();
  index_t const rows = 80, cols = 64;
  double const step = 30.0, inf = std::numeric_limits<double>::infinity();
  auto devices = mix(GetParam());
  speed_guard g(devices.back());
  std::vector<double> z(static_cast<std::size_t>(rows * cols));
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j)
      z[static_cast<std::size_t>(i * cols + j)] =
          100.0 * std::sin(0.3 * static_cast<double>(i)) * std::cos(0.2 * static_cast<double>(j)) +
          static_cast<double>((i * 7 + j * 13) % 17);
  index_t const ti = 5, tj = 40;
  auto ref = apps::dijkstra(z, rows, cols, step, ti, tj);
  hybrid_stencil<double> hs({rows, cols}, {.devices = devices,
                                           .boundary = inf,
                                           .rebalance = true,
                                           .rebalance_every = 3,
                                           .on_iteration = [&](hybrid_progress const& p) {
                                             if (p.iteration == 3)
                                               sim::set_speed(devices.back(), 0.05);
                                           }});
  auto const before = hs.cuts();
  std::vector<double> cost(z.size(), inf);
  cost[static_cast<std::size_t>(ti * cols + tj)] = 0;
  hs.set(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
  tensor<double, 2> elevation(hs.devices(), hs.spec());
  set_boundary(elevation, boundary::constant<double>{0.0});
  copy(elevation, view<double, 2>(ptr<double, host_space>(z.data(), 0), vec<2>{rows, cols})).wait();
  auto r = hs.solve(apps::path_update{}, elevation, step);
  EXPECT_TRUE(r.converged);
  EXPECT_GE(r.repartitions, 1);
  auto const n = devices.size();
  EXPECT_LT(hs.cuts()[n] - hs.cuts()[n - 1], before[n] - before[n - 1]);
  hs.get(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
  for (std::size_t i = 0; i < cost.size(); ++i)
    ASSERT_NEAR(cost[i], ref[i], 1e-9 * ref[i]) << GetParam() << " cell " << i;
  // The caller's elevation tensor is now cut differently from the stencil: a second solve
  // takes it (re-cut into a copy) and changes nothing.
  ASSERT_FALSE(elevation.same_cells(hs.field()));
  auto again = hs.solve(apps::path_update{}, elevation, step);
  EXPECT_EQ(again.iterations, 1);
  EXPECT_TRUE(again.converged);
}

INSTANTIATE_TEST_SUITE_P(Mixes, Rebalance, ::testing::Values("cpu+sim", "cpu+2sim", "2sim"));

// Without divergence nothing moves: rebalancing off, or a threshold no time gap reaches
// (the decision itself is checked with given times above).
TEST(HybridRebalance, NoRepartitionWhenOffOrBelowTheThreshold) {
  rt();
  auto devices = mix("2sim");
  speed_guard g(devices.back());
  for (bool on : {false, true}) {
    hybrid_stencil<double> h({48, 32}, {.devices = devices,
                                        .rebalance = on,
                                        .rebalance_every = 2,
                                        .rebalance_threshold = on ? 1e9 : 0.0,
                                        .on_iteration = [&](hybrid_progress const& p) {
                                          if (p.iteration == 2) sim::set_speed(devices.back(), 0.1);
                                        }});
    auto const before = h.cuts();
    auto r = h.iterate(12, apps::jacobi_update{});
    EXPECT_EQ(r.repartitions, 0);
    EXPECT_EQ(r.rows_moved, 0);
    EXPECT_EQ(h.cuts(), before);
    sim::set_speed(devices.back(), 1.0);
  }
}

TEST(HybridRebalance, ExtraTensorsOfOtherCutsAreTakenAndOfOtherShapesRefused) {
  rt();
  index_t const rows = 30, cols = 20;
  double const step = 10.0, inf = std::numeric_limits<double>::infinity();
  auto devices = mix("cpu+2sim");
  std::vector<double> z(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = static_cast<double>((i * 13) % 29);
  hybrid_stencil<double> hs({rows, cols}, {.devices = devices, .cuts = {4, 21}, .boundary = inf});
  // Elevations cut into 2 x 2 blocks on two sim devices, with a copy-edge boundary: the
  // stencil copies them into its strips, edge padding included.
  tensor<double, 2> z4(tensor_test::sim_devices(2),
                       tensor_spec<2>{.extent = {rows, cols}, .partitions = {2, 2}, .padding = 1});
  set_boundary(z4, boundary::constant<double>{0.0});
  tensor_test::scatter(z4, z);
  std::vector<double> cost(z.size(), inf);
  cost[7 * cols + 3] = 0;
  hs.set(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
  auto r = hs.solve(apps::path_update{}, z4, step);
  EXPECT_TRUE(r.converged);
  hs.get(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
  auto ref = apps::dijkstra(z, rows, cols, step, 7, 3);
  for (std::size_t i = 0; i < cost.size(); ++i) ASSERT_NEAR(cost[i], ref[i], 1e-9 * ref[i]) << i;
  tensor<double, 2> wrong(devices, tensor_spec<2>{.extent = {rows, cols + 1}, .padding = 1});
  EXPECT_THROW(hs.solve(apps::path_update{}, wrong, step), invalid_argument);
}

}  // namespace
