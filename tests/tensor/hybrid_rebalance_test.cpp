// Dynamic re-partitioning of the hybrid stencil (hybrid-2d-stencil-scheme §9's future
// work) and the sim devices' run-time speed: the cut lines follow measured strip times
// (checked on the decision function with given times, so without timing thresholds), a
// device slowed mid-solve loses rows, and the results stay those of the references across
// re-partitions (Jacobi bitwise, the shortest path equal to Dijkstra).
#include "stencil_kernels.hpp"
#include "support.hpp"

#include <strata/machine/sim_config.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <string>
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
  // A move must pay for itself: {1, 3} -> lines at 75 predict 1.5 for both strips, 1.5
  // saved; damped to 63, the second strip's 37 rows predict 2.22, 0.78 saved.
  EXPECT_EQ(rebalanced_cuts(cuts, {1.0, 3.0}, 0.1, 1.0, 1.0), (std::vector<index_t>{0, 75, 100}));
  EXPECT_EQ(rebalanced_cuts(cuts, {1.0, 3.0}, 0.1, 1.0, 1.6), cuts);
  EXPECT_EQ(rebalanced_cuts(cuts, {1.0, 3.0}, 0.1, 0.5, 0.7), (std::vector<index_t>{0, 63, 100}));
  EXPECT_EQ(rebalanced_cuts(cuts, {1.0, 3.0}, 0.1, 0.5, 0.8), cuts);
  for (double m : {std::nan(""), -1.0})
    EXPECT_THROW(rebalanced_cuts(cuts, {1.0, 3.0}, 0.1, 1.0, m), invalid_argument) << m;
}

// An outside probe: a NaN threshold moved the lines at every window, and a NaN damping
// packed every strip but the last into one row; neither was an error.
// A strip's busy time per iteration (what re-partitioning compares): the union of its
// frontier and corpus spans, an early corpus counted from the end of the strip's previous
// iteration, idle gaps not counted.
TEST(HybridRebalance, StripBusyTimeIsTheUnionOfItsKernelSpans) {
  using tensor_detail::strip_busy_ns;
  EXPECT_EQ(strip_busy_ns(10, 15, false, 0, 0, 0), 5);        // frontiers only
  EXPECT_EQ(strip_busy_ns(10, 15, true, 20, 50, 0), 35);      // a gap between them
  EXPECT_EQ(strip_busy_ns(10, 15, true, 10, 50, 0), 40);      // launched together
  EXPECT_EQ(strip_busy_ns(30, 60, true, 5, 50, 0), 55);       // overlapping: 5..60
  EXPECT_EQ(strip_busy_ns(20, 22, true, 10, 50, 0), 40);      // frontiers inside
  EXPECT_EQ(strip_busy_ns(100, 101, true, 20, 100, 60), 41);  // early: from 60, not 20
  EXPECT_EQ(strip_busy_ns(100, 101, true, 70, 100, 60), 31);  // launched after that end
  EXPECT_EQ(strip_busy_ns(10, 15, true, 40, 30, 0), 5);       // no negative spans
  EXPECT_EQ(strip_busy_ns(10, 15, true, 20, 50, 60), 5);      // a corpus before last_end
}

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

