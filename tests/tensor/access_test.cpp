// Access specifiers beyond Figures 7 and 9 (Ripple §5.4): kernels expanded into the padding
// (`expanded`, `overlapped`: several steps per exchange), padding-loading nodes
// (`then_split(load_padding, t[, loader])`), and tensor graphs under adversarial
// scheduling (one PU, graphs injected from several threads at once).
#include "../support/hang_guard.hpp"
#include "kernels.hpp"
#include "support.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

using namespace strata;
using tensor_test::bump;
using tensor_test::gather;
using tensor_test::padded_box;
using tensor_test::places;
using tensor_test::scatter;
using tensor_test::smooth;
using tensor_test::smooth_ref;
using tensor_test::start_values;

namespace {

constexpr auto limit = std::chrono::seconds(120);

class TensorAccess : public ::testing::TestWithParam<std::string> {};

TEST_P(TensorAccess, OverlappedStepsShareOneExchange) {
  // Padding 2: the first step loads x's padding and computes y on the interior plus one
  // ring; the second reads that ring and needs no exchange. Two steps, one exchange.
  auto p = places(GetParam());
  index_t const n = 1'031;  // uneven blocks
  tensor_test::periodic_pair xy(p, n, 2);
  auto &x = xy.x, &y = xy.y;
  auto& ref = xy.ref;
  graph g;
  g.then_split(smooth{}, overlapped(x, 1), y).then_split(smooth{}, y, x);
  // Two kernel levels, a node per block each: x's padding loads are issued by the first
  // level's nodes (concurrent access: a node loads its block's padding and launches its
  // kernel after the loads), no exchange before the second.
  EXPECT_EQ(g.size(), 2 * x.blocks());
  for (int run = 0; run < 100; ++run) {
    strata::run(g).wait();
    ref = smooth_ref(smooth_ref(ref));
    ASSERT_EQ(gather(x), ref) << "run " << run;
  }
}

TEST_P(TensorAccess, ExpandedKernelFillsThePaddingItself) {
  // `expanded` runs the kernel on the padding without loading it: every cell of the
  // padded box (interior and ring 1 of 2) gets its global index, the outer ring is kept.
  auto p = places(GetParam());
  tensor_spec<2> s{.extent = {23, 17}, .partitions = {2, 2}, .padding = 2};
  tensor<std::int64_t, 2> t(p, s);
  fill(t, std::int64_t{-7}).wait();
  graph g;
  g.split([] STRATA_FN(auto& it) { *it = it.global_index(0) * 1000 + it.global_index(1); },
          expanded(t, 1));
  EXPECT_EQ(g.size(), t.blocks());  // no padding-load nodes
  strata::run(g).wait();
  for (std::size_t b = 0; b < t.blocks(); ++b) {
    auto const& blk = t.block(b);
    auto box = padded_box(t, b);
    auto pe = blk.padded_extent();
    for (index_t i = 0; i < pe[0]; ++i)
      for (index_t j = 0; j < pe[1]; ++j) {
        index_t li = i - 2, lj = j - 2;
        bool ring = li >= -1 && li <= blk.extent[0] && lj >= -1 && lj <= blk.extent[1];
        auto got = box[static_cast<std::size_t>(i * pe[1] + j)];
        auto want = ring ? (blk.origin[0] + li) * 1000 + blk.origin[1] + lj : -7;
        ASSERT_EQ(got, want) << "block " << b << " local " << li << "," << lj;
      }
  }
}

TEST_P(TensorAccess, TwoDimensionalOverlappedStencilWithCorners) {
  auto p = places(GetParam());
  index_t const ni = 29, nj = 19;
  tensor_spec<2> s{
      .extent = {ni, nj}, .partitions = {2, 2}, .sub_partitions = {1, 2}, .padding = 2};
  tensor<std::int64_t, 2> a(p, s), b(p, s);
  set_boundary(a, boundary::periodic{});
  set_boundary(b, boundary::periodic{});
  auto nine = [] STRATA_FN(auto& in, auto& out) {
    std::int64_t acc = 0;
    for (int i = -1; i <= 1; ++i)
      for (int j = -1; j <= 1; ++j) acc += (i + 2) * (j + 3) * *in.offset(0, i).offset(1, j);
    *out = acc % 1000003;
  };
  std::vector<std::int64_t> ref(static_cast<std::size_t>(ni * nj));
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = static_cast<std::int64_t>((i * 13) % 17);
  scatter(a, ref);
  auto step = [&](std::vector<std::int64_t> const& in) {
    std::vector<std::int64_t> out(in.size());
    auto at = [&](index_t i, index_t j) {
      i = (i + ni) % ni;
      j = (j + nj) % nj;
      return in[static_cast<std::size_t>(i * nj + j)];
    };
    for (index_t i = 0; i < ni; ++i)
      for (index_t j = 0; j < nj; ++j) {
        std::int64_t acc = 0;
        for (int di = -1; di <= 1; ++di)
          for (int dj = -1; dj <= 1; ++dj) acc += (di + 2) * (dj + 3) * at(i + di, j + dj);
        out[static_cast<std::size_t>(i * nj + j)] = acc % 1000003;
      }
    return out;
  };
  graph g;
  g.then_split(nine, overlapped(a, 1), b).then_split(nine, b, a);
  for (int run = 0; run < 20; ++run) {
    strata::run(g).wait();
    ref = step(step(ref));
    ASSERT_EQ(gather(a), ref) << "run " << run;
  }
}

TEST_P(TensorAccess, LoaderNodesEqualPaddedAccess) {
  // then_split(load_padding, x) followed by a kernel that reads the padding without an
  // access specifier gives what concurrent_padded_access gives.
  auto p = places(GetParam());
  index_t const n = 2'003;
  tensor_test::periodic_pair xy(p, n, 1);
  auto &x = xy.x, &y = xy.y;
  auto& ref = xy.ref;
  graph g;
  g.then_split(load_padding, x)
      .then_split(smooth{}, x, y)
      .then_split(load_padding, y)
      .then_split(smooth{}, y, x);
  EXPECT_EQ(g.size(), 4 * x.blocks());
  for (int run = 0; run < 100; ++run) {
    strata::run(g).wait();
    ref = smooth_ref(smooth_ref(ref));
    ASSERT_EQ(gather(x), ref) << "run " << run;
  }
}

// Ripple's loader interface: load_front / load_back at the padding cell before the first
// and past the last cell of a dimension. Here: a first-order extrapolation, 2x - inner.
struct extrapolate {
  template <class It>
  STRATA_FN void load_front(It& it, std::size_t dim) const {
    *it = 2 * *it.offset(dim, 1) - *it.offset(dim, 2);
  }
  template <class It>
  STRATA_FN void load_back(It& it, std::size_t dim) const {
    *it = 2 * *it.offset(dim, -1) - *it.offset(dim, -2);
  }
};

TEST_P(TensorAccess, LoaderNodesWithUserAndPolicyLoaders) {
  auto p = places(GetParam());
  index_t const n = 101;
  tensor_spec<1> s{.extent = {n}, .partitions = {4}, .padding = 1};
  tensor<std::int64_t, 1> x(p, s);
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i * i);
  scatter(x, v);
  graph g;
  g.then_split(load_padding, x, extrapolate{});
  strata::run(g).wait();
  auto first = padded_box(x, 0);
  auto last = padded_box(x, x.blocks() - 1);
  EXPECT_EQ(first.front(), 2 * v[0] - v[1]);
  EXPECT_EQ(last.back(), 2 * v[100] - v[99]);
  // Internal halos come from the neighbours whatever the loader.
  auto const cut = static_cast<std::size_t>(x.cuts(0)[1]);
  EXPECT_EQ(first.back(), v[cut]);

