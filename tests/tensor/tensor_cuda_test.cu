// Tensors on CUDA GPUs (Ripple §4.1, §5.2-5.4, §6; issue 15: "the same kernel source on
// serial, threads, OpenMP, sim and CUDA"): the host and sim tests' checks with every
// partition on a GPU, and with partitions alternating between the GPU and the host or a
// sim device (halos then cross host<->device and sim<->device). Kernels are functors:
// nvcc compiles every launch of this file for the GPU, and extended lambdas cannot be
// defined in gtest's private test bodies. Without a GPU each test reports skipped with
// the runtime's reason; the compile (every tensor path instantiated by nvcc) is the check.
#include "halo_check.hpp"
#include "kernels.hpp"
#include "stencil_kernels.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

using namespace strata;
using tensor_test::bump;
using tensor_test::check_padding;
using tensor_test::gather;
using tensor_test::places;
using tensor_test::policy;
using tensor_test::saxpy_cell;
using tensor_test::scatter;
using tensor_test::smooth;
using tensor_test::smooth_ref;
using tensor_test::start_values;

namespace {

bool skip_without_gpu(std::string& why) {
  if (!tensor_test::cuda_devices().empty()) return false;
  why = "no CUDA device";
  for (auto const& n : tensor_test::rt().notes())
    if (n.find("CUDA") != std::string::npos) why = n;
  return true;
}

class TensorCuda : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (std::string why; skip_without_gpu(why)) GTEST_SKIP() << why;
  }
};

struct write_indices {
  template <class It>
  STRATA_FN void operator()(It& it) const {
    *it = it.global_index(0) * 1000 + it.global_index(1) +
          (it.index(0) + it.index(1) <= it.global_index(0) + it.global_index(1) ? 0 : 1000000);
  }
};

struct largest_magnitude {
  STRATA_FN double operator()(double acc, double x) const {
    double ax = x < 0 ? -x : x;
    return acc > ax ? acc : ax;
  }
};

struct particle {
  float x, v;
  std::int32_t id;
};

struct start_particle {
  template <class It>
  STRATA_FN void operator()(It& it) const {
    it->id = static_cast<std::int32_t>(it.global_index(0));
    it->x = 0.5f * static_cast<float>(it->id);
    it->v = 2.0f;
  }
};

struct move_particle {
  template <class It>
  STRATA_FN void operator()(It& it, float dt) const {
    it->x += dt * it->v;
  }
};

TEST_P(TensorCuda, ScatterGatherFillAndCopyBetweenPartitionings) {
  auto p = places(GetParam());
  tensor<std::int64_t, 3> a(
      p, tensor_spec<3>{.extent = {5, 9, 13}, .partitions = {1, 2, 2}, .padding = 1});
  tensor<std::int64_t, 3> b(
      places("sim3"),
      tensor_spec<3>{.extent = {5, 9, 13}, .partitions = {3, 1, 1}, .sub_partitions = {1, 2, 1}});
  std::vector<std::int64_t> ref(a.size());
  std::iota(ref.begin(), ref.end(), 7);
  scatter(a, ref);
  EXPECT_EQ(gather(a), ref);
  copy(b, a).wait();
  EXPECT_EQ(gather(b), ref);
  fill(a, std::int64_t{-3}).wait();
  EXPECT_EQ(gather(a), std::vector<std::int64_t>(a.size(), -3));
  copy(a, b).wait();
  EXPECT_EQ(gather(a), ref);
}

TEST_P(TensorCuda, SaxpyOverBlocksMatchesAPlainLoop) {
  auto p = places(GetParam());
  index_t const n = 100'003;
  tensor_spec<1> s{.extent = {n}, .partitions = {4}, .sub_partitions = {2}};
  tensor<float, 1> x(p, s), y(p, s);
  std::vector<float> hx(n), hy(n);
  for (index_t i = 0; i < n; ++i) {
    hx[static_cast<std::size_t>(i)] = static_cast<float>(i % 17);
    hy[static_cast<std::size_t>(i)] = static_cast<float>(i % 5);
  }
  scatter(x, hx);
  scatter(y, hy);
  for_each_cell(saxpy_cell{}, x, y, 2.0f).wait();
  auto out = gather(y);
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 2.0f * hx[i] + hy[i]) << i;
}

