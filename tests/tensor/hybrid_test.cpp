// The hybrid 2-D stencil scheme (hybrid-2d-stencil-scheme §2, §4): Jacobi bitwise equal to
// a sequential sweep and the 8-neighbour shortest path equal to Dijkstra, for every device
// mix and cut; frontier skipping; bad input; a throwing kernel.
#include "stencil_kernels.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace strata;
using tensor_test::rt;

namespace {

std::vector<place> mix(std::string const& name) {
  auto host = tensor_test::host();
  auto sims = tensor_test::sim_devices(3);
  if (name == "cpu") return host;
  if (name == "cpu+sim") return {host[0], sims[0]};
  if (name == "sim+cpu+sim") return {sims[0], host[0], sims[1]};
  if (name == "2sim") return {sims[0], sims[1]};
  // One PU for the host strip: its kernels, an early corpus and the graph's nodes share it.
  if (name == "pu+sim")
    return {rt().machine().slice(isa::host).descendants(place_type::pu)[0], sims[0]};
  return {sims[0], host[0], sims[1], sims[2]};  // "4 strips"
}

// The cell updates and references shared with the apps and benchmarks (apps/common).
using jacobi = apps::jacobi_update;
using path_step = apps::path_update;
using apps::dijkstra;

std::vector<double> jacobi_ref(std::vector<double> a, index_t rows, index_t cols, double edge,
                               long iterations) {
  return apps::jacobi_reference(std::move(a), rows, cols, edge, iterations);
}

class Hybrid : public ::testing::TestWithParam<std::string> {};

TEST_P(Hybrid, JacobiEqualsASequentialSweepBitwise) {
  rt();
  index_t const rows = 41, cols = 29;
  auto devices = mix(GetParam());
  std::vector<double> init(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < init.size(); ++i) init[i] = static_cast<double>((i * 37) % 11);
  auto const n = devices.size();
  // Even strips, then cut lines moved around (one-row strips included).
  std::vector<std::vector<index_t>> cut_sets{{}};
  if (n == 2) cut_sets.push_back({1}), cut_sets.push_back({30});
  if (n == 3) cut_sets.push_back({5, 6}), cut_sets.push_back({20, 39});
  if (n == 4) cut_sets.push_back({2, 4, 40});
  for (auto const& cuts : cut_sets) {
    hybrid_stencil<double> h(
        {rows, cols}, {.devices = devices, .cuts = cuts, .boundary = 1.5, .max_iterations = 37});
    h.set(view<double, 2>(ptr<double, host_space>(init.data(), 0), vec<2>{rows, cols}));
    auto r = h.solve(jacobi{});
    EXPECT_EQ(r.iterations, 37);
    std::vector<double> out(init.size());
    h.get(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{rows, cols}));
    auto ref = jacobi_ref(init, rows, cols, 1.5, 37);
    for (std::size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], ref[i]) << GetParam() << " cell " << i << " cuts " << cuts.size();
  }
}

TEST_P(Hybrid, JacobiToAToleranceStopsAtTheFirstSweepBelowIt) {
  rt();
  index_t const rows = 23, cols = 17;
  double const tol = 1e-3;
  auto devices = mix(GetParam());
  std::vector<double> init(static_cast<std::size_t>(rows * cols), 0.0);
  hybrid_stencil<double> h({rows, cols}, {.devices = devices, .boundary = 1.0, .tolerance = tol});
  h.set(view<double, 2>(ptr<double, host_space>(init.data(), 0), vec<2>{rows, cols}));
  auto r = h.solve(jacobi{});
  ASSERT_TRUE(r.converged);
  // The sequential sweeps' largest change: above the tolerance before the last sweep.
  auto prev = jacobi_ref(init, rows, cols, 1.0, r.iterations - 1);
  auto last = jacobi_ref(prev, rows, cols, 1.0, 1);
  auto before = jacobi_ref(init, rows, cols, 1.0, r.iterations - 2);
  double change_last = 0, change_before = 0;
  for (std::size_t i = 0; i < last.size(); ++i) {
    change_last = std::max(change_last, std::abs(last[i] - prev[i]));
    change_before = std::max(change_before, std::abs(prev[i] - before[i]));
  }
  EXPECT_EQ(r.max_change, change_last);
  EXPECT_LE(change_last, tol);
  EXPECT_GT(change_before, tol);
  std::vector<double> out(init.size());
  h.get(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{rows, cols}));
  EXPECT_EQ(out, last);
}

