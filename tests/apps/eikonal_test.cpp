// The Eikonal equation by the Fast Iterative Method (ripple-tensors-graphs-scheduling §7.4,
// issue 17 item 3) on small inputs: Godunov's update against its closed forms; solves in
// 2-D and 3-D, float and double, every layout, on the host and over sim devices, each
// converged, within the first-order bound of the exact distance and equal to the others;
// the band's limits and the FIM states; the error falling under refinement at a fixed band
// radius (O(h log 1/h) for a point source); bad bands and extents.
#include "ripple_eikonal.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace strata;

namespace {

runtime& rt() {
  static runtime r{runtime_options{.sim_devices = "3:units=2,lat=2us,bw=20GB/s"}};
  return r;
}
place host() {
  return rt().machine().slice(isa::host);
}
std::vector<place> places(std::string const& where) {
  if (where == "host") return {host()};
  auto all = rt().machine().slice(isa::sim).descendants(place_type::device);
  all.resize(std::stoul(where.substr(3)));
  return all;
}

template <class T, class L, std::size_t N>
struct solved {
  std::vector<double> values;
  std::vector<int> states;
  apps::eikonal_report check;
  int iterations = 0;
  bool converged = false;
};

template <class T, class L, std::size_t N>
solved<T, L, N> solve(std::string const& where, vec<N> extent, vec<N> parts, double band) {
  apps::eikonal_solver<T, L, N> s(places(where), extent, parts, band);
  s.reset();
  solved<T, L, N> r;
  r.iterations = s.solve(static_cast<int>(64 * band) + 64);
  r.converged = s.converged();
  r.values = s.values(host());
  r.states = s.states(host());
  r.check = apps::check_eikonal<N>(r.values, extent, static_cast<double>(s.h()), band,
                                   std::is_same_v<T, float> ? 1e-5 : 1e-12);
  return r;
}

TEST(EikonalGodunov, UpdateMatchesItsClosedForms) {
  double const h = 0.5, inf = apps::fim_infinity<double>;
  // One finite neighbour: a step along an axis.
  EXPECT_DOUBLE_EQ(apps::godunov_update<2>({1.0, inf}, h), 1.5);
  EXPECT_DOUBLE_EQ(apps::godunov_update<3>({inf, 2.0, inf}, h), 2.5);
  // Equal neighbours: (u - a)^2 N = h^2.
  EXPECT_DOUBLE_EQ(apps::godunov_update<2>({1.0, 1.0}, h), 1.0 + h / std::sqrt(2.0));
  EXPECT_NEAR(apps::godunov_update<3>({1.0, 1.0, 1.0}, h), 1.0 + h / std::sqrt(3.0), 1e-15);
  // A neighbour more than h above the smallest takes no part.
  EXPECT_DOUBLE_EQ(apps::godunov_update<2>({1.0, 1.6}, h), 1.5);
  EXPECT_DOUBLE_EQ(apps::godunov_update<3>({1.0, 1.6, 3.0}, h), 1.5);
  // Two of three: the 2-D root, below the third.
  EXPECT_DOUBLE_EQ(apps::godunov_update<3>({1.0, 1.0, 9.0}, h), 1.0 + h / std::sqrt(2.0));
  // Every root solves sum max(u - a_d, 0)^2 = h^2.
  double const a[3] = {0.3, 0.5, 0.6};
  double const u = apps::godunov_update<3>(a, h);
  double sum = 0;
  for (double x : a) sum += std::pow(std::max(u - x, 0.0), 2);
  EXPECT_NEAR(sum, h * h, 1e-14);
  EXPECT_EQ(apps::godunov_update<2>({inf, inf}, h), inf);
  EXPECT_EQ(apps::godunov_update<3>({inf, inf, inf}, h), inf);
  EXPECT_FALSE(std::isnan(apps::godunov_update<3>({0.0, inf, inf}, h)));
}

template <class L>
class Eikonal : public ::testing::Test {};
using layouts = ::testing::Types<aos, soa, aosoa<16>>;
TYPED_TEST_SUITE(Eikonal, layouts);

// 2-D, both precisions, on the host in 2 x 2 blocks and over 3 sim devices in 3 x 2: each
// field converged, within the bound, and equal to the host AoS field (Jacobi iterates do
// not depend on the blocks).
TYPED_TEST(Eikonal, TwoDimensionsOnEveryPlaceWithinTheBound) {
  vec<2> const extent{48, 48};
  for (double band : {5.0, 10.0}) {
    auto const want = solve<double, aos, 2>("host", extent, {1, 1}, band);
    auto const wantf = solve<float, aos, 2>("host", extent, {1, 1}, band);
    for (auto [where, parts] : {std::pair{"host", vec<2>{2, 2}}, std::pair{"sim3", vec<2>{3, 2}}}) {
      auto const d = solve<double, TypeParam, 2>(where, extent, parts, band);
      EXPECT_TRUE(d.converged) << where;
      EXPECT_TRUE(d.check.ok()) << where << " band " << band << ": error "
                                << d.check.max_error_cells << " h, bound " << d.check.bound_cells
                                << " h, missed " << d.check.missed << ", outside "
                                << d.check.outside << ", below " << d.check.below;
      EXPECT_EQ(d.values, want.values) << where << " band " << band;
      EXPECT_EQ(d.iterations, want.iterations);
      auto const f = solve<float, TypeParam, 2>(where, extent, parts, band);
      EXPECT_TRUE(f.converged && f.check.ok()) << where << " float band " << band;
      EXPECT_EQ(f.values, wantf.values) << where << " float band " << band;
      // Single precision's field is the double one to float round-off (a cell exactly on
      // the band's edge may fall on either side of it).
      double const edge = band / 48 * (1 - 1e-6);
      for (std::size_t k = 0; k < f.values.size(); ++k)
        if (std::isfinite(d.values[k]) && std::isfinite(f.values[k])) {
          ASSERT_NEAR(f.values[k], d.values[k], 1e-6) << k;
        } else if (std::isfinite(d.values[k]) || std::isfinite(f.values[k])) {
          ASSERT_GE(std::isfinite(d.values[k]) ? d.values[k] : f.values[k], edge) << k;
        }
    }
  }
}

// 3-D on a box that is not a cube, uneven blocks, host and sim devices.
TYPED_TEST(Eikonal, ThreeDimensionsWithinTheBound) {
  vec<3> const extent{20, 23, 26};
  auto const want = solve<double, aos, 3>("host", extent, {1, 1, 1}, 5);
  EXPECT_TRUE(want.converged && want.check.ok()) << want.check.max_error_cells;
  EXPECT_GT(want.check.reached, 300);  // a ball of radius about 5 cells
  for (auto [where, parts] :
       {std::pair{"host", vec<3>{2, 1, 2}}, std::pair{"sim3", vec<3>{3, 2, 1}}}) {
    auto const d = solve<double, TypeParam, 3>(where, extent, parts, 5);
    EXPECT_TRUE(d.converged && d.check.ok()) << where << ": " << d.check.max_error_cells;
    EXPECT_EQ(d.values, want.values) << where;
    auto const f = solve<float, TypeParam, 3>(where, extent, parts, 5);
    EXPECT_TRUE(f.converged && f.check.ok()) << where << " float";
  }
}

TEST(Eikonal, TheBandLimitsTheSolveAndTheStatesEndConvergedOrFar) {
  // Band 1: the source and its 4 axis neighbours (h); the diagonal ones (h + h/sqrt 2)
  // lie beyond.
  auto const one = solve<double, soa, 2>("host", {9, 9}, {1, 1}, 1);
  EXPECT_EQ(one.check.reached, 5);
  EXPECT_EQ(one.values[4 * 9 + 4], 0.0);
  EXPECT_DOUBLE_EQ(one.values[4 * 9 + 5], 1.0 / 9);
  EXPECT_DOUBLE_EQ(one.values[3 * 9 + 4], 1.0 / 9);
  auto const r = solve<float, aos, 2>("sim2", {40, 40}, {2, 2}, 6);
  ASSERT_TRUE(r.converged);
  double const h = 1.0 / 40;
  for (std::size_t k = 0; k < r.values.size(); ++k) {
    if (k == 20 * 40 + 20) {
      EXPECT_EQ(r.states[k], apps::fim_source);
      EXPECT_EQ(r.values[k], 0.0);
    } else if (std::isfinite(r.values[k])) {
      EXPECT_EQ(r.states[k], apps::fim_converged) << k;
      EXPECT_LE(r.values[k], 6 * h * (1 + 1e-6)) << k;
    } else {
      EXPECT_EQ(r.states[k], apps::fim_far) << k;
    }
  }
}

// At a fixed band radius (1/4 of the domain), halving h must lower the max error by a
// factor a little under 2 (O(h log 1/h)): an observed order of at least 0.5, and within
// the bound at every size.
TEST(Eikonal, ErrorFallsUnderRefinement) {
  double last = 0;
  for (index_t n : {32, 64, 128}) {
    double const band = static_cast<double>(n) / 4;
    auto const r = solve<double, aos, 2>("host", {n, n}, {2, 2}, band);
    EXPECT_TRUE(r.converged && r.check.ok()) << n << ": " << r.check.max_error_cells;
    if (last > 0) {
      EXPECT_GE(std::log2(last / r.check.max_error), 0.5) << n;
    }
    last = r.check.max_error;
  }
  last = 0;
  for (index_t n : {32, 64}) {
    double const band = static_cast<double>(n) / 4;
    auto const r = solve<double, aos, 3>("host", {n, n, n}, {1, 1, 2}, band);
    EXPECT_TRUE(r.converged && r.check.ok()) << n << ": " << r.check.max_error_cells;
    if (last > 0) {
      EXPECT_GE(std::log2(last / r.check.max_error), 0.5) << n;
    }
    last = r.check.max_error;
  }
}

TEST(Eikonal, BadBandsAndExtentsAreErrors) {
  EXPECT_THROW((apps::eikonal_solver<float, aos, 2>({host()}, {16, 16}, {1, 1}, 0)),
               invalid_argument);
  EXPECT_THROW((apps::eikonal_solver<float, aos, 2>({host()}, {16, 16}, {1, 1}, 0.5)),
               invalid_argument);
  EXPECT_THROW((apps::eikonal_solver<double, soa, 3>({host()}, {16, 0, 16}, {1, 1, 1}, 5)),
               invalid_argument);
  try {
    apps::eikonal_solver<float, aos, 2> s({host()}, {16, 16}, {1, 1}, 0);
    FAIL() << "band 0 accepted";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("band 0"), std::string::npos) << e.what();
  }
}

}  // namespace
