// The distributed 2-D FFT (apps/common/dist_fft.hpp) under mpiexec at 1-4 ranks: the
// forward result against a single-rank FFTW 2-D transform of the whole input (gathered,
// and also each rank's own part in the layout FFTW-MPI gives it), the inverse against the
// input, a plane wave against its exact transform, both output layouts, sizes the ranks
// do not divide (30 x 18 at 4 ranks), non-square arrays, arrays smaller than the team
// (ranks without rows or columns), FFTW_MEASURE plans, repeated transforms and bad input.
#include "dist_fft.hpp"

#include <gtest/gtest.h>
#include <strata/dist.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

namespace dist = strata::dist;
using apps::complex;
using strata::index_t;

namespace {

// The whole input and its single-rank FFTW transform, on every rank (small sizes).
struct reference {
  std::vector<complex> input, output;
  reference(index_t n0, index_t n1) {
    for (index_t i = 0; i < n0; ++i)
      for (index_t j = 0; j < n1; ++j) input.push_back(apps::fft_test_value(i, j));
    output = input;
    apps::reference_fft2d(n0, n1, output, -1);
  }
  complex at(index_t n1, index_t i, index_t j) const {
    return output[static_cast<std::size_t>(i * n1 + j)];
  }
};

// This rank's part of the forward result, in its local storage, against the reference:
// by rows, row-major (FFTW-MPI's normal layout); by columns, each column contiguous (its
// FFTW_MPI_TRANSPOSED_OUT layout: local rows of the N1 x N0 transpose).
void check_local_layout(apps::distributed_fft2d& fft, reference const& ref) {
  auto const n0 = fft.n0(), n1 = fft.n1(), p = static_cast<index_t>(fft.rows().members().size());
  int const me = fft.rows().members().rank();
  auto local = fft.output().local();
  double scale = 0;
  for (auto const& x : ref.output) scale = std::max(scale, std::abs(x));
  double const tol = apps::fft_tolerance(n0, n1) * scale;
  if (fft.options().output == apps::fft_layout::natural) {
    index_t const b = (n0 + p - 1) / p, first = me * b;
    index_t const rows = std::max<index_t>(0, std::min(n0, first + b) - first);
    ASSERT_EQ(local.size(), static_cast<std::size_t>(rows * n1)) << "rank " << me;
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < n1; ++j)
        EXPECT_LE(std::abs(local[static_cast<std::size_t>(i * n1 + j)] - ref.at(n1, first + i, j)),
                  tol)
            << "rank " << me << " local row " << i << " column " << j;
  } else {
    index_t const c = (n1 + p - 1) / p, first = me * c;
    index_t const cols = std::max<index_t>(0, std::min(n1, first + c) - first);
    ASSERT_EQ(local.size(), static_cast<std::size_t>(cols * n0)) << "rank " << me;
    for (index_t j = 0; j < cols; ++j)
      for (index_t i = 0; i < n0; ++i)
        EXPECT_LE(std::abs(local[static_cast<std::size_t>(j * n0 + i)] - ref.at(n1, i, first + j)),
                  tol)
            << "rank " << me << " local column " << j << " row " << i;
  }
}

// Forward against the reference (gathered and locally), inverse against the input.
void check_transform(dist::runtime const& rt, index_t n0, index_t n1, apps::fft_layout layout,
                     apps::fft_planning planning = apps::fft_planning::estimate, int rounds = 2) {
  SCOPED_TRACE(std::to_string(n0) + " x " + std::to_string(n1) +
               (layout == apps::fft_layout::natural ? " natural" : " transposed") + " at " +
               std::to_string(rt.size()) + " ranks");
  apps::distributed_fft2d fft(rt.world(), n0, n1, {layout, planning});
  EXPECT_EQ(&fft.output(), layout == apps::fft_layout::natural ? &fft.rows() : &fft.columns());
  reference const ref(n0, n1);
  double const tol = apps::fft_tolerance(n0, n1);
  for (int round = 0; round < rounds; ++round) {  // the plans are reused
    apps::fill_fft_test_input(fft.rows());
    fft.forward();
    check_local_layout(fft, ref);
    auto got = apps::gather_natural(fft.output());
    if (rt.rank() == 0) {
      EXPECT_LE(apps::max_relative_difference(got, ref.output), tol) << "round " << round;
    } else {
      EXPECT_TRUE(got.empty());
    }
    fft.inverse();
    got = apps::gather_natural(fft.rows());
    if (rt.rank() == 0) {
      EXPECT_LE(apps::max_relative_difference(got, ref.input), tol);
    }
  }
}