TEST_P(Hybrid, ShortestPathEqualsDijkstraAndSkipsUnchangedFrontiers) {
  rt();
  index_t const rows = 37, cols = 23;
  double const h = 30.0, inf = std::numeric_limits<double>::infinity();
  auto devices = mix(GetParam());
  std::vector<double> z(static_cast<std::size_t>(rows * cols));
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j)
      z[static_cast<std::size_t>(i * cols + j)] =
          100.0 * std::sin(0.3 * static_cast<double>(i)) * std::cos(0.2 * static_cast<double>(j)) +
          static_cast<double>((i * 7 + j * 13) % 17);
  auto ref = dijkstra(z, rows, cols, h, 3, 11);
  for (bool skip : {true, false}) {
    hybrid_stencil<double> hs(
        {rows, cols}, {.devices = devices, .boundary = inf, .skip_unchanged_frontiers = skip});
    std::vector<double> cost(z.size(), inf);
    cost[3 * cols + 11] = 0;
    hs.set(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
    tensor<double, 2> elevation(hs.devices(), hs.spec());
    set_boundary(elevation, boundary::constant<double>{0.0});
    copy(elevation, view<double, 2>(ptr<double, host_space>(z.data(), 0), vec<2>{rows, cols}))
        .wait();
    auto r = hs.solve(path_step{}, elevation, h);
    EXPECT_TRUE(r.converged);
    hs.get(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
    for (std::size_t i = 0; i < cost.size(); ++i)
      ASSERT_NEAR(cost[i], ref[i], 1e-9 * ref[i]) << GetParam() << " cell " << i;
    if (devices.size() > 1 && skip) {
      EXPECT_GT(r.frontiers_skipped, 0u) << "nothing skipped";
    }
    if (!skip) {
      EXPECT_EQ(r.frontiers_skipped, 0u);
    }
  }
}

// A cell that changes a number of times (its row's limit), then never again: frontiers
// that stop changing while their neighbours go on. Not monotone (unlike path costs), so a
// stale frontier in either buffer shows in the result.
struct counted {
  double v;
  int n;
  friend STRATA_FN bool operator!=(counted const& a, counted const& b) {
    return a.v != b.v || a.n != b.n;
  }
};

struct counted_jacobi {
  index_t stop_row;  // rows before it stop after `low` updates, the others after `high`
  int low = 3, high = 40;
  template <class It>
  STRATA_FN counted operator()(It& in) const {
    counted c = *in;
    if (c.n >= (in.global_index(0) < stop_row ? low : high)) return c;
    double s = in.offset(0, -1)->v + in.offset(0, 1)->v + in.offset(1, -1)->v + in.offset(1, 1)->v;
    return {0.25 * s + 1.0, c.n + 1};
  }
};

std::vector<counted> counted_ref(std::vector<counted> a, index_t rows, index_t cols, counted edge,
                                 index_t stop_row, long iterations, int low = 3, int high = 40) {
  auto at = [&](std::vector<counted> const& v, index_t i, index_t j) {
    if (i < 0 || j < 0 || i >= rows || j >= cols) return edge;
    return v[static_cast<std::size_t>(i * cols + j)];
  };
  std::vector<counted> b(a.size());
  for (long it = 0; it < iterations; ++it) {
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < cols; ++j) {
        counted c = at(a, i, j);
        if (c.n < (i < stop_row ? low : high)) {
          double s = at(a, i - 1, j).v + at(a, i + 1, j).v + at(a, i, j - 1).v + at(a, i, j + 1).v;
          c = {0.25 * s + 1.0, c.n + 1};
        }
        b[static_cast<std::size_t>(i * cols + j)] = c;
      }
    std::swap(a, b);
  }
  return a;
}