TEST_P(TensorCuda, IteratorsKnowTheirGlobalAndBlockIndices) {
  auto p = places(GetParam());
  tensor<std::int64_t, 2> t(
      p, tensor_spec<2>{
             .extent = {37, 23}, .partitions = {2, 2}, .sub_partitions = {2, 1}, .padding = 2});
  for_each_cell(write_indices{}, t).wait();
  auto out = gather(t);
  for (index_t i = 0; i < 37; ++i)
    for (index_t j = 0; j < 23; ++j)
      ASSERT_EQ(out[static_cast<std::size_t>(i * 23 + j)], i * 1000 + j);
}

TEST_P(TensorCuda, ReductionsMatchASequentialFold) {
  auto p = places(GetParam());
  tensor<double, 2> t(p, tensor_spec<2>{.extent = {301, 77}, .partitions = {2, 2}, .padding = 1});
  std::vector<double> h(t.size());
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<double>((i * 7919) % 1000) - 500.0;
  scatter(t, h);
  for (std::size_t b = 0; b < t.blocks(); ++b) load_padding(after{}, t, b).wait();
  // Integers in doubles: every order of summation gives the same sum.
  EXPECT_EQ(reduce(t, 0.0, reduce_sum{}), std::accumulate(h.begin(), h.end(), 0.0));
  EXPECT_EQ(reduce(t, 1e300, reduce_min{}), *std::min_element(h.begin(), h.end()));
  EXPECT_EQ(reduce(t, -1e300, reduce_max{}), *std::max_element(h.begin(), h.end()));
  EXPECT_EQ(reduce(t, 0.0, largest_magnitude{}), 500.0);
}

TEST_P(TensorCuda, RecordCellsAreUpdatedInPlace) {
  auto p = places(GetParam());
  tensor<particle, 1> t(p, tensor_spec<1>{.extent = {1000}, .partitions = {3}});
  for_each_cell(start_particle{}, t).wait();
  for_each_cell(move_particle{}, t, 0.25f).wait();
  auto out = gather(t);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(out[static_cast<std::size_t>(i)].id, i);
    ASSERT_EQ(out[static_cast<std::size_t>(i)].x, 0.5f * static_cast<float>(i) + 0.5f);
  }
}

TEST_P(TensorCuda, PaddingEveryPolicyInOneTwoAndThreeDimensions) {
  for (auto pol : {policy::none, policy::constant, policy::copy, policy::reflect, policy::periodic,
                   policy::user}) {
    for (std::size_t parts : {1, 2, 5})
      check_padding<1>(
          GetParam(), pol,
          {.extent = {29}, .partitions = {parts}, .sub_partitions = {2}, .padding = 2});
    for (auto parts : {std::array<std::size_t, 2>{2, 3}, {3, 1}, {1, 4}})
      check_padding<2>(
          GetParam(), pol,
          {.extent = {13, 11}, .partitions = parts, .sub_partitions = {2, 1}, .padding = 1});
    check_padding<3>(GetParam(), pol, {.extent = {7, 6, 5}, .partitions = {2, 2, 2}, .padding = 1});
  }
  check_padding<2>(GetParam(), policy::copy,
                   {.extent = {13, 11}, .partitions = {2, 3}, .padding = 1}, true);
}

TEST_P(TensorCuda, GraphConcurrentPaddedAccessDoubleBufferedEqualsSequential) {
  auto p = places(GetParam());
  index_t const n = 4'099;
  tensor_spec<1> s{.extent = {n}, .partitions = {4}, .sub_partitions = {2}, .padding = 1};
  tensor<std::int64_t, 1> x(p, s), y(p, s);
  set_boundary(x, boundary::periodic{});
  set_boundary(y, boundary::periodic{});
  auto ref = start_values(static_cast<std::size_t>(n));
  scatter(x, ref);
  graph g;
  g.then_split(smooth{}, concurrent_padded_access(x), y)
      .then_split(smooth{}, concurrent_padded_access(y), x);
  for (int run = 0; run < 30; ++run) {
    strata::run(g).wait();
    ref = smooth_ref(smooth_ref(ref));
    ASSERT_EQ(gather(x), ref) << "run " << run;
  }
}

TEST_P(TensorCuda, GraphExclusivePaddedAccessReadsNeighboursBeforeTheyAreWritten) {
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
  for (int run = 0; run < 30; ++run) {
    strata::run(g).wait();
    ref = step(step(ref));
    ASSERT_EQ(gather(x), ref) << "run " << run;
  }
}