  graph h;
  h.split(load_padding, x, boundary::constant<std::int64_t>{42});
  strata::run(h).wait();
  EXPECT_EQ(padded_box(x, 0).front(), 42);
  EXPECT_EQ(padded_box(x, x.blocks() - 1).back(), 42);
}

TEST_P(TensorAccess, BadAccessIsAClearError) {
  auto p = places(GetParam());
  tensor_spec<1> s{.extent = {100}, .partitions = {2}, .padding = 1};
  tensor<int, 1> x(p, s), bare(p, tensor_spec<1>{.extent = {100}, .partitions = {2}});
  auto k = [] STRATA_FN(auto& a, auto& b) { *b = *a; };
  graph g;
  EXPECT_THROW(g.split(k, expanded(x, 2), x), invalid_argument);       // padding 1 < 2
  EXPECT_THROW(g.split(k, expanded(x, -1), x), invalid_argument);      // negative
  EXPECT_THROW(g.split(k, overlapped(x, 1), bare), invalid_argument);  // bare has none
  EXPECT_THROW(g.split(load_padding, bare), invalid_argument);
  EXPECT_THROW(for_each_cell(k, expanded(x, 1), bare), invalid_argument);
}

// A one-PU graph and graphs injected from three threads at once: every node of a tensor
// graph may wait on device events (sim kernels and halo copies) while the only worker
// also has to run the other nodes.
TEST_P(TensorAccess, OnePuAndInjectedGraphsFinishWithTheSequentialResult) {
  auto p = places(GetParam());
  auto pus = tensor_test::rt().machine().descendants(place_type::pu);
  testing_support::finishes_within(limit, "tensor graphs on one PU and from three threads", [&] {
    auto body = [&](place const& where, int runs, std::size_t n) {
      tensor_test::periodic_pair xy(p, static_cast<index_t>(n), 2);
      auto &x = xy.x, &y = xy.y;
      auto& ref = xy.ref;
      reduction_result<std::int64_t> sum(0);
      graph g;
      g.then_split(smooth{}, concurrent_padded_access(x), y)
          .then_split(smooth{}, overlapped(y, 1), x)
          .then_split(smooth{}, x, y)
          .then_reduce(y, sum, reduce_sum{});
      for (int r = 0; r < runs; ++r) {
        strata::run(g, where).wait();
        ref = smooth_ref(smooth_ref(ref));
        auto third = smooth_ref(ref);
        std::int64_t want = 0;
        for (auto v : third) want += v;
        if (gather(x) != ref || sum.value() != want) return false;
      }
      return true;
    };
    EXPECT_TRUE(body(pus.front(), 20, 997));
    std::atomic<int> good{0};
    std::vector<std::thread> threads;
    for (int k = 0; k < 3; ++k)
      threads.emplace_back([&, k] {
        place where = k == 0 ? pus.back() : tensor_test::rt().machine().slice(isa::host);
        if (body(where, 10, 500 + 77 * static_cast<std::size_t>(k))) ++good;
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(good.load(), 3);
  });
}

// Shared access (Ripple §5.4.3): blocks staged in block scratch give what direct access
// gives, with and without padding, including a kernel that writes the staged tensor.
TEST_P(TensorAccess, InSharedEqualsDirectAccess) {
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
  g.split([] STRATA_FN(auto& x_it, auto& y_it, float a) { *y_it = a * *x_it + *y_it; },
          in_shared(x), in_shared(y), 2.0f);
  for (int run = 1; run <= 3; ++run) {
    strata::run(g).wait();
    for (std::size_t i = 0; i < yv.size(); ++i) yv[i] = 2.0f * xv[i] + yv[i];
    ASSERT_EQ(gather(y), yv) << "run " << run;
    ASSERT_EQ(gather(x), xv) << "run " << run;  // staged, written back unchanged
  }
}

TEST_P(TensorAccess, PaddedAccessInSharedOverManyRuns) {
  auto p = places(GetParam());
  index_t const n = 2'011;
  tensor_test::periodic_pair xy(p, n, 1);
  auto &x = xy.x, &y = xy.y;
  auto& ref = xy.ref;
  graph g;
  g.then_split(smooth{}, concurrent_padded_access_in_shared(x), y)
      .then_split(smooth{}, concurrent_padded_access_in_shared(y), in_shared(x));
  for (int run = 0; run < 100; ++run) {
    strata::run(g).wait();
    ref = smooth_ref(smooth_ref(ref));
    ASSERT_EQ(gather(x), ref) << "run " << run;
  }
}

TEST_P(TensorAccess, ExclusivePaddedAccessInSharedWritesBack) {
  auto p = places(GetParam());
  index_t const n = 1'000;
  tensor_spec<1> s{.extent = {n}, .partitions = {4}, .sub_partitions = {2}, .padding = 1};
  tensor<std::int64_t, 1> x(p, s), z(p, s);
  set_boundary(x, boundary::constant<std::int64_t>{11});
  set_boundary(z, boundary::constant<std::int64_t>{11});
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i % 13);
  scatter(x, v);
  scatter(z, v);
  graph staged, direct;
  staged.then_split(bump{}, exclusive_padded_access_in_shared(x))
      .then_split(bump{}, exclusive_padded_access_in_shared(x));
  direct.then_split(bump{}, exclusive_padded_access(z))
      .then_split(bump{}, exclusive_padded_access(z));
  for (int run = 0; run < 50; ++run) {
    strata::run(staged).wait();
    strata::run(direct).wait();
    ASSERT_EQ(gather(x), gather(z)) << "run " << run;
  }
}

TEST_P(TensorAccess, InSharedTwoDimensionalWithCorners) {
  auto p = places(GetParam());
  tensor_spec<2> s{
      .extent = {37, 29}, .partitions = {2, 2}, .sub_partitions = {2, 1}, .padding = 1};
  tensor<double, 2> a(p, s), b(p, s), c(p, s);
  set_boundary(a, boundary::reflect{});
  auto nine = [] STRATA_FN(auto& in, auto& out) {
    double acc = 0;
    for (int i = -1; i <= 1; ++i)
      for (int j = -1; j <= 1; ++j) acc += (i + 2) * (j + 4) * *in.offset(0, i).offset(1, j);
    *out = acc;
  };
  std::vector<double> v(37 * 29);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 13) % 17);
  scatter(a, v);
  for_each_cell(nine, concurrent_padded_access_in_shared(a), in_shared(b)).wait();
  for_each_cell(nine, concurrent_padded_access(a), c).wait();
  EXPECT_EQ(gather(b), gather(c));
}