TEST_P(Hybrid, FrontiersThatStopChangingStayRightInBothBuffers) {
  rt();
  index_t const rows = 30, cols = 9;
  auto devices = mix(GetParam());
  std::vector<counted> init(static_cast<std::size_t>(rows * cols), counted{0.0, 0});
  for (std::size_t i = 0; i < init.size(); ++i) init[i].v = static_cast<double>(i % 7);
  counted const edge{2.0, 0};
  for (index_t stop_row : {index_t{8}, index_t{15}, index_t{22}}) {
    hybrid_stencil<counted> h({rows, cols}, {.devices = devices, .boundary = edge});
    h.set(view<counted, 2>(ptr<counted, host_space>(init.data(), 0), vec<2>{rows, cols}));
    // Two solves: the second starts from buffers the first left behind.
    auto r1 = h.solve(counted_jacobi{stop_row});
    EXPECT_TRUE(r1.converged);
    auto r2 = h.solve(counted_jacobi{stop_row});
    EXPECT_EQ(r2.iterations, 1);
    std::vector<counted> out(init.size());
    h.get(view<counted, 2>(ptr<counted, host_space>(out.data(), 0), vec<2>{rows, cols}));
    auto ref = counted_ref(init, rows, cols, edge, stop_row, r1.iterations);
    for (std::size_t i = 0; i < out.size(); ++i)
      ASSERT_FALSE(out[i] != ref[i])
          << GetParam() << " stop " << stop_row << " cell " << i << ": " << out[i].v << "/"
          << out[i].n << " vs " << ref[i].v << "/" << ref[i].n;
    // A solve cut short while frontiers still change leaves the other buffer's padding one
    // iteration old; the next solve freezes those frontiers at once and must still see them.
    hybrid_stencil<counted> cut({rows, cols}, {.devices = devices, .boundary = edge});
    cut.set(view<counted, 2>(ptr<counted, host_space>(init.data(), 0), vec<2>{rows, cols}));
    auto short_run = cut.iterate(2, counted_jacobi{stop_row, 1000, 1000});
    EXPECT_EQ(short_run.iterations, 2);
    auto r3 = cut.solve(counted_jacobi{stop_row, 2, 30});
    EXPECT_TRUE(r3.converged);
    cut.get(view<counted, 2>(ptr<counted, host_space>(out.data(), 0), vec<2>{rows, cols}));
    auto two = counted_ref(init, rows, cols, edge, stop_row, 2, 1000, 1000);
    auto ref3 = counted_ref(two, rows, cols, edge, stop_row, r3.iterations, 2, 30);
    for (std::size_t i = 0; i < out.size(); ++i)
      ASSERT_FALSE(out[i] != ref3[i]) << GetParam() << " stop " << stop_row << " cell " << i;
  }
}