TEST_P(TensorCuda, GraphSplitThenReduce) {
  auto p = places(GetParam());
  index_t const n = 12'345;
  tensor<double, 1> x(p, tensor_spec<1>{.extent = {n}, .partitions = {4}});
  tensor<double, 1> y(p, tensor_spec<1>{.extent = {n}, .partitions = {4}});
  fill(x, 1.0).wait();
  fill(y, 0.5).wait();
  reduction_result<double> result(0.0);
  graph g;
  g.split(saxpy_cell{}, x, y, 1.0f).then_reduce(y, result, reduce_sum{});
  for (int run = 1; run <= 3; ++run) {
    strata::run(g).wait();
    EXPECT_TRUE(result.complete());
    EXPECT_EQ(result.value(), static_cast<double>(n) * (0.5 + run));
  }
}

// Blocks staged in block scratch memory (shared memory on a GPU: Ripple §5.4's in_shared
// variants) and kernels run into the padding (`overlapped`, `expanded`), as in
// access_test.cpp.
TEST_P(TensorCuda, InSharedEqualsDirectAccess) {
  auto p = places(GetParam());
  index_t const n = 4'099;
  tensor_spec<1> s{.extent = {n}, .partitions = {4}, .sub_partitions = {2}};
  tensor<float, 1> x(p, s), y(p, s);
  std::vector<float> xv(static_cast<std::size_t>(n)), yv(xv.size());
  for (std::size_t i = 0; i < xv.size(); ++i) {
    xv[i] = static_cast<float>(i % 97);
    yv[i] = static_cast<float>(i % 13);
  }
  scatter(x, xv);
  scatter(y, yv);
  graph g;
  g.split(saxpy_cell{}, in_shared(x), in_shared(y), 2.0f);
  for (int run = 1; run <= 3; ++run) {
    strata::run(g).wait();
    for (std::size_t i = 0; i < yv.size(); ++i) yv[i] = 2.0f * xv[i] + yv[i];
    ASSERT_EQ(gather(y), yv) << "run " << run;
    ASSERT_EQ(gather(x), xv) << "run " << run;
  }
}

TEST_P(TensorCuda, PaddedAccessInSharedOverManyRuns) {
  auto p = places(GetParam());
  index_t const n = 2'011;
  tensor_spec<1> s{.extent = {n}, .partitions = {4}, .sub_partitions = {2}, .padding = 1};
  tensor<std::int64_t, 1> x(p, s), y(p, s), z(p, s);
  set_boundary(x, boundary::periodic{});
  set_boundary(y, boundary::periodic{});
  set_boundary(z, boundary::constant<std::int64_t>{11});
  auto ref = start_values(static_cast<std::size_t>(n));
  scatter(x, ref);
  scatter(z, ref);
  graph g;
  g.then_split(smooth{}, concurrent_padded_access_in_shared(x), y)
      .then_split(smooth{}, concurrent_padded_access_in_shared(y), in_shared(x));
  for (int run = 0; run < 30; ++run) {
    strata::run(g).wait();
    ref = smooth_ref(smooth_ref(ref));
    ASSERT_EQ(gather(x), ref) << "run " << run;
  }
  // Exclusive staged access writes back what a direct exclusive access computes.
  tensor<std::int64_t, 1> w(p, s);
  set_boundary(w, boundary::constant<std::int64_t>{11});
  copy(w, z).wait();
  graph staged, direct;
  staged.then_split(bump{}, exclusive_padded_access_in_shared(z))
      .then_split(bump{}, exclusive_padded_access_in_shared(z));
  direct.then_split(bump{}, exclusive_padded_access(w))
      .then_split(bump{}, exclusive_padded_access(w));
  for (int run = 0; run < 20; ++run) {
    strata::run(staged).wait();
    strata::run(direct).wait();
    ASSERT_EQ(gather(z), gather(w)) << "run " << run;
  }
}

struct nine_weighted {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    double acc = 0;  // small integers: exact in any order, contracted or not
    for (int i = -1; i <= 1; ++i)
      for (int j = -1; j <= 1; ++j) acc += (i + 2) * (j + 4) * *in.offset(0, i).offset(1, j);
    *out = acc;
  }
};