TEST_P(TensorAccess, InSharedWithExpansionIsAnError) {
  auto p = places(GetParam());
  tensor<int, 1> x(p, tensor_spec<1>{.extent = {100}, .partitions = {2}, .padding = 1}), y = x;
  graph g;
  EXPECT_THROW(g.split([] STRATA_FN(auto& a, auto& b) { *b = *a; }, overlapped(x, 1), in_shared(y)),
               invalid_argument);
}

// `along(d...)`: only the padding outside the block in those dimensions is loaded (faces,
// and the edges and corners between them), halos and domain edges alike; the rest keeps
// what it held. Every padding cell of every block is checked: the interior is rewritten
// after a full load, so a loaded cell holds the new value and a skipped one the old.
template <std::size_t N>
void check_along(std::vector<place> const& p, tensor_spec<N> s, dim_mask dims, bool periodic) {
  tensor<std::int64_t, N> t(p, s);
  auto value = [&](vec<N> g, std::int64_t gen) {
    std::int64_t v = gen;
    for (std::size_t d = 0; d < N; ++d) v = v * 1000 + g[d];
    return v;
  };
  auto set_all = [&](std::int64_t gen) {
    std::vector<std::int64_t> cells(static_cast<std::size_t>(s.extent.product()));
    for (index_t k = 0; k < s.extent.product(); ++k)
      cells[static_cast<std::size_t>(k)] = value(delinearize(k, s.extent), gen);
    scatter(t, cells);
  };
  if (periodic)
    set_boundary(t, boundary::periodic{});
  else
    set_boundary(t, boundary::constant<std::int64_t>{-1});
  set_all(1);
  load_padding(t).wait();
  set_all(2);
  if (!periodic) set_boundary(t, boundary::constant<std::int64_t>{-2});
  auto access = concurrent_padded_access(t);
  access.dims = dims;  // what along(...) sets, for any mask
  for_each_cell([] STRATA_FN(auto&) {}, access).wait();
  for (std::size_t b = 0; b < t.blocks(); ++b) {
    auto const& blk = t.block(b);
    auto const box = padded_box(t, b);
    auto const pe = blk.padded_extent();
    for (index_t k = 0; k < pe.product(); ++k) {
      auto q = delinearize(k, pe);
      dim_mask outside = 0;
      bool edge = false;  // outside the domain in some dimension
      vec<N> g{};
      for (std::size_t d = 0; d < N; ++d) {
        index_t const l = q[d] - s.padding;
        if (l < 0 || l >= blk.extent[d]) outside |= dim_mask{1} << d;
        g[d] = blk.origin[d] + l;
        if (g[d] < 0 || g[d] >= s.extent[d]) edge = true;
        g[d] = (g[d] + s.extent[d]) % s.extent[d];
      }
      if (outside == 0) continue;
      bool const loaded = (outside & ~dims) == 0;
      auto const got = box[static_cast<std::size_t>(k)];
      if (edge && !periodic) {
        // Edge kernels fill whole padded slabs of their dimension (corners included): a
        // cell outside the domain is -2 if an edge along a loaded dimension covers it.
        bool refilled = false;
        for (std::size_t d = 0; d < N; ++d) {
          index_t const gd = blk.origin[d] + q[d] - s.padding;
          if ((dims >> d & 1u) && (gd < 0 || gd >= s.extent[d])) refilled = true;
        }
        if (refilled) {
          ASSERT_EQ(got, -2) << "block " << b << " padded cell " << k;
        }
        continue;
      }
      ASSERT_EQ(got, value(g, loaded ? 2 : 1)) << "block " << b << " padded cell " << k
                                               << " outside in " << outside << ", along " << dims;
    }
  }
}

