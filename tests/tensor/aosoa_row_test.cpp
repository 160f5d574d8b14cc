// Kernels over AoSoA record tensors whose rows run block by block (tensor/split.hpp,
// row_tiles: a row's whole AoSoA blocks are loops over lanes 0..B-1, addressed from the
// block's start; layout/record.hpp's record_offset floors indices below a block). Compiled
// at -O2 with record_o2_test.cpp (tests/tensor/CMakeLists.txt): the lane loops are what
// the optimizer vectorizes. Every case is checked against the same kernel on SoA tensors
// (no row tiles): rows that start mid-block (padding), chunks split between threads at
// any cell, offsets across block edges in both directions, two AoSoA arguments at the
// same lane and at different lanes, mixed blocks, plain cells and values.
#include "support.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using namespace strata;

namespace {

using tensor_test::cell;

struct particle {
  struct x : field<float, 3> {};
  struct v : field<float, 3> {};
  using fields = strata::fields<x, v>;
};

template <class L, std::size_t N>
void set_cells(tensor<records<cell, L>, N> const& t, index_t cols) {
  for_each_cell(
      [cols](auto& it) {
        index_t k = it.global_index(0);
        if constexpr (std::remove_cvref_t<decltype(it)>::dims == 2)
          k = k * cols + it.global_index(1);
        auto o = *it;  // values exact in binary: every layout's result is bitwise the same
        o[cell::rho{}] = double(k % 61) * 0.5 - 7.0;
        o[cell::vel{}][0] = float(k % 13);
        o[cell::vel{}][1] = -float(k % 11);
        o[cell::tag{}] = std::int32_t(k);
      },
      t)
      .wait();
}

/// Every cell's fields, row-major, on the host.
template <class L, std::size_t N>
std::vector<double> cells_of(tensor<records<cell, L>, N> const& t) {
  auto const host = tensor_test::host().front();
  record_array<cell, aos> a(host, t.size());
  copy(a.view(), t).wait();
  std::vector<double> out;
  for (index_t k = 0; k < index_t(t.size()); ++k) {
    out.push_back(double(a[k][cell::rho{}]));
    out.push_back(double(a[k][cell::vel{}][0]));
    out.push_back(double(a[k][cell::vel{}][1]));
    out.push_back(double(a[k][cell::tag{}]));
  }
  return out;
}

// A stencil reaching 2 cells either way along the row (across block edges) and 1 across
// rows, writing every field of `out` from `in`, a plain-cell tensor and a value.
struct stencil {
  template <class O, class I, class P>
  void operator()(O& out, I& in, P& plain, double scale) const {
    auto o = *out;
    double const w = in.offset(1, -2)->template get<cell::rho>() +
                     3.0 * in.offset(1, 1)->template get<cell::rho>() +
                     5.0 * in.offset(1, 2)->template get<cell::rho>() -
                     in.offset(0, -1)->template get<cell::rho>() +
                     in.offset(0, 1)->template get<cell::rho>();
    o[cell::rho{}] = scale * w + double(*plain);
    o[cell::vel{}][0] = (*in)[cell::vel{}][1] + in.offset(1, -1)->template get<cell::vel>(0);
    o[cell::vel{}][1] = (*in)[cell::vel{}][0] * 2.0f;
    o[cell::tag{}] = in.offset(1, -1)->template get<cell::tag>() - (*in)[cell::tag{}];
  }
};

template <class LO, class LI>
std::vector<double> run_stencil(std::string const& where, index_t pad_out, index_t pad_in) {
  index_t const rows = 9, cols = 53;  // rows of 53 + 2 * padding cells: lanes move per row
  tensor_spec<2> so{.extent = {rows, cols}, .partitions = {2, 1}, .padding = pad_out};
  tensor_spec<2> si = so;
  si.padding = pad_in;
  tensor_spec<2> sp = so;
  sp.padding = 0;
  auto const at = tensor_test::places(where);
  tensor<records<cell, LO>, 2> out(at, so);
  tensor<records<cell, LI>, 2> in(at, si);
  tensor<float, 2> plain(at, sp);
  set_cells(in, cols);
  set_cells(out, cols);
  for_each_cell([cols](auto& it) { *it = float(it.global_index(0) * cols + it.global_index(1)); },
                plain)
      .wait();
  set_boundary(in, boundary::periodic{});
  for_each_cell(stencil{}, out, concurrent_padded_access(in), plain, 0.25).wait();
  return cells_of(out);
}

/// Where two results first differ ("" if nowhere): cell, field and both values.
template <class V>
std::string first_difference(V const& got, V const& want, std::size_t per_cell) {
  if (got.size() != want.size()) return "sizes differ";
  for (std::size_t k = 0; k < got.size(); ++k)
    if (!(got[k] == want[k]))
      return "cell " + std::to_string(k / per_cell) + " field " + std::to_string(k % per_cell) +
             ": " + std::to_string(got[k]) + ", expected " + std::to_string(want[k]);
  return "";
}

class AosoaRows : public ::testing::TestWithParam<std::string> {};

TEST_P(AosoaRows, StencilAcrossBlockEdgesEqualsTheSoaResult) {
  auto const where = GetParam();
  auto const ref = run_stencil<soa, soa>(where, 2, 2);
  // Same lanes (one geometry): the rows run block by block.
  EXPECT_EQ(first_difference(run_stencil<aosoa<16>, aosoa<16>>(where, 2, 2), ref, 4), "")
      << "aosoa16 pad 2";
  EXPECT_EQ(first_difference(run_stencil<aosoa<4>, aosoa<4>>(where, 2, 2), ref, 4), "")
      << "aosoa4 pad 2";
  // Different paddings, hence different lanes: the plain loop.
  EXPECT_EQ(first_difference(run_stencil<aosoa<16>, aosoa<16>>(where, 0, 3), ref, 4), "")
      << "aosoa16 pads 0, 3";
  EXPECT_EQ(first_difference(run_stencil<aosoa<8>, aosoa<8>>(where, 1, 2), ref, 4), "")
      << "aosoa8 pads 1, 2";
  // Different blocks: the plain loop; one AoSoA argument: its own blocks.
  EXPECT_EQ(first_difference(run_stencil<aosoa<8>, aosoa<16>>(where, 2, 2), ref, 4), "")
      << "aosoa8 from aosoa16";
  EXPECT_EQ(first_difference(run_stencil<soa, aosoa<16>>(where, 2, 3), ref, 4), "")
      << "soa from aosoa16";
  EXPECT_EQ(first_difference(run_stencil<aosoa<16>, aos>(where, 1, 2), ref, 4), "")
      << "aosoa16 from aos";
}

// x += v dt over 1-D tensors of particles: partitions, sub-partitions and the threads'
// chunks end at cells that are not block edges.
// With padding 1 a row starts at lane 1 and the CPU backends' chunks of 16 cells hold no
// whole AoSoA16 block (stepped one by one); without padding they are whole blocks.
template <class L, bool Blocks = false>
std::vector<float> push(std::string const& where, index_t n, int steps, index_t padding = 1) {
  tensor<records<particle, L>, 1> t(
      tensor_test::places(where),
      tensor_spec<1>{.extent = {n}, .partitions = {3}, .sub_partitions = {2}, .padding = padding});
  for_each_cell(
      [](auto& it) {
        auto const i = it.global_index(0);
        auto p = *it;
        for (int d = 0; d < 3; ++d) {
          p[particle::x{}][std::size_t(d)] = float(i % 1024) + 0.25f * float(d);
          p[particle::v{}][std::size_t(d)] = float((i + d) % 7) - 3.0f;
        }
      },
      t)
      .wait();
  auto step = [](auto& it, float dt) {
    auto p = *it;
    auto x = p[particle::x{}];
    auto v = p[particle::v{}];
    x[0] += v[0] * dt;
    x[1] += v[1] * dt;
    x[2] += v[2] * dt;
  };
  for (int s = 0; s < steps; ++s) {
    if constexpr (Blocks)  // block iterators (Ripple §5.2.2)
      for_each_cell(step, block_access(t), 1.0f / 64).wait();
    else
      for_each_cell(step, t, 1.0f / 64).wait();
  }
  auto const host = tensor_test::host().front();
  record_array<particle, aos> a(host, n);
  copy(a.view(), t).wait();
  std::vector<float> out;
  for (index_t i = 0; i < n; ++i)
    for (std::size_t d = 0; d < 3; ++d) {
      out.push_back(a[i][particle::x{}][d]);
      out.push_back(a[i][particle::v{}][d]);
    }
  return out;
}

TEST_P(AosoaRows, ParticlePushOverUnevenBlocksEqualsTheSoaResult) {
  auto const where = GetParam();
  for (index_t n : {1, 15, 17, 1000, 4099}) {
    auto const ref = push<soa>(where, std::max<index_t>(n, 6), 3);
    EXPECT_EQ(first_difference(push<aosoa<16>>(where, std::max<index_t>(n, 6), 3), ref, 6), "")
        << "n " << n;
    EXPECT_EQ(first_difference(push<aosoa<16>>(where, std::max<index_t>(n, 6), 3, 0), ref, 6), "")
        << "n " << n << ", no padding";
    EXPECT_EQ(first_difference(push<aosoa<2>>(where, std::max<index_t>(n, 6), 3), ref, 6), "")
        << "n " << n;
    EXPECT_EQ(first_difference(push<aosoa<16>, true>(where, std::max<index_t>(n, 6), 3, 0), ref, 6),
              "")
        << "n " << n << ", block iterators";
  }
  // Exact: 3 steps of dt = 1/64 from binary-exact values.
  auto const x = push<aosoa<16>>(where, 100, 3);
  for (index_t i = 0; i < 100; ++i)
    for (int d = 0; d < 3; ++d) {
      float e = float(i % 1024) + 0.25f * float(d);
      for (int s = 0; s < 3; ++s) e += (float((i + d) % 7) - 3.0f) * (1.0f / 64);
      ASSERT_EQ(x[std::size_t(i * 6 + d * 2)], e) << "particle " << i << " component " << d;
    }
}

INSTANTIATE_TEST_SUITE_P(Places, AosoaRows, ::testing::Values("host", "sim1", "sim3"));

// record_offset floors: an AoSoA element index below a block's start is the previous
// block's last lanes, as a row loop's offsets from a block start need.
TEST(AosoaOffsets, IndicesBelowABlockStartAreThePreviousBlock) {
  record_array<cell, aosoa<8>> a(tensor_test::host().front(), 64);
  for (index_t k = 0; k < 64; ++k) a[k][cell::tag{}] = std::int32_t(k);
  using map = detail::record_map<aosoa<8>, cell>;
  std::byte* const base = a.data().get();
  for (index_t b = 1; b < 8; ++b)
    for (index_t back = 1; back <= 9 && back <= b * 8; ++back) {
      record_ref<cell, aosoa<8>> r(base + b * index_t(map::block_bytes), -back, a.pitch());
      ASSERT_EQ(std::int32_t(r[cell::tag{}]), std::int32_t(b * 8 - back))
          << "block " << b << " index " << -back;
    }
}

}  // namespace