constexpr apps::fft_layout both[] = {apps::fft_layout::natural, apps::fft_layout::transposed};

}  // namespace

TEST(DistFft, SquarePowerOfTwo) {
  dist::runtime rt;
  for (auto layout : both) check_transform(rt, 16, 16, layout);
}

TEST(DistFft, SizesTheRanksDoNotDivide) {
  dist::runtime rt;
  // 30 x 18 at 4 ranks: rows 8, 8, 8, 6 and columns 5, 5, 5, 3; at 3 ranks 10 rows and 6
  // columns each; 7 x 13 is prime both ways.
  for (auto layout : both) {
    check_transform(rt, 30, 18, layout);
    check_transform(rt, 7, 13, layout);
  }
}

TEST(DistFft, NonSquare) {
  dist::runtime rt;
  for (auto layout : both) {
    check_transform(rt, 12, 40, layout);
    check_transform(rt, 40, 12, layout);
  }
}

TEST(DistFft, SmallerThanTheTeam) {
  dist::runtime rt;
  // At 4 ranks: 3 rows are 1, 1, 1, 0 (a rank without rows, so without row FFTs); 2 x 9
  // leaves two ranks without rows; 9 x 2 two ranks without columns; 1 x 1 is one point.
  for (auto layout : both)
    for (auto [n0, n1] : {std::pair<index_t, index_t>{3, 7}, {2, 9}, {9, 2}, {1, 1}, {1, 6}})
      check_transform(rt, n0, n1, layout);
}

TEST(DistFft, MeasuredPlans) {
  dist::runtime rt;
  for (auto layout : both) check_transform(rt, 24, 20, layout, apps::fft_planning::measure);
}

TEST(DistFft, PlaneWaveHasOnePeak) {
  // x[i][j] = e^{2 pi i (a i / N0 + b j / N1)} transforms to N0 N1 at (a, b) and 0
  // elsewhere: a check that does not rest on FFTW's own 2-D transform.
  dist::runtime rt;
  index_t const n0 = 20, n1 = 14, a = 3, b = 11;
  for (auto layout : both) {
    apps::distributed_fft2d fft(rt.world(), n0, n1, {layout, apps::fft_planning::estimate});
    fft.rows().for_each([&](strata::vec<2> const& i, complex& x) {
      double const phase = 2 * std::numbers::pi *
                           (static_cast<double>(a * i[0]) / static_cast<double>(n0) +
                            static_cast<double>(b * i[1]) / static_cast<double>(n1));
      x = std::polar(1.0, phase);
    });
    fft.forward();
    double worst = 0;
    fft.output().for_each([&](strata::vec<2> const& k, complex const& x) {
      complex const want = k[0] == a && k[1] == b ? complex(static_cast<double>(n0 * n1)) : 0.0;
      worst = std::max(worst, std::abs(x - want));
    });
    EXPECT_LE(worst, 1e-12 * static_cast<double>(n0 * n1)) << "rank " << rt.rank();
  }
}

TEST(DistFft, BadInput) {
  dist::runtime rt;
  auto message = [&](index_t n0, index_t n1, apps::fft2d_options o = {}) -> std::string {
    try {
      apps::distributed_fft2d fft(rt.world(), n0, n1, o);
    } catch (strata::invalid_argument const& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message(0, 8).find("N0 = 0; expected 1 to"), std::string::npos) << message(0, 8);
  EXPECT_NE(message(8, -3).find("N1 = -3"), std::string::npos);
  // One rank disagrees: every rank fails, naming it.
  if (rt.size() > 1) {
    auto const m = message(rt.rank() == 1 ? 9 : 8, 8);
    EXPECT_NE(m.find("team rank 1 passed N0 = 9, team rank 0 8"), std::string::npos) << m;
    apps::fft2d_options o;
    if (rt.rank() == rt.size() - 1) o.output = apps::fft_layout::transposed;
    auto const m2 = message(8, 8, o);
    EXPECT_NE(m2.find("passed the output layout"), std::string::npos) << m2;
  }
  // The serial helpers check their arguments too.
  std::vector<complex> v(6);
  EXPECT_THROW(apps::reference_fft2d(2, 4, v, -1), strata::invalid_argument);
  EXPECT_THROW(apps::reference_fft2d(2, 3, v, 0), strata::invalid_argument);
  EXPECT_THROW(apps::max_relative_difference(v, std::vector<complex>(5)), strata::invalid_argument);
  // The runtime still works afterwards.
  check_transform(rt, 6, 5, apps::fft_layout::transposed);
}