TEST_P(TensorAccess, AlongLoadsOnlyThePaddingOfItsDimensions) {
  auto p = places(GetParam());
  tensor_spec<2> s2{
      .extent = {23, 17}, .partitions = {2, 2}, .sub_partitions = {2, 1}, .padding = 2};
  for (bool periodic : {true, false})
    for (dim_mask dims : {1u, 2u, 3u}) check_along(p, s2, dims, periodic);
  tensor_spec<3> s3{
      .extent = {9, 11, 7}, .partitions = {2, 2, 1}, .sub_partitions = {1, 1, 2}, .padding = 1};
  for (dim_mask dims : {1u, 2u, 4u, 3u, 5u, 6u}) check_along(p, s3, dims, true);
  check_along(p, s3, 6u, false);
  // along(...) sets that mask.
  tensor<std::int64_t, 3> t(p, s3);
  EXPECT_EQ(concurrent_padded_access(t).along(2, 0).dims, 5u);
  EXPECT_EQ(exclusive_padded_access(t).along(1).dims, 2u);
  EXPECT_EQ(concurrent_padded_access(t).dims, all_dims);
}

// A dimensionally split scheme in a graph: an x sweep along(1) and a y sweep along(0),
// double-buffered, 100 runs against the sequential sweeps (a race would show as a wrong
// value in some run). The x sweep's nodes wait for no other block in y.
TEST_P(TensorAccess, AlongSweepsInAGraphEqualTheSequentialSweeps) {
  auto p = places(GetParam());
  index_t const ni = 37, nj = 21;
  tensor_spec<2> s{
      .extent = {ni, nj}, .partitions = {4, 1}, .sub_partitions = {1, 2}, .padding = 1};
  tensor<std::int64_t, 2> a(p, s), b(p, s);
  set_boundary(a, boundary::reflect{});
  set_boundary(b, boundary::reflect{});
  std::vector<std::int64_t> ref(static_cast<std::size_t>(ni * nj));
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = static_cast<std::int64_t>((i * 7) % 23);
  scatter(a, ref);
  auto sweep_x = [] STRATA_FN(auto& in, auto& out) {
    *out = (*in.offset(1, -1) + 2 * *in + 3 * *in.offset(1, 1)) % 1009;
  };
  auto sweep_y = [] STRATA_FN(auto& in, auto& out) {
    *out = (5 * *in.offset(0, -1) + *in + 2 * *in.offset(0, 1)) % 1013;
  };
  auto step = [&](std::vector<std::int64_t> const& in, int dim) {
    std::vector<std::int64_t> out(in.size());
    auto at = [&](index_t i, index_t j) {  // reflect: cell k outside holds cell k-1 inside
      i = i < 0 ? -i - 1 : i >= ni ? 2 * ni - i - 1 : i;
      j = j < 0 ? -j - 1 : j >= nj ? 2 * nj - j - 1 : j;
      return in[static_cast<std::size_t>(i * nj + j)];
    };
    for (index_t i = 0; i < ni; ++i)
      for (index_t j = 0; j < nj; ++j)
        out[static_cast<std::size_t>(i * nj + j)] =
            dim == 1 ? (at(i, j - 1) + 2 * at(i, j) + 3 * at(i, j + 1)) % 1009
                     : (5 * at(i - 1, j) + at(i, j) + 2 * at(i + 1, j)) % 1013;
    return out;
  };
  graph g;
  g.then_split(sweep_x, concurrent_padded_access(a).along(1), b)
      .then_split(sweep_y, concurrent_padded_access(b).along(0), a);
  EXPECT_EQ(g.size(), 2 * a.blocks());
  for (int run = 0; run < 100; ++run) {
    strata::run(g).wait();
    ref = step(step(ref, 1), 0);
    ASSERT_EQ(gather(a), ref) << "run " << run;
  }
}

