// Tensors in graphs (Ripple §5.3.3-5.4): split per block (Listing 7), split then reduce
// (Listing 8), concurrent padded access with double buffering (Listing 10, Figure 7) and
// exclusive padded access (Listing 11, Figure 9), each against a sequential reference at
// every one of 100 runs.
#include "kernels.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace strata;
using tensor_test::bump;
using tensor_test::gather;
using tensor_test::places;
using tensor_test::scatter;
using tensor_test::smooth;
using tensor_test::smooth_ref;
using tensor_test::start_values;

namespace {

class TensorGraph : public ::testing::TestWithParam<std::string> {};

TEST_P(TensorGraph, SplitSaxpyIsOneNodePerBlock) {
  auto p = places(GetParam());
  index_t const n = 10'000;
  tensor_spec<1> s{.extent = {n}, .partitions = {4}, .sub_partitions = {2}};
  tensor<float, 1> x(p, s), y(p, s);
  fill(x, 1.0f).wait();
  fill(y, 0.0f).wait();
  graph g;
  g.split([] STRATA_FN(auto& x_it, auto& y_it, float a) { *y_it = a * (*x_it) + (*y_it); }, x, y,
          4.0f);
  EXPECT_EQ(g.size(), 8u);
  for (int run = 1; run <= 5; ++run) {
    strata::run(g).wait();
    auto out = gather(y);
    for (auto v : out) ASSERT_EQ(v, 4.0f * static_cast<float>(run));
  }
}

TEST_P(TensorGraph, SplitThenReduce) {
  // Listing 8: each block set to 1, then a sum of the whole tensor.
  auto p = places(GetParam());
  index_t const n = 12'345;
  tensor<double, 1> x(p, tensor_spec<1>{.extent = {n}, .partitions = {4}});
  reduction_result<double> result(0.0);
  graph g;
  g.split([] STRATA_FN(auto& it) { *it = 1.0; }, x).then_reduce(x, result, reduce_sum{});
  for (int run = 0; run < 3; ++run) {
    strata::run(g).wait();
    EXPECT_TRUE(result.complete());
    EXPECT_EQ(result.value(), static_cast<double>(n));
  }
}

TEST_P(TensorGraph, ConcurrentPaddedAccessDoubleBufferedEqualsSequentialAtEveryRun) {
  auto p = places(GetParam());
  index_t const n = 4'099;
  tensor_test::periodic_pair xy(p, n, 1);
  auto &x = xy.x, &y = xy.y;
  auto& ref = xy.ref;
  graph g;
  g.then_split(smooth{}, concurrent_padded_access(x), y)
      .then_split(smooth{}, concurrent_padded_access(y), x);
  for (int run = 0; run < 100; ++run) {
    strata::run(g).wait();
    ref = smooth_ref(smooth_ref(ref));
    ASSERT_EQ(gather(x), ref) << "run " << run;
  }
}

TEST_P(TensorGraph, ExclusivePaddedAccessReadsNeighboursBeforeTheyAreWritten) {
  auto p = places(GetParam());
  index_t const n = 1'000;
  tensor_spec<1> s{.extent = {n}, .partitions = {4}, .sub_partitions = {2}, .padding = 1};
  tensor<std::int64_t, 1> x(p, s);
  set_boundary(x, boundary::constant<std::int64_t>{11});
  std::vector<std::int64_t> ref(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = static_cast<std::int64_t>(i % 13);
  scatter(x, ref);
  auto const& cuts = x.cuts(0);
  auto step = [&](std::vector<std::int64_t> const& in) {
    std::vector<std::int64_t> out(in.size());
    for (std::size_t b = 0; b + 1 < cuts.size(); ++b) {
      auto lo = static_cast<std::size_t>(cuts[b]), hi = static_cast<std::size_t>(cuts[b + 1]);
      for (auto i = lo; i < hi; ++i) {
        auto v = in[i] * 3 % 1000003;
        if (i == lo) v += i == 0 ? 11 : in[i - 1];
        if (i + 1 == hi) v += 5 * (i + 1 == in.size() ? 11 : in[i + 1]);
        out[i] = v % 1000003;
      }
    }
    return out;
  };
  graph g;
  g.then_split(bump{}, exclusive_padded_access(x)).then_split(bump{}, exclusive_padded_access(x));
  for (int run = 0; run < 100; ++run) {
    strata::run(g).wait();
    ref = step(step(ref));
    ASSERT_EQ(gather(x), ref) << "run " << run;
  }
}

// Found by an outside probe: a graph built before set_boundary(t, periodic) kept the
// non-periodic dependencies (no wrap-around edges) and gave wrong halos at most runs,
// silently. Its padding-load nodes now fail with an error saying so.
TEST_P(TensorGraph, ABoundaryMadePeriodicAfterTheGraphWasBuiltIsAnError) {
  auto p = places(GetParam());
  tensor_spec<1> s{.extent = {16}, .partitions = {4}, .padding = 1};
  tensor<std::int64_t, 1> x(p, s);
  fill(x, std::int64_t{1}).wait();
  tensor<std::int64_t, 1> y(p, s);
  graph a, b, d;
  a.then_split(bump{}, exclusive_padded_access(x));
  b.then_split(load_padding, x);
  d.then_split(smooth{}, concurrent_padded_access(x), y);  // loads and kernel in one node
  set_boundary(x, boundary::periodic{});
  for (auto* g : {&a, &b, &d}) {
    try {
      strata::run(*g).wait();
      ADD_FAILURE() << "no error";
    } catch (invalid_argument const& e) {
      EXPECT_NE(std::string(e.what()).find("periodic"), std::string::npos) << e.what();
    }
  }
  // Built after set_boundary: runs.
  graph c;
  c.then_split(bump{}, exclusive_padded_access(x));
  strata::run(c).wait();
}

TEST_P(TensorGraph, TwoDimensionalStencilWithCornersOverManyRuns) {
  auto p = places(GetParam());
  tensor_spec<2> s{.extent = {37, 29}, .partitions = {2, 2}, .padding = 1};
  tensor<double, 2> a(p, s), b(p, s);
  set_boundary(a, boundary::copy{});
  set_boundary(b, boundary::copy{});
  auto nine = [] STRATA_FN(auto& in, auto& out) {
    double acc = 0;
    for (int i = -1; i <= 1; ++i)
      for (int j = -1; j <= 1; ++j) acc += *in.offset(0, i).offset(1, j);
    *out = acc / 9.0;
  };
  std::vector<double> ref(37 * 29);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = static_cast<double>((i * 13) % 17);
  scatter(a, ref);
  auto step = [](std::vector<double> const& in) {
    std::vector<double> out(in.size());
    auto at = [&](index_t i, index_t j) {
      i = i < 0 ? 0 : (i > 36 ? 36 : i);
      j = j < 0 ? 0 : (j > 28 ? 28 : j);
      return in[static_cast<std::size_t>(i * 29 + j)];
    };
    for (index_t i = 0; i < 37; ++i)
      for (index_t j = 0; j < 29; ++j) {
        double acc = 0;
        for (int di = -1; di <= 1; ++di)
          for (int dj = -1; dj <= 1; ++dj) acc += at(i + di, j + dj);
        out[static_cast<std::size_t>(i * 29 + j)] = acc / 9.0;
      }
    return out;
  };
  graph g;
  g.then_split(nine, concurrent_padded_access(a), b)
      .then_split(nine, concurrent_padded_access(b), a);
  for (int run = 0; run < 20; ++run) {
    strata::run(g).wait();
    ref = step(step(ref));
    auto out = gather(a);
    for (std::size_t i = 0; i < out.size(); ++i)
      ASSERT_DOUBLE_EQ(out[i], ref[i]) << run << " " << i;
  }
}

// A reduction whose transform computes the value of each cell (one pass per block: no
// tensor of values, no kernel between), on uneven blocks whose rows are not whole tiles
// of the fold's row loop, in 1, 2 and 3 dimensions; integers, so every order of
// combining gives the same sum.
std::int64_t cell_value_at(std::int64_t k) {
  return (k * 7919) % 1001 - 500;
}

TEST_P(TensorGraph, TransformReduceFoldsEachCellsValue) {
  auto p = places(GetParam());
  auto squares = [] STRATA_FN(auto& it) { return *it * *it; };
  auto index_weighted = [] STRATA_FN(auto& it) { return *it * (it.global_index(0) + 1); };
  {
    tensor<std::int64_t, 1> t(p, tensor_spec<1>{.extent = {1'031}, .partitions = {3}});
    std::vector<std::int64_t> v(1'031);
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = cell_value_at(static_cast<std::int64_t>(k));
    scatter(t, v);
    std::int64_t sq = 0, w = 0;
    for (std::size_t k = 0; k < v.size(); ++k) {
      sq += v[k] * v[k];
      w += v[k] * static_cast<std::int64_t>(k + 1);
    }
    EXPECT_EQ(transform_reduce(t, std::int64_t{0}, reduce_sum{}, squares), sq);
    EXPECT_EQ(transform_reduce(t, std::int64_t{0}, reduce_sum{}, index_weighted), w);
  }
  {
    index_t const rows = 37, cols = 53;
    tensor<std::int64_t, 2> t(
        p, tensor_spec<2>{.extent = {rows, cols}, .partitions = {3, 2}, .sub_partitions = {1, 2}});
    std::vector<std::int64_t> v(static_cast<std::size_t>(rows * cols));
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = cell_value_at(static_cast<std::int64_t>(k));
    scatter(t, v);
    std::int64_t sq = 0, top = v[0];
    for (auto x : v) {
      sq += x * x;
      top = std::max(top, x * x);
    }
    EXPECT_EQ(transform_reduce(t, std::int64_t{0}, reduce_sum{}, squares), sq);
    // In a graph, after a split that writes the tensor: each block's fold after its writer.
    reduction_result<std::int64_t> result(std::int64_t{0});
    graph g;
    g.split([] STRATA_FN(auto& it) { *it = -*it; }, t)
        .then_reduce(t, result, reduce_max{}, squares);
    for (int run = 0; run < 3; ++run) {
      strata::run(g).wait();
      ASSERT_TRUE(result.complete());
      EXPECT_EQ(result.value(), top) << "run " << run;
    }
  }
  {
    tensor<std::int64_t, 3> t(p, tensor_spec<3>{.extent = {5, 7, 19}, .partitions = {2, 1, 1}});
    std::vector<std::int64_t> v(5 * 7 * 19);
    for (std::size_t k = 0; k < v.size(); ++k) v[k] = cell_value_at(static_cast<std::int64_t>(k));
    scatter(t, v);
    std::int64_t sq = 0;
    for (auto x : v) sq += x * x;
    EXPECT_EQ(transform_reduce(t, std::int64_t{0}, reduce_sum{}, squares), sq);
  }
}

TEST_P(TensorGraph, TransformReduceReadsTheLoadedPadding) {
  // The transform moves its iterator into the padding: sum of x[i + 1] - x[i] telescopes
  // to the copied edge minus the first cell.
  auto p = places(GetParam());
  index_t const n = 997;
  tensor<std::int64_t, 1> x(p, tensor_spec<1>{.extent = {n}, .partitions = {4}, .padding = 1});
  set_boundary(x, boundary::copy{});
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = cell_value_at(static_cast<std::int64_t>(k));
  scatter(x, v);
  load_padding(x).wait();
  auto forward = [] STRATA_FN(auto& it) { return *it.offset(0, 1) - *it; };
  EXPECT_EQ(transform_reduce(x, std::int64_t{0}, reduce_sum{}, forward), v.back() - v.front());
}

// A reducing split: the kernel writes its cell and returns a value, folded in the same
// pass (the Eikonal solve's active flags). Padded reads of neighbours written by the level
// before, uneven blocks, 100 runs against the sequential reference.
struct smooth_returning {
  template <class In, class Out>
  STRATA_FN std::int64_t operator()(In& in, Out& out) const {
    tensor_test::smooth{}(in, out);
    return *out % 17;
  }
};

TEST_P(TensorGraph, SplitReduceFoldsWhatTheKernelReturnsAsItWrites) {
  auto p = places(GetParam());
  index_t const n = 2'053;
  tensor_test::periodic_pair xy(p, n, 1);
  auto &x = xy.x, &y = xy.y;
  auto& ref = xy.ref;
  reduction_result<std::int64_t> sum(std::int64_t{0}), top(std::int64_t{-1});
  graph g;
  g.then_split_reduce(sum, reduce_sum{}, smooth_returning{}, concurrent_padded_access(x), y)
      .then_split_reduce(top, reduce_max{}, smooth_returning{}, concurrent_padded_access(y), x);
  EXPECT_EQ(g.size(), 2 * x.blocks() + 2);  // a node per block and a final one, per level
  for (int run = 0; run < 100; ++run) {
    strata::run(g).wait();
    auto const mid = smooth_ref(ref);
    ref = smooth_ref(mid);
    std::int64_t want_sum = 0, want_top = -1;
    for (auto v : mid) want_sum += v % 17;
    for (auto v : ref) want_top = std::max(want_top, v % 17);
    ASSERT_EQ(gather(x), ref) << "run " << run;
    ASSERT_TRUE(sum.complete() && top.complete());
    ASSERT_EQ(sum.value(), want_sum) << "run " << run;
    ASSERT_EQ(top.value(), want_top) << "run " << run;
  }
}

// The minimum and maximum of integers fold with one accumulator per lane of a row's tiles
// (tensor_detail::any_order_fold): rows shorter than a tile, rows with a tail, the extreme
// in the first row (the running value every later row's lanes start from), in a tail, and
// in every lane position, signed and unsigned, against the sequential fold.
TEST_P(TensorGraph, SplitReduceMinAndMaxOfIntegersMatchTheSequentialFold) {
  auto p = places(GetParam());
  std::uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1664525u + 1013904223u;
    return seed;
  };
  for (vec<2> extent : {vec<2>{3, 9}, vec<2>{2, 20}, vec<2>{5, 203}, vec<2>{17, 64}}) {
    tensor_spec<2> s{.extent = extent, .partitions = {1, 2}};
    tensor<std::int32_t, 2> x(p, s), y(p, s);
    auto const copy_out = [] STRATA_FN(auto& in, auto& out) {
      *out = *in;
      return *in;
    };
    auto const as_u16 = [] STRATA_FN(auto& in, auto& out) {
      *out = *in;
      return static_cast<std::uint16_t>(*in & 0xffff);
    };
    reduction_result<std::int32_t> lo(std::numeric_limits<std::int32_t>::max()),
        hi(std::numeric_limits<std::int32_t>::min());
    reduction_result<std::uint16_t> top(std::uint16_t{0});
    graph g;
    g.split_reduce(lo, reduce_min{}, copy_out, x, y)
        .then_split_reduce(hi, reduce_max{}, copy_out, y, x)
        .then_split_reduce(top, reduce_max{}, as_u16, x, y);
    auto const cells = static_cast<std::size_t>(extent.product());
    // Where the extremes go: each cell in turn for the small shapes (2 x 20: rows of a
    // tile and a tail, every lane and tail position), else random places.
    for (std::size_t round = 0; round < std::min<std::size_t>(cells, 40); ++round) {
      std::vector<std::int32_t> v(cells);
      for (auto& e : v) e = static_cast<std::int32_t>(next() % 2001) - 1000;
      std::size_t const at_lo = cells <= 40 ? round : next() % cells;
      std::size_t const at_hi = cells <= 40 ? cells - 1 - round : next() % cells;
      v[at_lo] = -5000 - static_cast<std::int32_t>(round);
      v[at_hi] = 0x7000 + static_cast<std::int32_t>(round);
      scatter(x, v);
      strata::run(g).wait();
      std::int32_t want_lo = std::numeric_limits<std::int32_t>::max();
      std::int32_t want_hi = std::numeric_limits<std::int32_t>::min();
      std::uint16_t want_top = 0;
      for (auto e : v) {
        want_lo = std::min(want_lo, e);
        want_hi = std::max(want_hi, e);
        want_top = std::max(want_top, static_cast<std::uint16_t>(e & 0xffff));
      }
      ASSERT_EQ(lo.value_and_reset(), want_lo) << extent[0] << "x" << extent[1] << " " << round;
      ASSERT_EQ(hi.value_and_reset(), want_hi) << extent[0] << "x" << extent[1] << " " << round;
      ASSERT_EQ(top.value_and_reset(), want_top) << extent[0] << "x" << extent[1] << " " << round;
    }
  }
}

TEST_P(TensorGraph, SplitReduceRejectsArgumentsItCannotFold) {
  auto p = places(GetParam());
  tensor_spec<1> s{.extent = {64}, .partitions = {2}, .padding = 2};
  tensor<std::int64_t, 1> x(p, s), y(p, s);
  reduction_result<std::int64_t> r(std::int64_t{0});
  auto const returning = [] STRATA_FN(auto& in, auto& out) {
    *out = *in;
    return *in;
  };
  graph g;
  EXPECT_THROW(g.split_reduce(r, reduce_sum{}, returning, expanded(x, 1), y), invalid_argument);
  EXPECT_THROW(g.split_reduce(r, reduce_sum{}, returning, exclusive_padded_access(x), y),
               invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Places, TensorGraph, ::testing::Values("host", "sim1", "sim2", "sim4"));

}  // namespace