TEST_P(TensorCuda, InSharedTwoDimensionalWithCornersAndOverlappedSteps) {
  auto p = places(GetParam());
  tensor_spec<2> s{
      .extent = {37, 29}, .partitions = {2, 2}, .sub_partitions = {2, 1}, .padding = 1};
  tensor<double, 2> a(p, s), b(p, s), c(p, s);
  set_boundary(a, boundary::reflect{});
  std::vector<double> v(37 * 29);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 13) % 17);
  scatter(a, v);
  for_each_cell(nine_weighted{}, concurrent_padded_access_in_shared(a), in_shared(b)).wait();
  for_each_cell(nine_weighted{}, concurrent_padded_access(a), c).wait();
  EXPECT_EQ(gather(b), gather(c));

  // Padding 2: the first step computes y on the interior plus one ring, the second reads
  // that ring without an exchange.
  index_t const n = 1'031;
  tensor_spec<1> s1{.extent = {n}, .partitions = {4}, .sub_partitions = {2}, .padding = 2};
  tensor<std::int64_t, 1> x(p, s1), y(p, s1);
  set_boundary(x, boundary::periodic{});
  set_boundary(y, boundary::periodic{});
  auto ref = start_values(static_cast<std::size_t>(n));
  scatter(x, ref);
  graph g;
  g.then_split(smooth{}, overlapped(x, 1), y).then_split(smooth{}, y, x);
  for (int run = 0; run < 30; ++run) {
    strata::run(g).wait();
    ref = smooth_ref(smooth_ref(ref));
    ASSERT_EQ(gather(x), ref) << "run " << run;
  }
}

// The hybrid 2-D stencil scheme with a GPU strip (hybrid-2d-stencil-scheme §2, §4): Jacobi
// bitwise equal to a sequential sweep (the update has no multiply-add to contract), and
// the shortest path equal to Dijkstra.
std::vector<place> hybrid_mix(std::string const& name) {
  auto gpu = tensor_test::cuda_devices().front();
  auto host = tensor_test::host()[0];
  auto sim = tensor_test::sim_devices(1)[0];
  if (name == "cuda") return {gpu};
  if (name == "host+cuda") return {host, gpu};
  return {sim, gpu, host};
}

TEST_P(TensorCuda, HybridJacobiEqualsASequentialSweepBitwise) {
  index_t const rows = 41, cols = 29;
  auto devices = hybrid_mix(GetParam());
  std::vector<double> init(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < init.size(); ++i) init[i] = static_cast<double>((i * 37) % 11);
  std::vector<std::vector<index_t>> cut_sets{{}};
  if (devices.size() == 2) cut_sets.push_back({1}), cut_sets.push_back({30});
  if (devices.size() == 3) cut_sets.push_back({5, 6});
  for (auto const& cuts : cut_sets) {
    hybrid_stencil<double> h(
        {rows, cols}, {.devices = devices, .cuts = cuts, .boundary = 1.5, .max_iterations = 37});
    h.set(view<double, 2>(ptr<double, host_space>(init.data(), 0), vec<2>{rows, cols}));
    auto r = h.solve(apps::jacobi_update{});
    EXPECT_EQ(r.iterations, 37);
    std::vector<double> out(init.size());
    h.get(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{rows, cols}));
    auto ref = apps::jacobi_reference(init, rows, cols, 1.5, 37);
    for (std::size_t i = 0; i < out.size(); ++i)
      ASSERT_EQ(out[i], ref[i]) << GetParam() << " cell " << i << " cuts " << cuts.size();
  }
}

TEST_P(TensorCuda, HybridShortestPathEqualsDijkstra) {
  index_t const rows = 33, cols = 27;
  double const h = 30.0;
  auto devices = hybrid_mix(GetParam());
  std::vector<double> z(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = static_cast<double>((i * 7919) % 97);
  auto want = apps::dijkstra(z, rows, cols, h, 3, 20);
  double const inf = std::numeric_limits<double>::infinity();
  std::vector<double> cost(z.size(), inf);
  cost[3 * cols + 20] = 0.0;
  hybrid_stencil<double> s({rows, cols}, {.devices = devices, .boundary = inf});
  s.set(view<double, 2>(ptr<double, host_space>(cost.data(), 0), vec<2>{rows, cols}));
  tensor<double, 2> elevation(s.devices(), s.spec());
  set_boundary(elevation, boundary::constant<double>{0.0});
  copy(elevation, view<double, 2>(ptr<double, host_space>(z.data(), 0), vec<2>{rows, cols})).wait();
  // GPU code contracts d's sum of squares into a multiply-add: near, not bitwise.
  auto r = s.solve(apps::path_update{}, elevation, h);
  EXPECT_TRUE(r.converged);
  std::vector<double> out(cost.size());
  s.get(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{rows, cols}));
  for (std::size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], want[i], 1e-9 * want[i]) << GetParam() << " cell " << i;
}

INSTANTIATE_TEST_SUITE_P(Places, TensorCuda, ::testing::Values("cuda", "host+cuda", "sim1+cuda"));

}  // namespace
