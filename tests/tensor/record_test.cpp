// Tensors of records (Ripple §4.2-4.3 on §4.1): the same kernels over AoS, SoA and AoSoA
// cells give what a plain-array reference gives, on host and sim places, through halos
// (internal, periodic, constant records, corners), graphs run many times, copies between
// layouts and partitionings, shared staging, and gather/scatter.
#include "support.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace strata;
using tensor_test::places;

namespace {

using tensor_test::cell;

// The fields of every cell as plain arrays (the reference's storage).
struct plain {
  std::vector<double> rho;
  std::vector<float> v0, v1;
  std::vector<std::int32_t> tag;
  explicit plain(std::size_t n) : rho(n), v0(n), v1(n), tag(n) {}
  friend bool operator==(plain const&, plain const&) = default;
};

plain start(std::size_t n) {
  plain p(n);
  for (std::size_t i = 0; i < n; ++i) {
    p.rho[i] = static_cast<double>((i * 7) % 1009);
    p.v0[i] = static_cast<float>((i * 3) % 97);
    p.v1[i] = static_cast<float>((i * 5) % 89);
    p.tag[i] = static_cast<std::int32_t>((i * 2654435761u) & 0xffff);
  }
  return p;
}

template <class D, class L, std::size_t N>
void put(tensor<records<D, L>, N> const& t, plain const& p) {
  record_array<cell, aos> a(tensor_test::host()[0], static_cast<index_t>(p.rho.size()));
  for (std::size_t i = 0; i < p.rho.size(); ++i) {
    auto r = a[static_cast<index_t>(i)];
    r[cell::rho{}] = p.rho[i];
    r[cell::vel{}][0] = p.v0[i];
    r[cell::vel{}][1] = p.v1[i];
    r[cell::tag{}] = p.tag[i];
  }
  copy(t, a.view()).wait();
}

template <class D, class L, std::size_t N>
plain get(tensor<records<D, L>, N> const& t) {
  auto const n = static_cast<std::size_t>(t.extent().product());
  record_array<cell, soa> a(tensor_test::host()[0], static_cast<index_t>(n));
  copy(a.view(), t).wait();
  plain p(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto r = a[static_cast<index_t>(i)];
    p.rho[i] = r[cell::rho{}];
    p.v0[i] = r[cell::vel{}][0];
    p.v1[i] = r[cell::vel{}][1];
    p.tag[i] = r[cell::tag{}];
  }
  return p;
}

// One step of a 2-D five-point stencil on every field (integer-valued, exact).
struct step2d {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    auto c = *in, n = *in.offset(0, -1), s = *in.offset(0, 1), w = *in.offset(1, -1),
         e = *in.offset(1, 1);
    auto o = *out;
    auto i64 = [](double x) { return static_cast<std::int64_t>(x); };
    o[cell::rho{}] =
        static_cast<double>((i64(c[cell::rho{}]) + i64(n[cell::rho{}]) + 2 * i64(s[cell::rho{}]) +
                             3 * i64(w[cell::rho{}]) + i64(e[cell::rho{}])) %
                            1009);
    o[cell::vel{}][0] = static_cast<float>(
        (static_cast<int>(w[cell::vel{}][1]) + static_cast<int>(e[cell::vel{}][0]) + 1) % 97);
    o[cell::vel{}][1] = static_cast<float>(
        (static_cast<int>(n[cell::vel{}][0]) * 3 + static_cast<int>(c[cell::vel{}][1])) % 89);
    o[cell::tag{}] = (n[cell::tag{}] ^ (s[cell::tag{}] * 7) ^ c[cell::tag{}]) & 0xffff;
  }
};

plain step_ref(plain const& p, index_t rows, index_t cols) {
  plain o(p.rho.size());
  auto at = [&](index_t i, index_t j) {
    return static_cast<std::size_t>(((i + rows) % rows) * cols + (j + cols) % cols);
  };
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) {
      auto c = at(i, j), n = at(i - 1, j), s = at(i + 1, j), w = at(i, j - 1), e = at(i, j + 1);
      auto i64 = [](double x) { return static_cast<std::int64_t>(x); };
      o.rho[c] = static_cast<double>(
          (i64(p.rho[c]) + i64(p.rho[n]) + 2 * i64(p.rho[s]) + 3 * i64(p.rho[w]) + i64(p.rho[e])) %
          1009);
      o.v0[c] =
          static_cast<float>((static_cast<int>(p.v1[w]) + static_cast<int>(p.v0[e]) + 1) % 97);
      o.v1[c] =
          static_cast<float>((static_cast<int>(p.v0[n]) * 3 + static_cast<int>(p.v1[c])) % 89);
      o.tag[c] = (p.tag[n] ^ (p.tag[s] * 7) ^ p.tag[c]) & 0xffff;
    }
  return o;
}