// An extra tensor moves with the rows at every re-partition of one solve: the first move
// copies the caller's tensor into a strip store of the solve, later moves re-cut that
// store (copying only the rows that change strips). The speeds swap once the first move
// is seen, so the rows go back the other way: at least two moves in one solve, with the
// costs still Dijkstra's.
TEST(HybridRebalance, AnExtraTensorMovesAgainWithinOneSolve) {
  rt();
  index_t const rows = 96, cols = 48;
  double const step = 25.0, inf = std::numeric_limits<double>::infinity();
  auto devices = mix("2sim");
  speed_guard g0(devices.front()), g1(devices.back());
  std::vector<double> z(static_cast<std::size_t>(rows * cols));
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j)
      z[static_cast<std::size_t>(i * cols + j)] =
          80.0 * std::cos(0.25 * static_cast<double>(i)) * std::sin(0.3 * static_cast<double>(j)) +
          static_cast<double>((i * 11 + j * 5) % 13);
  index_t const ti = 90, tj = 7;  // far from the top: the solve lasts over 100 sweeps
  auto ref = apps::dijkstra(z, rows, cols, step, ti, tj);
  std::vector<index_t> first_cuts;
  int swapped_at = 0;
  hybrid_stencil<double> hs({rows, cols},
                            {.devices = devices,
                             .boundary = inf,
                             .rebalance = true,
                             .rebalance_every = 3,
                             .on_iteration = [&](hybrid_progress const& p) {
                               if (p.iteration == 2) {
                                 first_cuts = p.cuts;
                                 sim::set_speed(devices.back(), 0.05);
                               } else if (!swapped_at && p.iteration > 2 && p.cuts != first_cuts) {
                                 swapped_at = static_cast<int>(p.iteration);
                                 sim::set_speed(devices.back(), 1.0);
                                 sim::set_speed(devices.front(), 0.05);
                               }
                             }});
  std::vector<double> cost(z.size(), inf);
  cost[static_cast<std::size_t>(ti * cols + tj)] = 0;
  hs.set(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
  tensor<double, 2> elevation(hs.devices(), hs.spec());
  copy(elevation, view<double, 2>(ptr<double, host_space>(z.data(), 0), vec<2>{rows, cols})).wait();
  auto r = hs.solve(apps::path_update{}, elevation, step);
  EXPECT_TRUE(r.converged);
  ASSERT_GT(swapped_at, 0) << "the slowed device never lost rows";
  EXPECT_GE(r.repartitions, 2);
  // The second device was fast again and the first slow: the line moved back up.
  EXPECT_LT(hs.cuts()[1], first_cuts[1]);
  hs.get(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
  for (std::size_t i = 0; i < cost.size(); ++i)
    ASSERT_NEAR(cost[i], ref[i], 1e-9 * ref[i]) << "cell " << i;
  // The caller's tensor was never written: it still holds the elevations.
  std::vector<double> back(z.size());
  copy(view<double, 2>(ptr<double, host_space>(back.data(), 0), vec<2>{rows, cols}), elevation)
      .wait();
  EXPECT_EQ(back, z);
}

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

// Strips whose cut lines move (tensor_detail::strip_store): the rows a strip keeps stay in
// place, only the rows that change strips are copied, and every cell a strip owns (its
// interior and its padding rows and columns where the grid ends) survives any sequence of
// cuts, on host and sim memory, with one-row strips and strips that outgrow their room.
class StripStore : public ::testing::TestWithParam<std::string> {};

std::vector<place> strip_places(std::string const& name) {
  auto host = tensor_test::host();
  auto sims = tensor_test::sim_devices(3);
  if (name == "host") return {host[0], host[0], host[0]};
  if (name == "cpu+2sim") return {host[0], sims[0], sims[1]};
  return {sims[0], host[0], sims[1], sims[2]};  // "4strips"
}

// The value of padded global cell (i, j) (both from -pad): every row and column distinct.
double strip_value(index_t i, index_t j) {
  return static_cast<double>(i * 1000 + j);
}

template <class Fn>
void each_block_view(tensor<double, 2> const& t, std::size_t b, Fn&& fn) {
  tensor_detail::visit_space(t.space_of(b), [&](auto sp) {
    using S = decltype(sp);
    if constexpr (S::id == space_id::host || S::id == space_id::sim) fn(t.padded_view<S>(b));
  });
}

// Writes every padded box of `t` (its neighbours' rows included) from strip_value.
void write_strips(tensor<double, 2> const& t) {
  index_t const pad = t.padding(), w = t.extent()[1] + 2 * pad;
  for (std::size_t b = 0; b < t.blocks(); ++b) {
    auto const& blk = t.block(b);
    index_t const h = blk.extent[0] + 2 * pad;
    std::vector<double> box(static_cast<std::size_t>(h * w));
    for (index_t r = 0; r < h; ++r)
      for (index_t c = 0; c < w; ++c)
        box[static_cast<std::size_t>(r * w + c)] = strip_value(blk.origin[0] - pad + r, c - pad);
    each_block_view(t, b, [&](auto v) {
      copy(v, view<double, 2>(ptr<double, host_space>(box.data(), 0), vec<2>{h, w})).wait();
    });
  }
}

// Checks every strip's whole padded box: the rows it owns (interior rows, and the padding
// rows above the first strip and below the last), and its padding rows between strips,
// corners included, which a move copies whole from their owners.
void check_strips(tensor<double, 2> const& t, std::string const& where) {
  index_t const pad = t.padding(), w = t.extent()[1] + 2 * pad;
  for (std::size_t b = 0; b < t.blocks(); ++b) {
    auto const& blk = t.block(b);
    index_t const h = blk.extent[0] + 2 * pad;
    std::vector<double> box(static_cast<std::size_t>(h * w), -1.0);
    each_block_view(t, b, [&](auto v) {
      copy(view<double, 2>(ptr<double, host_space>(box.data(), 0), vec<2>{h, w}), v).wait();
    });
    for (index_t r = 0; r < h; ++r) {
      index_t const g = blk.origin[0] - pad + r;
      for (index_t c = 0; c < w; ++c)
        ASSERT_EQ(box[static_cast<std::size_t>(r * w + c)], strip_value(g, c - pad))
            << where << ": strip " << b << " global row " << g << " column " << c - pad;
    }
  }
}

TEST_P(StripStore, RecutKeepsEveryOwnedCellAndCopiesOnlyTheRowsThatChangeStrips) {
  rt();
  auto const devices = strip_places(GetParam());
  auto const n = static_cast<index_t>(devices.size());
  for (index_t pad : {1, 2}) {
    index_t const rows = 37, cols = 7, spare = 3;
    tensor_detail::strip_store<double> st(
        devices,
        tensor_spec<2>{.extent = {rows, cols}, .partitions = {devices.size(), 1}, .padding = pad},
        spare);
    write_strips(st.get());
    check_strips(st.get(), "start");
    // Small moves back and forth stay within the spare rows: no slab is reallocated, the
    // rows a strip keeps keep their addresses, and exactly the moved rows are copied.
    auto cuts = st.get().cuts(0);
    for (int round = 0; round < 6; ++round) {
      auto next = cuts;
      index_t moved = 0;
      for (index_t k = 1; k < n; ++k) {
        index_t const d = (round % 2 == 0 ? 2 : -2) * (k % 2 == 0 ? -1 : 1);
        next[static_cast<std::size_t>(k)] += d;
        moved += std::abs(d);
      }
      auto const before = st.get();
      auto const copied = st.rows_copied();
      st.recut(next, true);
      ASSERT_EQ(st.get().cuts(0), next);
      EXPECT_EQ(st.reallocations(), 0u);
      EXPECT_EQ(st.rows_copied() - copied, moved) << "round " << round;
      for (std::size_t b = 0; b < st.get().blocks(); ++b) {
        auto const& o = before.block(b);
        auto const& c = st.get().block(b);
        index_t const lo = std::max(o.origin[0], c.origin[0]),
                      hi = std::min(o.origin[0] + o.extent[0], c.origin[0] + c.extent[0]);
        for (index_t g = lo; g < hi; ++g)
          ASSERT_EQ(o.base + (g - o.origin[0]) * o.stride[0],
                    c.base + (g - c.origin[0]) * c.stride[0])
              << "strip " << b << " row " << g << " moved in memory";
      }
      check_strips(st.get(), "round " + std::to_string(round));
      cuts = next;
    }
    // Random cuts, one-row strips and jumps across the grid: strips outgrow their room.
    std::mt19937 gen(static_cast<unsigned>(7 + pad));
    for (int round = 0; round < 40; ++round) {
      std::vector<index_t> pick;
      std::vector<index_t> all(static_cast<std::size_t>(rows - 1));
      std::iota(all.begin(), all.end(), index_t{1});
      std::sample(all.begin(), all.end(), std::back_inserter(pick), n - 1, gen);
      std::vector<index_t> next{0};
      next.insert(next.end(), pick.begin(), pick.end());
      next.push_back(rows);
      bool thin = false;  // a strip thinner than the padding: refused, nothing changes
      for (std::size_t k = 0; k + 1 < next.size(); ++k) thin = thin || next[k + 1] - next[k] < pad;
      if (thin) {
        auto const was = st.get().cuts(0);
        EXPECT_THROW(st.recut(next, true), invalid_argument);
        ASSERT_EQ(st.get().cuts(0), was);
        check_strips(st.get(), "refused round " + std::to_string(round));
        continue;
      }
      st.recut(next, true);
      ASSERT_EQ(st.get().cuts(0), next);
      check_strips(st.get(), "random round " + std::to_string(round));
      // A prepared re-cut that is dropped leaves the store as it was (the hybrid prepares
      // both buffers before it commits either).
      auto back = next;
      std::reverse(back.begin() + 1, back.end() - 1);
      for (index_t k = 1; k < n; ++k)
        back[static_cast<std::size_t>(k)] = rows - back[static_cast<std::size_t>(k)];
      { auto dropped = st.prepare(back, true); }
      ASSERT_EQ(st.get().cuts(0), next);
      check_strips(st.get(), "after a dropped re-cut, round " + std::to_string(round));
    }
    EXPECT_GT(st.reallocations(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Mixes, StripStore, ::testing::Values("host", "cpu+2sim", "4strips"));

TEST(StripStoreErrors, BadCutsAndStorageOutsideAnAllocationAreClearErrors) {
  rt();
  auto devices = strip_places("cpu+2sim");
  tensor_spec<2> const spec{.extent = {12, 5}, .partitions = {3, 1}, .padding = 1};
  tensor_detail::strip_store<double> st(devices, spec, 2);
  EXPECT_THROW(st.recut({0, 4, 12}, true), invalid_argument);        // a cut missing
  EXPECT_THROW(st.recut({0, 6, 6, 12}, true), invalid_argument);     // an empty strip
  EXPECT_THROW(st.recut({0, 4, 8, 13}, true), invalid_argument);     // past the grid
  EXPECT_THROW(st.recut({1, 4, 8, 12}, true), invalid_argument);     // not from row 0
  EXPECT_EQ(st.get().cuts(0), (std::vector<index_t>{0, 4, 8, 12}));  // left as it was
  // A tensor over given storage: one padded box per block, inside a live allocation of the
  // block's space.
  auto const host = tensor_test::host()[0];
  tensor_spec<2> const one{.extent = {4, 4}, .padding = 1};
  auto p = allocate<double, host_space>(host, 36);
  std::shared_ptr<void> keep(p.get(), [p](void*) { deallocate(p); });
  tensor<double, 2> ok({host}, one, {{p.get(), p.place_id(), keep}});
  EXPECT_EQ(ok.block(0).base, p.get());
  std::vector<double> plain(36);
  using bs = tensor_detail::block_storage;
  auto make = [&](place const& where, std::vector<bs> const& s) {
    return tensor<double, 2>(std::vector<place>{where}, one, s);
  };
  EXPECT_THROW(make(host, {}), invalid_argument);
  EXPECT_THROW(make(host, {bs{nullptr, 0, nullptr}}), invalid_argument);
  EXPECT_THROW(make(host, {bs{plain.data(), 0, nullptr}}), invalid_argument);
  EXPECT_THROW(make(host, {bs{p.get(), p.place_id() + 1, keep}}), invalid_argument);
  // The box runs past the allocation's end; host memory for a sim block.
  EXPECT_THROW(make(host, {bs{p.get() + 1, p.place_id(), keep}}), invalid_argument);
  EXPECT_THROW(make(tensor_test::sim_devices(1)[0], {bs{p.get(), p.place_id(), keep}}),
               invalid_argument);
}

// Re-partitions by hand between solves, many times over, both apps: only the rows that
// change strips move (both buffers and an extra tensor, which becomes a strip store at the
// first re-cut), and the results stay the references'.
TEST(HybridRebalance, RepeatedRecutsKeepJacobiBitwiseAndTheShortestPathDijkstras) {
  rt();
  auto devices = mix("cpu+2sim");
  index_t const rows = 40, cols = 24;
  std::mt19937 gen(11);
  auto random_cuts = [&] {
    std::vector<index_t> all(static_cast<std::size_t>(rows - 1)), pick;
    std::iota(all.begin(), all.end(), index_t{1});
    std::sample(all.begin(), all.end(), std::back_inserter(pick), 2, gen);
    return pick;
  };
  std::vector<double> init(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < init.size(); ++i) init[i] = static_cast<double>((i * 29) % 13);
  hybrid_stencil<double> h({rows, cols}, {.devices = devices, .boundary = 2.0, .spare_rows = 3});
  h.set(view<double, 2>(ptr<double, host_space>(init.data(), 0), vec<2>{rows, cols}));
  long sweeps = 0;
  for (int round = 0; round < 12; ++round) {
    sweeps += h.iterate(2, apps::jacobi_update{}).iterations;
    auto c = round % 3 == 0 ? random_cuts() : h.cuts();
    if (round % 3 != 0) c = {c[1] + (round % 2 ? 1 : -1), c[2] + (round % 2 ? -2 : 2)};
    if (c[0] < 1 || c[1] <= c[0] || c[1] >= rows) c = random_cuts();
    h.recut(c);
  }
  std::vector<double> out(init.size());
  h.get(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{rows, cols}));
  auto ref = apps::jacobi_reference(init, rows, cols, 2.0, sweeps);
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], ref[i]) << "cell " << i;
  EXPECT_THROW(h.recut({5}), invalid_argument);
  EXPECT_THROW(h.recut({9, 9}), invalid_argument);

  double const step = 20.0, inf = std::numeric_limits<double>::infinity();
  std::vector<double> z(init.size());
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j)
      z[static_cast<std::size_t>(i * cols + j)] =
          50.0 * std::sin(0.4 * static_cast<double>(i)) + static_cast<double>((i * 5 + j * 3) % 7);
  hybrid_stencil<double> hs({rows, cols}, {.devices = devices, .boundary = inf, .spare_rows = 2});
  tensor<double, 2> elevation(hs.devices(), hs.spec());
  copy(elevation, view<double, 2>(ptr<double, host_space>(z.data(), 0), vec<2>{rows, cols})).wait();
  std::vector<double> cost(z.size(), inf);
  cost[static_cast<std::size_t>(31 * cols + 4)] = 0;
  hs.set(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
  for (int round = 0; round < 200; ++round) {
    if (hs.iterate(3, apps::path_update{}, elevation, step).converged) break;
    hs.recut(random_cuts());
  }
  hs.get(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
  auto dref = apps::dijkstra(z, rows, cols, step, 31, 4);
  for (std::size_t i = 0; i < cost.size(); ++i) ASSERT_NEAR(cost[i], dref[i], 1e-9 * dref[i]) << i;
}

// A re-partition whose new slab cannot be allocated (the device's memory is full) is an
// out_of_memory error that leaves the stencil as it was: cut lines, field and both
// buffers, and the solve goes on. With room for one buffer's slab only, the second
// buffer's failure drops the first's (nothing is committed, its memory is given back).
// Once memory is freed, the same re-partition goes through.
TEST(HybridRebalance, ARecutThatCannotAllocateLeavesTheStencilAsItWas) {
  rt();
  auto devices = mix("cpu+2sim");
  auto const sim0 = devices[1];
  index_t const rows = 48, cols = 1022;
  std::vector<double> init(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < init.size(); ++i) init[i] = static_cast<double>((i * 31) % 17);
  view<double, 2> iv(ptr<double, host_space>(init.data(), 0), vec<2>{rows, cols});
  hybrid_stencil<double> h(
      {rows, cols}, {.devices = devices, .cuts = {16, 32}, .boundary = 2.0, .spare_rows = 0});
  h.set(iv);
  long sweeps = h.iterate(2, apps::jacobi_update{}).iterations;
  auto field = [&] {
    std::vector<double> out(init.size());
    h.get(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{rows, cols}));
    return out;
  };
  // Cut at 46, sim0's strip grows from 16 to 30 rows past its slab (no spare rows): each
  // buffer needs a new slab of 32 padded rows of 1024 doubles on sim0.
  std::size_t const slab = 32 * 1024 * sizeof(double);
  struct ballast {
    std::vector<ptr<double, sim_space>> blocks;
    std::size_t bytes = 0;
    ~ballast() { release(); }
    void release() {
      for (auto& b : blocks) deallocate(b);
      blocks.clear();
      bytes = 0;
    }
    // Takes sim memory in halving blocks until less than `left` bytes are free.
    void fill(place const& where, std::size_t left) {
      for (std::size_t size = std::size_t{64} << 20; size >= left; size /= 2)
        for (;;) {
          try {
            blocks.push_back(allocate<double, sim_space>(where, size / sizeof(double)));
            bytes += size;
          } catch (out_of_memory const&) {
            break;
          }
        }
    }
  } full;
  full.fill(sim0, 512);  // less than 512 bytes left
  auto const before = field();
  EXPECT_THROW(h.recut({16, 46}), out_of_memory);
  EXPECT_EQ(h.cuts(), (std::vector<index_t>{0, 16, 32, 48}));
  EXPECT_EQ(field(), before);
  // Room for one slab (one and a half, plus the few bytes left): the first buffer's is
  // allocated, the second's is not.
  std::size_t const taken = full.bytes;
  full.release();
  full.blocks.push_back(allocate<double, sim_space>(sim0, (taken - slab * 3 / 2) / sizeof(double)));
  deallocate(allocate<double, sim_space>(sim0, slab / sizeof(double)));  // one fits
  EXPECT_THROW(h.recut({16, 46}), out_of_memory);
  EXPECT_EQ(h.cuts(), (std::vector<index_t>{0, 16, 32, 48}));
  EXPECT_EQ(field(), before);
  // The first slab was given back: one more fits.
  deallocate(allocate<double, sim_space>(sim0, slab / sizeof(double)));
  sweeps += h.iterate(2, apps::jacobi_update{}).iterations;
  EXPECT_EQ(field(), apps::jacobi_reference(init, rows, cols, 2.0, sweeps));
  full.release();
  h.recut({16, 46});
  EXPECT_EQ(h.cuts(), (std::vector<index_t>{0, 16, 46, 48}));
  sweeps += h.iterate(3, apps::jacobi_update{}).iterations;
  EXPECT_EQ(field(), apps::jacobi_reference(init, rows, cols, 2.0, sweeps));
}

}  // namespace