// `along` on the graph's other paths: exclusive access (a padding-load node per block; the
// kernel, which writes cells its neighbours' loads read, waits for the loads of its
// neighbours in dimension 0 only) and a reducing split, against sequential references.
TEST_P(TensorAccess, AlongWithExclusiveAccessAndAReducingSplit) {
  auto p = places(GetParam());
  index_t const ni = 40, nj = 13;
  tensor_spec<2> s{
      .extent = {ni, nj}, .partitions = {4, 1}, .sub_partitions = {1, 2}, .padding = 1};
  tensor<std::int64_t, 2> x(p, s), y(p, s);
  set_boundary(x, boundary::constant<std::int64_t>{11});
  auto at = [&](std::vector<std::int64_t> const& v, index_t i, index_t j) {
    return i < 0 || i >= ni ? std::int64_t{11} : v[static_cast<std::size_t>(i * nj + j)];
  };
  std::vector<std::int64_t> ref(static_cast<std::size_t>(ni * nj));
  for (std::size_t k = 0; k < ref.size(); ++k) ref[k] = static_cast<std::int64_t>(k % 13);
  scatter(x, ref);
  auto const& cuts = x.cuts(0);
  // In place: a block's first row adds the row above it, its last 5 x the row below.
  auto bump_rows = [] STRATA_FN(auto& it) {
    auto v = *it * 3 % 1000003;
    if (it.index(0) == 0) v += *it.offset(0, -1);
    if (it.index(0) == it.size(0) - 1) v += 5 * *it.offset(0, 1);
    *it = v % 1000003;
  };
  auto diff = [] STRATA_FN(auto& in, auto& out) {
    *out = *in.offset(0, 1) - 2 * *in.offset(0, -1);
    return *out;
  };
  reduction_result<std::int64_t> sum(0);
  graph g;
  g.then_split(bump_rows, exclusive_padded_access(x).along(0))
      .then_split_reduce(sum, reduce_sum{}, diff, concurrent_padded_access(x).along(0), y);
  for (int run = 0; run < 50; ++run) {
    strata::run(g).wait();
    std::vector<std::int64_t> next(ref.size()), want_y(ref.size());
    for (std::size_t b = 0; b + 1 < cuts.size(); ++b)
      for (index_t i = cuts[b]; i < cuts[b + 1]; ++i)
        for (index_t j = 0; j < nj; ++j) {
          auto v = at(ref, i, j) * 3 % 1000003;
          if (i == cuts[b]) v += at(ref, i - 1, j);
          if (i + 1 == cuts[b + 1]) v += 5 * at(ref, i + 1, j);
          next[static_cast<std::size_t>(i * nj + j)] = v % 1000003;
        }
    ref = next;
    std::int64_t want_sum = 0;
    for (index_t i = 0; i < ni; ++i)
      for (index_t j = 0; j < nj; ++j) {
        auto const d = at(ref, i + 1, j) - 2 * at(ref, i - 1, j);
        want_y[static_cast<std::size_t>(i * nj + j)] = d;
        want_sum += d;
      }
    ASSERT_EQ(gather(x), ref) << "run " << run;
    ASSERT_EQ(gather(y), want_y) << "run " << run;
    ASSERT_EQ(sum.value(), want_sum) << "run " << run;
  }
}

TEST_P(TensorAccess, AlongOutsideTheTensorOrWithoutLoadsIsAnError) {
  auto p = places(GetParam());
  tensor_spec<2> s{.extent = {20, 20}, .partitions = {2, 1}, .padding = 1};
  tensor<int, 2> x(p, s);
  EXPECT_THROW(concurrent_padded_access(x).along(2), invalid_argument);
  EXPECT_THROW(concurrent_padded_access(x).along(0, -1), invalid_argument);
  EXPECT_THROW(expanded(x, 1).along(0), invalid_argument);    // loads nothing
  EXPECT_THROW(overlapped(x, 1).along(0), invalid_argument);  // runs into every side
  EXPECT_THROW(in_shared(x).along(1), invalid_argument);      // no padding used
  EXPECT_NO_THROW(concurrent_padded_access_in_shared(x).along(1));
}

INSTANTIATE_TEST_SUITE_P(Places, TensorAccess, ::testing::Values("host", "sim1", "sim2", "sim4"));

}  // namespace