template <class L>
class RecordTensor : public ::testing::Test {};
// The last: hot/cold field groups (layout/record_grouped.hpp), tag apart from rho and vel.
using layouts = ::testing::Types<aos, soa, aosoa<8>, grouped<aosoa<8>, fields<cell::tag>>>;
TYPED_TEST_SUITE(RecordTensor, layouts);

TYPED_TEST(RecordTensor, ScatterFillAndGatherOnEveryPlace) {
  for (auto where : {"host", "sim1", "sim4"}) {
    tensor_spec<2> s{
        .extent = {37, 53}, .partitions = {2, 2}, .sub_partitions = {1, 2}, .padding = 1};
    tensor<records<cell, TypeParam>, 2> t(places(where), s);
    record_value<cell> v;
    v[cell::rho{}] = 2.5;
    v[cell::vel{}][1] = -1.0f;
    v[cell::tag{}] = 42;
    fill(t, v).wait();
    auto f = get(t);
    for (std::size_t i = 0; i < f.rho.size(); ++i)
      ASSERT_TRUE(f.rho[i] == 2.5 && f.v0[i] == 0.0f && f.v1[i] == -1.0f && f.tag[i] == 42)
          << where << " cell " << i;
    auto p = start(37 * 53);
    put(t, p);
    EXPECT_EQ(get(t), p) << where;
  }
}

TYPED_TEST(RecordTensor, PeriodicStencilGraphOverManyRunsEqualsTheReference) {
  index_t const rows = 29, cols = 41;  // uneven blocks
  for (auto where : {"host", "sim2", "sim4"}) {
    tensor_spec<2> s{
        .extent = {rows, cols}, .partitions = {2, 2}, .sub_partitions = {2, 1}, .padding = 1};
    tensor<records<cell, TypeParam>, 2> a(places(where), s), b(places(where), s);
    set_boundary(a, boundary::periodic{});
    set_boundary(b, boundary::periodic{});
    auto ref = start(static_cast<std::size_t>(rows * cols));
    put(a, ref);
    graph g;
    g.then_split(step2d{}, concurrent_padded_access(a), b)
        .then_split(step2d{}, concurrent_padded_access(b), a);
    for (int run = 0; run < 30; ++run) {
      strata::run(g).wait();
      ref = step_ref(step_ref(ref, rows, cols), rows, cols);
      if (run % 10 == 9) {
        ASSERT_EQ(get(a), ref) << where << " run " << run;
      }
    }
  }
}

TYPED_TEST(RecordTensor, CopiesBetweenLayoutsPartitioningsAndPlaces) {
  auto const p = start(23 * 31);
  tensor<records<cell, TypeParam>, 2> a(
      places("sim2"), tensor_spec<2>{.extent = {23, 31}, .partitions = {3, 1}, .padding = 2});
  put(a, p);
  tensor<records<cell, aos>, 2> b(places("host"),
                                  tensor_spec<2>{.extent = {23, 31}, .partitions = {1, 2}});
  tensor<records<cell, soa>, 2> c(
      places("sim4"), tensor_spec<2>{.extent = {23, 31}, .partitions = {2, 2}, .padding = 1});
  tensor<records<cell, aosoa<4>>, 2> d(places("sim1"),
                                       tensor_spec<2>{.extent = {23, 31}, .partitions = {1, 3}});
  copy(b, a).wait();
  copy(c, b).wait();
  copy(d, c).wait();
  copy(a, d).wait();  // and back
  EXPECT_EQ(get(b), p);
  EXPECT_EQ(get(c), p);
  EXPECT_EQ(get(d), p);
  EXPECT_EQ(get(a), p);
}

// 3-D halos with corners and constant-record edges: each cell sums the tags of its 27
// neighbours; outside the domain every tag is 1000.
struct sum27 {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    std::int32_t acc = 0;
    for (int i = -1; i <= 1; ++i)
      for (int j = -1; j <= 1; ++j)
        for (int k = -1; k <= 1; ++k)
          acc += (*in.offset(0, i).offset(1, j).offset(2, k))[cell::tag{}] * (i + 2);
    (*out)[cell::tag{}] = acc;
  }
};

TYPED_TEST(RecordTensor, ConstantEdgesAndCornersIn3D) {
  vec<3> const ext{7, 9, 11};
  auto const n = static_cast<std::size_t>(ext.product());
  auto p = start(n);
  std::vector<std::int32_t> want(n);
  auto tag_at = [&](index_t i, index_t j, index_t k) -> std::int32_t {
    if (i < 0 || j < 0 || k < 0 || i >= ext[0] || j >= ext[1] || k >= ext[2]) return 1000;
    return p.tag[static_cast<std::size_t>(linearize(vec<3>{i, j, k}, ext))];
  };
  for (index_t i = 0; i < ext[0]; ++i)
    for (index_t j = 0; j < ext[1]; ++j)
      for (index_t k = 0; k < ext[2]; ++k) {
        std::int32_t acc = 0;
        for (int a = -1; a <= 1; ++a)
          for (int b = -1; b <= 1; ++b)
            for (int c = -1; c <= 1; ++c) acc += tag_at(i + a, j + b, k + c) * (a + 2);
        want[static_cast<std::size_t>(linearize(vec<3>{i, j, k}, ext))] = acc;
      }
  for (auto where : {"host", "sim2"}) {
    tensor_spec<3> s{.extent = ext, .partitions = {2, 2, 2}, .padding = 1};
    tensor<records<cell, TypeParam>, 3> in(places(where), s), out(places(where), s);
    record_value<cell> edge;
    edge[cell::tag{}] = 1000;
    set_boundary(in, boundary::constant<record_value<cell>>{edge});
    put(in, p);
    for_each_cell(sum27{}, concurrent_padded_access(in), out).wait();
    EXPECT_EQ(get(out).tag, want) << where;
  }
}

