// Ripple's Euler shock-bubble problem (issue 17 item 4, ripple-tensors-graphs-scheduling §8):
// the field after the same steps is the same, bit for bit, on one host block, one sim
// device and three sim devices (the maximum that sets the time step is exact in any order);
// a closed box keeps its mass to round-off and the field stays symmetric about the
// bubble's axis; the inflow balances the mass gained with outflow edges. And `deferred`
// kernel arguments, which carry each pass's time step into the update kernels.
#include "shock_bubble.hpp"

#include <gtest/gtest.h>

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
std::vector<place> sims(std::size_t k) {
  auto all = rt().machine().slice(isa::sim).descendants(place_type::device);
  all.resize(k);
  return all;
}

template <class T>
std::vector<apps::conserved<double>> run(std::vector<place> const& where, index_t rows, int steps,
                                         bool closed, double* time = nullptr) {
  apps::shock_bubble<T, soa> s(where, host(), rows, static_cast<index_t>(where.size()), closed);
  s.run(steps);
  if (time) *time = s.time();
  return s.state(host());
}

struct scale_by {
  template <class It, class F>
  STRATA_FN void operator()(It& it, F f) const {
    *it = *it * f;
  }
};

}  // namespace

TEST(ShockBubble, SameFieldOnOneHostBlockOneAndThreeSimDevices) {
  index_t const rows = 36;
  auto one = run<double>({host()}, rows, 24, false);
  auto sim1 = run<double>(sims(1), rows, 24, false);
  auto sim3 = run<double>(sims(3), rows, 24, false);
  ASSERT_EQ(one.size(), sim3.size());
  for (std::size_t k = 0; k < one.size(); ++k) {
    ASSERT_EQ(one[k].r, sim1[k].r) << "cell " << k;
    ASSERT_EQ(one[k].r, sim3[k].r) << "cell " << k;
    ASSERT_EQ(one[k].e, sim3[k].e) << "cell " << k;
    ASSERT_EQ(one[k].m[0], sim3[k].m[0]) << "cell " << k;
    ASSERT_EQ(one[k].m[1], sim3[k].m[1]) << "cell " << k;
  }
}

TEST(ShockBubble, ClosedBoxKeepsItsMassAndTheFieldStaysSymmetric) {
  index_t const rows = 40;
  for (bool single : {false, true}) {
    apps::shock_bubble_check c;
    if (single) {
      apps::shock_bubble<float, aos> s(sims(3), host(), rows, 3, true);
      double const m0 = apps::total_mass(s.state(host()));
      s.run(80);  // the shock crosses the bubble
      c = apps::check_shock_bubble(s.state(host()), rows, m0, s.time(), true);
    } else {
      apps::shock_bubble<double, aos> s(sims(3), host(), rows, 3, true);
      double const m0 = apps::total_mass(s.state(host()));
      s.run(80);
      c = apps::check_shock_bubble(s.state(host()), rows, m0, s.time(), true);
    }
    EXPECT_LE(c.mass_error, single ? 1e-5 : 1e-12) << (single ? "float" : "double");
    EXPECT_LE(c.asymmetry, single ? 1e-5 : 1e-12) << (single ? "float" : "double");
    EXPECT_GT(c.mass, 0);
  }
}

TEST(ShockBubble, OutflowMassGainIsTheInflow) {
  index_t const rows = 40;
  double t = 0;
  apps::shock_bubble<double, aosoa<16>> s(sims(2), host(), rows, 2);
  double const m0 = apps::total_mass(s.state(host()));
  s.run(60);
  t = s.time();
  auto const c = apps::check_shock_bubble(s.state(host()), rows, m0, t);
  EXPECT_TRUE(c.shock_inside);
  EXPECT_GT(c.inflow, 0);
  EXPECT_LE(c.mass_error, 1e-3);  // the scheme's upstream diffusion at the inflow edge
  EXPECT_LE(c.asymmetry, 1e-12);
}

TEST(ShockBubble, DeferredArgumentsAreReadAtEachLaunch) {
  tensor<double, 2> t(sims(2), tensor_spec<2>{.extent = {8, 5}, .partitions = {2, 1}});
  fill(t, 1.0).wait();
  double factor = 2;
  graph g;
  g.split(scale_by{}, t, deferred([&factor] { return factor; }));
  run(g).wait();
  factor = 3;
  run(g).wait();
  for_each_cell(scale_by{}, t, deferred([] { return 0.5; })).wait();
  std::vector<double> out(40);
  copy(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{8, 5}), t).wait();
  for (double v : out) EXPECT_EQ(v, 3.0);
}
