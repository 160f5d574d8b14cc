// Kernels over cells whose rows the compiler vectorizes because the row loop declares the
// cells independent (tensor/cell_rows.hpp, STRATA_CELL_INDEPENDENT; docs/tensor.md "Cells are
// independent"). Compiled at -O3 (tests/tensor/CMakeLists.txt), where GCC vectorizes the
// SoA loops it left scalar before (too many run-time alias checks). Every result is
// checked against plain loops over host arrays, not against another tensor kernel: a
// vectorization that the declaration made wrong would show here. Rows of every length
// from 1 to 67 cells (so vector bodies, remainders and rows shorter than a vector), each
// layout, padding 1 and 2, one CPU place and 1 or 3 sim devices (chunks cut between
// threads at any cell).
#include "support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace strata;

namespace {

struct state {
  struct rho : field<float> {};
  struct mom : field<float, 2> {};
  struct e : field<double> {};
  using fields = strata::fields<rho, mom, e>;
};

// The FORCE-like shape: every field of `out` from neighbours of every field of `in`,
// along the row and across rows, plus an update in place (distance 0) of `acc`.
struct sweep {
  template <class O, class I, class A>
  void operator()(O& out, I& in, A& acc, float k) const {
    auto const l = in.offset(1, -1), r = in.offset(1, 1), d = in.offset(0, -1), u = in.offset(0, 1);
    float const rho = (*in)[state::rho{}];
    float const flux = r->template get<state::rho>() - l->template get<state::rho>() +
                       k * (u->template get<state::mom>(0) - d->template get<state::mom>(1));
    auto o = *out;
    o[state::rho{}] = rho - 0.25f * flux;
    o[state::mom{}][0] = l->template get<state::mom>(0) * 0.5f + r->template get<state::mom>(1);
    o[state::mom{}][1] = u->template get<state::mom>(1) - d->template get<state::mom>(0) + rho;
    o[state::e{}] = (*in)[state::e{}] * 0.5 + double(flux) -
                    in.offset(1, in.padding())->template get<state::e>();
    *acc += 2.0f * rho;
  }
};

float rho0(index_t i, index_t j) {
  return float((i * 7 + j * 3) % 29) * 0.5f - 3.0f;
}
float mom0(index_t i, index_t j, int c) {
  return float((i * 5 + j * (c + 2)) % 17) - 8.0f;
}
double e0(index_t i, index_t j) {
  return double((i * 11 + j) % 23) * 0.25;
}

template <class L>
std::string check(std::string const& where, index_t rows, index_t cols, index_t pad) {
  tensor_spec<2> s{
      .extent = {rows, cols}, .partitions = {where == "sim3" ? 3u : 1u, 1}, .padding = pad};
  auto const at = tensor_test::places(where);
  tensor<records<state, L>, 2> in(at, s), out(at, s);
  tensor_spec<2> sa = s;
  sa.padding = 0;
  tensor<float, 2> acc(at, sa);
  for_each_cell(
      [](auto& it, auto& a) {
        index_t const i = it.global_index(0), j = it.global_index(1);
        auto c = *it;
        c[state::rho{}] = rho0(i, j);
        c[state::mom{}][0] = mom0(i, j, 0);
        c[state::mom{}][1] = mom0(i, j, 1);
        c[state::e{}] = e0(i, j);
        *a = float(i - j);
      },
      in, acc)
      .wait();
  set_boundary(in, boundary::periodic{});
  float const k = 0.75f;
  for_each_cell(sweep{}, out, concurrent_padded_access(in), acc, k).wait();

  auto const host = tensor_test::host().front();
  record_array<state, aos> got(host, out.size());
  copy(got.view(), out).wait();
  auto const acc_got = tensor_test::gather(acc);
  auto wrap = [](index_t v, index_t n) { return ((v % n) + n) % n; };
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) {
      index_t const jl = wrap(j - 1, cols), jr = wrap(j + 1, cols), jr2 = wrap(j + pad, cols),
                    id = wrap(i - 1, rows), iu = wrap(i + 1, rows);
      float const rho = rho0(i, j);
      float const flux = rho0(i, jr) - rho0(i, jl) + k * (mom0(iu, j, 0) - mom0(id, j, 1));
      float const want[] = {rho - 0.25f * flux, mom0(i, jl, 0) * 0.5f + mom0(i, jr, 1),
                            mom0(iu, j, 1) - mom0(id, j, 0) + rho};
      double const want_e = e0(i, j) * 0.5 + double(flux) - e0(i, jr2);
      auto const c = got[i * cols + j];
      float const have[] = {c[state::rho{}], c[state::mom{}][0], c[state::mom{}][1]};
      std::string const cell = "cell (" + std::to_string(i) + ", " + std::to_string(j) + ")";
      for (int f = 0; f < 3; ++f)
        if (!(have[f] == want[f]))
          return cell + " field " + std::to_string(f) + ": " + std::to_string(have[f]) +
                 ", expected " + std::to_string(want[f]);
      if (!(double(c[state::e{}]) == want_e))
        return cell + " e: " + std::to_string(double(c[state::e{}])) + ", expected " +
               std::to_string(want_e);
      float const want_acc = float(i - j) + 2.0f * rho;
      if (!(acc_got[std::size_t(i * cols + j)] == want_acc))
        return cell + " acc: " + std::to_string(acc_got[std::size_t(i * cols + j)]) +
               ", expected " + std::to_string(want_acc);
    }
  return "";
}

class CellSimd : public ::testing::TestWithParam<std::string> {};

TEST_P(CellSimd, EveryLayoutAndRowLengthEqualsPlainLoops) {
  auto const where = GetParam();
  index_t const rows = 7;
  for (index_t pad : {1, 2})
    for (index_t cols = std::max<index_t>(1, 2 * pad - 1); cols <= 67; cols += cols < 20 ? 1 : 7) {
      // Periodic edges read `padding` cells across: a row needs at least that many.
      if (cols < pad) continue;
      std::string const at =
          " (cols " + std::to_string(cols) + ", padding " + std::to_string(pad) + ")";
      EXPECT_EQ(check<soa>(where, rows, cols, pad), "") << "soa" << at;
      EXPECT_EQ(check<aos>(where, rows, cols, pad), "") << "aos" << at;
      EXPECT_EQ(check<aosoa<8>>(where, rows, cols, pad), "") << "aosoa8" << at;
    }
}

INSTANTIATE_TEST_SUITE_P(Places, CellSimd, ::testing::Values("host", "sim1", "sim3"));

// A plain-value tensor updated in place from another (SAXPY, distance 0) at every length.
TEST(CellSimdPlain, AxpyInPlaceAtEveryLength) {
  for (index_t n = 1; n <= 130; ++n) {
    tensor_spec<1> s{.extent = {n}, .partitions = {1}, .padding = 0};
    auto const at = tensor_test::host();
    tensor<double, 1> x(at, s), y(at, s);
    for_each_cell(
        [](auto& a, auto& b) {
          *a = double(a.global_index(0)) * 0.5;
          *b = 1.0 - double(b.global_index(0));
        },
        x, y)
        .wait();
    for_each_cell([](auto& a, auto& b, double c) { *b = c * *a + *b; }, x, y, 3.0).wait();
    auto const got = tensor_test::gather(y);
    for (index_t i = 0; i < n; ++i)
      ASSERT_EQ(got[std::size_t(i)], 3.0 * (double(i) * 0.5) + (1.0 - double(i)))
          << "n " << n << " cell " << i;
  }
}

}  // namespace