TYPED_TEST(RecordTensor, SharedStagingGivesWhatDirectAccessGives) {
  index_t const rows = 19, cols = 24;
  auto p = start(static_cast<std::size_t>(rows * cols));
  for (auto where : {"host", "sim2"}) {
    tensor_spec<2> s{
        .extent = {rows, cols}, .partitions = {2, 1}, .sub_partitions = {1, 2}, .padding = 1};
    tensor<records<cell, TypeParam>, 2> a(places(where), s), b(places(where), s);
    set_boundary(a, boundary::periodic{});
    put(a, p);
    for_each_cell(step2d{}, concurrent_padded_access_in_shared(a), in_shared(b)).wait();
    EXPECT_EQ(get(b), step_ref(p, rows, cols)) << where;
  }
}

TEST(RecordTensorErrors, RecordArraysOfAnotherSizeAreRejected) {
  tensor<records<cell, soa>, 1> t(places("host"), tensor_spec<1>{.extent = {100}});
  record_array<cell, aos> small(tensor_test::host()[0], 99);
  EXPECT_THROW(copy(small.view(), t), invalid_argument);
  EXPECT_THROW(copy(t, small.view()), invalid_argument);
  tensor<records<cell, aos>, 1> other(places("host"), tensor_spec<1>{.extent = {101}});
  EXPECT_THROW(copy(other, t), invalid_argument);
}

}  // namespace

namespace {

// Block iterators (Ripple §5.2.2): the same stencil through block_access gives what the
// indexed iterator gives, on plain and record cells, and the iterator is smaller.
struct five_point {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    *out = *in.offset(0, -1) + 2 * *in.offset(0, 1) + 3 * *in.offset(1, -1) + 5 * *in.offset(1, 1) +
           7 * *in + in.index(1);
  }
};

TEST(BlockIterator, StencilEqualsTheIndexedIterator) {
  static_assert(sizeof(block_iterator<double, 2>) <
                sizeof(tensor_iterator<double, 2>) + sizeof(tensor_block<double, 2>));
  for (auto where : {"host", "sim2"}) {
    tensor_spec<2> s{
        .extent = {33, 47}, .partitions = {2, 2}, .sub_partitions = {1, 2}, .padding = 1};
    tensor<std::int64_t, 2> a(places(where), s), b(places(where), s), c(places(where), s);
    set_boundary(a, boundary::reflect{});
    std::vector<std::int64_t> v(33 * 47);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>((i * 31) % 113);
    tensor_test::scatter(a, v);
    graph g;
    g.then_split(five_point{}, concurrent_padded_access(a), block_access(b));
    strata::run(g).wait();
    for_each_cell(five_point{}, concurrent_padded_access(a), c).wait();
    EXPECT_EQ(tensor_test::gather(b), tensor_test::gather(c)) << where;
    // Block iterators reading the padding (loaded by hand here).
    fill(b, std::int64_t{0}).wait();
    load_padding(a).wait();
    for_each_cell(five_point{}, block_access(a), block_access(b)).wait();
    EXPECT_EQ(tensor_test::gather(b), tensor_test::gather(c)) << where;
  }
}

}  // namespace

namespace {

// A kernel over a record tensor and a plain tensor of the same blocks (Ripple's Listing 12,
// `set_wavespeeds(in, wavespeeds)`): the split check once required one cell type.
TYPED_TEST(RecordTensor, KernelOverRecordsAndPlainCellsTogether) {
  for (auto where : {"host", "sim2"}) {
    tensor_spec<2> s{.extent = {13, 21}, .partitions = {2, 2}, .padding = 1};
    tensor<records<cell, TypeParam>, 2> a(places(where), s);
    tensor<double, 2> d(places(where), s);
    auto p = start(13 * 21);
    put(a, p);
    for_each_cell(
        [] STRATA_FN(auto& r, auto& x) { *x = (*r)[cell::rho{}] * 2 + (*r)[cell::vel{}][1]; }, a, d)
        .wait();
    auto got = tensor_test::gather(d);
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], p.rho[i] * 2 + p.v1[i]) << where << " cell " << i;
  }
}

}  // namespace