// The largest change decides convergence: a NaN must never be lost on the way (per cell,
// per thread, per strip and between strips), an infinite change is a change, and infinity
// staying infinity is none.
TEST_P(Hybrid, NaNAndInfiniteChangesAreNeverTakenForConvergence) {
  rt();
  index_t const rows = 13, cols = 11;
  auto devices = mix(GetParam());
  double const inf = std::numeric_limits<double>::infinity();
  auto solve = [&](std::vector<double> init, double edge, double tol, long limit) {
    hybrid_stencil<double> h(
        {rows, cols},
        {.devices = devices, .boundary = edge, .tolerance = tol, .max_iterations = limit});
    h.set(view<double, 2>(ptr<double, host_space>(init.data(), 0), vec<2>{rows, cols}));
    return h.solve(jacobi{});
  };
  std::vector<double> zeros(static_cast<std::size_t>(rows * cols), 0.0);
  for (index_t row :
       {index_t{0}, index_t{6}, rows - 1}) {  // in the first, a middle, the last strip
    auto nan = zeros;
    nan[static_cast<std::size_t>(row * cols + 5)] = std::numeric_limits<double>::quiet_NaN();
    auto r = solve(nan, 0.0, 1e-3, 5);
    EXPECT_FALSE(r.converged) << GetParam() << " NaN in row " << row;
    EXPECT_TRUE(std::isnan(r.max_change)) << GetParam() << " row " << row << ": " << r.max_change;
    EXPECT_EQ(r.iterations, 5);
    auto big = zeros;
    big[static_cast<std::size_t>(row * cols + 5)] = inf;
    r = solve(big, 0.0, 1e-3, 1);
    EXPECT_FALSE(r.converged) << GetParam() << " infinity in row " << row;
    EXPECT_EQ(r.max_change, inf) << GetParam() << " row " << row;
  }
  auto r = solve(std::vector<double>(zeros.size(), inf), inf, 0.0, 10);
  EXPECT_TRUE(r.converged) << GetParam();
  EXPECT_EQ(r.iterations, 1);
  EXPECT_EQ(r.max_change, 0.0);
}

// Integer cells above 2^53 change by 1 while their difference in double is 0: still a
// change (a solve to "nothing changes" must go on).
struct step_up {
  template <class It>
  STRATA_FN std::int64_t operator()(It& in) const {
    return *in + 1;
  }
};
TEST_P(Hybrid, IntegerChangesThatRoundAwayInDoubleStillCount) {
  rt();
  index_t const rows = 9, cols = 7;
  std::int64_t const big = (std::int64_t{1} << 60) + 1;
  std::vector<std::int64_t> init(static_cast<std::size_t>(rows * cols), big);
  hybrid_stencil<std::int64_t> h(
      {rows, cols}, {.devices = mix(GetParam()), .boundary = big, .max_iterations = 4});
  h.set(view<std::int64_t, 2>(ptr<std::int64_t, host_space>(init.data(), 0), vec<2>{rows, cols}));
  auto r = h.solve(step_up{});
  EXPECT_FALSE(r.converged) << GetParam();
  EXPECT_EQ(r.iterations, 4);
  std::vector<std::int64_t> out(init.size());
  h.get(view<std::int64_t, 2>(ptr<std::int64_t, host_space>(out.data(), 0), vec<2>{rows, cols}));
  for (auto v : out) ASSERT_EQ(v, big + 4) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Mixes, Hybrid,
                         ::testing::Values("cpu", "cpu+sim", "sim+cpu+sim", "2sim", "4strips",
                                           "pu+sim"));

TEST(HybridErrors, BadCutsAndDevicesAreClearErrors) {
  rt();
  auto d = mix("cpu+sim");
  EXPECT_THROW(hybrid_stencil<double>({10, 10}, {}), invalid_argument);
  EXPECT_THROW(hybrid_stencil<double>({10, 10}, {.devices = d, .cuts = {0}}), invalid_argument);
  EXPECT_THROW(hybrid_stencil<double>({10, 10}, {.devices = d, .cuts = {10}}), invalid_argument);
  EXPECT_THROW(hybrid_stencil<double>({10, 10}, {.devices = d, .cuts = {3, 5}}), invalid_argument);
  EXPECT_THROW(hybrid_stencil<double>({10, 10}, {.devices = d, .weights = {1.0}}),
               invalid_argument);
  hybrid_stencil<double> h({10, 10}, {.devices = d});
  tensor<double, 2> other(d, tensor_spec<2>{.extent = {10, 10}, .partitions = {1, 1}});
  EXPECT_THROW(h.solve(path_step{}, other, 1.0), invalid_argument);
  // Bad knobs (an outside probe): a NaN or negative tolerance, no sweeps to time.
  double const nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  for (double t : {nan, -1e-9, inf})
    EXPECT_THROW(hybrid_stencil<double>({10, 10}, {.devices = d, .tolerance = t}), invalid_argument)
        << t;
  EXPECT_THROW((void)h.measure_speeds(0, jacobi{}), invalid_argument);
  EXPECT_THROW((void)h.measure_speeds(-3, jacobi{}), invalid_argument);
}

struct throws_on_row {
  index_t bad;
  template <class It>
  STRATA_FN double operator()(It& in) const {
    if (in.global_index(0) == bad) throw std::runtime_error("cell update failed");
    return *in;
  }
};

TEST(HybridErrors, AThrowingKernelEndsTheSolveWithItsError) {
  rt();
  hybrid_stencil<double> h({20, 8}, {.devices = mix("sim+cpu+sim"), .max_iterations = 10});
  for (index_t bad : {0, 7, 19})
    EXPECT_THROW(h.solve(throws_on_row{bad}), std::runtime_error) << bad;
}

// Early corpus kernels (hybrid_options::early_corpus, §5-6): the next iteration's corpus
// is queued while this one's flags travel. Converging solves (Jacobi to a tolerance, path
// costs to no change) give the same field and iteration count, bitwise, with it on and
// off, on every mix and with cuts that leave strips without a corpus (one or two rows).
TEST_P(Hybrid, EarlyCorpusGivesTheSameSolveBitwise) {
  rt();
  auto devices = mix(GetParam());
  auto const n = devices.size();
  // A small grid solved to a tolerance (an early corpus dropped at the end), and one large
  // enough that a host strip's kernels run on the pool for a while (an early corpus that
  // did not wait for its strip's kernels would read rows still being written).
  struct size_case {
    index_t rows, cols;
    double tolerance;
    long max_iterations;
  };
  for (auto const sc : {size_case{37, 23, 1e-3, 1L << 40}, size_case{301, 257, 0, 9}}) {
    index_t const rows = sc.rows, cols = sc.cols;
    std::vector<std::vector<index_t>> cut_sets{{}};
    if (n == 2) cut_sets.push_back({2});
    if (n == 3) cut_sets.push_back({1, 3});
    if (n == 4) cut_sets.push_back({2, 3, rows - 2});
    std::vector<double> init(static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < init.size(); ++i) init[i] = static_cast<double>((i * 29) % 13);
    view<double, 2> iv(ptr<double, host_space>(init.data(), 0), vec<2>{rows, cols});
    for (auto const& cuts : cut_sets) {
      std::vector<double> out[2], after[2];
      hybrid_result res[2];
      for (int early = 0; early < 2; ++early) {
        hybrid_stencil<double> h({rows, cols}, {.devices = devices,
                                                .cuts = cuts,
                                                .boundary = 2.0,
                                                .tolerance = sc.tolerance,
                                                .max_iterations = sc.max_iterations,
                                                .early_corpus = early == 1});
        h.set(iv);
        res[early] = h.solve(jacobi{});
        out[early].resize(init.size());
        h.get(view<double, 2>(ptr<double, host_space>(out[early].data(), 0), vec<2>{rows, cols}));
        // The solve goes on from where it stopped: a corpus started for an iteration that
        // did not run has left nothing behind that the next sweep would see.
        h.iterate(1, jacobi{});
        after[early].resize(init.size());
        h.get(view<double, 2>(ptr<double, host_space>(after[early].data(), 0), vec<2>{rows, cols}));
      }
      std::string const what =
          GetParam() + " " + std::to_string(rows) + " rows, cuts " + std::to_string(cuts.size());
      EXPECT_TRUE(res[1].converged || sc.tolerance == 0) << what;
      EXPECT_EQ(res[0].iterations, res[1].iterations) << what;
      EXPECT_EQ(out[0], out[1]) << what;
      EXPECT_EQ(out[1], jacobi_ref(init, rows, cols, 2.0, res[1].iterations)) << what;
      EXPECT_EQ(after[1], jacobi_ref(init, rows, cols, 2.0, res[1].iterations + 1)) << what;
      EXPECT_EQ(after[0], after[1]) << what;
    }
  }
}

/// Copies its cell, and throws once cell `at` has been updated more than `calls` times.
struct throws_after_calls {
  index_t at;
  int calls;
  std::atomic<int>* seen;
  template <class It>
  STRATA_FN double operator()(It& in) const {
    if (in.global_index(0) == at && in.global_index(1) == 0 &&
        seen->fetch_add(1, std::memory_order_relaxed) >= calls)
      throw std::runtime_error("cell update failed");
    return *in;
  }
};

// A corpus started early for an iteration that does not happen (the solve converged) is
// dropped with its error; an early corpus of an iteration that does happen brings its
// error to the solve. Row 3 is in strip 0's corpus on every mix of 20 rows.
TEST(HybridErrors, AnEarlyCorpusRaisesOnlyForAnIterationThatHappens) {
  rt();
  for (auto const& name : {"cpu", "cpu+sim", "sim+cpu+sim", "2sim", "pu+sim"}) {
    std::atomic<int> seen{0};
    hybrid_stencil<double> h({20, 8}, {.devices = mix(name), .boundary = 0.0});
    // Nothing changes: converged after one iteration; the second's corpus, started early,
    // throws and is dropped.
    auto r = h.solve(throws_after_calls{3, 1, &seen});
    EXPECT_TRUE(r.converged) << name;
    EXPECT_EQ(r.iterations, 1) << name;
    EXPECT_LE(seen.load(), 2) << name;
    // Changing cells (Jacobi towards the boundary's 0): the third iteration's corpus throws.
    std::vector<double> ones(160, 1.0);
    h.set(view<double, 2>(ptr<double, host_space>(ones.data(), 0), vec<2>{20, 8}));
    seen = 0;
    auto throwing_jacobi = [&seen](auto& in) {
      if (in.global_index(0) == 3 && in.global_index(1) == 0 &&
          seen.fetch_add(1, std::memory_order_relaxed) >= 2)
        throw std::runtime_error("cell update failed");
      return jacobi{}(in);
    };
    EXPECT_THROW(h.iterate(10, throwing_jacobi), std::runtime_error) << name;
    // The stencil stays usable after the error: set again, it sweeps as it should.
    seen = -1000;
    h.set(view<double, 2>(ptr<double, host_space>(ones.data(), 0), vec<2>{20, 8}));
    EXPECT_EQ(h.iterate(2, throwing_jacobi).iterations, 2) << name;
    std::vector<double> out(ones.size());
    h.get(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{20, 8}));
    EXPECT_EQ(out, jacobi_ref(ones, 20, 8, 0.0, 2)) << name;
  }
}

TEST(Hybrid, MeasuredSpeedsGiveCutLinesInProportion) {
  rt();
  hybrid_stencil<double> h({64, 64}, {.devices = mix("cpu+sim")});
  auto speeds = h.measure_speeds(3, jacobi{});
  ASSERT_EQ(speeds.size(), 2u);
  EXPECT_GT(speeds[0], 0);
  EXPECT_GT(speeds[1], 0);
  auto cuts = h.cuts_for({1.0, 3.0});
  EXPECT_EQ(cuts, std::vector<index_t>{16});
  h.recut(cuts);
  EXPECT_EQ(h.cuts(), (std::vector<index_t>{0, 16, 64}));
  // One speed per device (an outside probe: none gave std::length_error, too many gave
  // cut lines for devices that do not exist).
  EXPECT_THROW((void)h.cuts_for({}), invalid_argument);
  EXPECT_THROW((void)h.cuts_for({1.0, 2.0, 3.0}), invalid_argument);
}

}  // namespace
