// Ripple's 2-D Euler benchmark (ripple-tensors-graphs-scheduling §8, Figure 11, Listing 12):
// a Mach 3.81 shock running into a low-density bubble. The domain is split in y over the
// given places; each graph pass is two time steps built as Listing 12 builds one: the
// per-cell signal speeds, their maximum as a graph reduction, the time step from it, then
// the FORCE update with `concurrent_padded_access` (padding loaded per block as its
// neighbours' rows are ready, edges by the problem's boundary loader) — the time step
// reaches the update kernels through `deferred`, read when each block's kernel launches.
// Walls (reflecting) at the bottom and top, outflow (zero gradient) left and right; the
// post-shock flow is supersonic, so the left edge keeps feeding exactly that state.
#pragma once

#include "render.hpp"
#include "ripple_euler.hpp"

#include <strata/strata.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace apps {

/// The problem: y in [0, 1] over `rows` cells, x in [0, 2] over 2 * rows; ambient air at
/// rest (rho 1, p 1); a bubble of rho 0.1 at (0.6, 0.5), radius 0.25; a shock at x = 0.2
/// moving right at Mach 3.81 with the Rankine-Hugoniot post-shock state behind it.
struct shock_bubble_setup {
  static constexpr double mach = 3.81, shock_x = 0.2, bubble_x = 0.6, bubble_y = 0.5,
                          bubble_r = 0.25, bubble_rho = 0.1, cfl = 0.4;
  /// rho, u, p behind the shock (ambient rho 1, p 1, at rest; gamma 1.4).
  static std::array<double, 3> post_shock() {
    double const g = euler_gamma, m2 = mach * mach;
    double const p = 1 + 2 * g / (g + 1) * (m2 - 1);
    double const rho = (g + 1) * m2 / ((g - 1) * m2 + 2);
    double const s = mach * std::sqrt(g);  // shock speed: Mach times the ambient sound speed
    return {rho, s * (1 - 1 / rho), p};
  }
  /// Primitive variables {rho, u, v, p} at the centre of cell (i, j) of a rows-high grid.
  static std::array<double, 4> at(strata::index_t i, strata::index_t j, strata::index_t rows) {
    double const h = 1.0 / static_cast<double>(rows);
    double const y = (static_cast<double>(i) + 0.5) * h, x = (static_cast<double>(j) + 0.5) * h;
    if (x < shock_x) {
      auto const [rho, u, p] = post_shock();
      return {rho, u, 0, p};
    }
    double const dx = x - bubble_x, dy = y - bubble_y;
    if (dx * dx + dy * dy < bubble_r * bubble_r) return {bubble_rho, 0, 0, 1};
    return {1, 0, 0, 1};
  }
};

/// The edges: reflecting walls in y (dimension 0: the mirrored cell with its y momentum
/// negated); in x (dimension 1) outflow (a copy of the edge cell), or walls too when
/// `closed` (a closed box, whose mass must stay what it was to round-off).
template <class T>
struct shock_bubble_edges {
  bool closed = false;
  template <class It>
  STRATA_FN void operator()(It& it, std::size_t dim, int side) const {
    auto c = load_state<T>(*it.offset(dim, -side));
    if (dim == 0) c.m[1] = -c.m[1];
    if (dim == 1 && closed) c.m[0] = -c.m[0];
    store_state<T>(*it, c);
  }
};

/// The solver on `places` (blocks split in y, `parts` of them) in precision T and record
/// layout L.
template <class T, class L>
class shock_bubble {
 public:
  shock_bubble(std::vector<strata::place> const& places, strata::place const& host,
               strata::index_t rows, strata::index_t parts, bool closed = false)
      : f_(places, {rows, 2 * rows}, {parts, 1}, shock_bubble_edges<T>{closed}),
        rows_(rows),
        h_(1.0 / static_cast<double>(rows)) {
    f_.set(host, [rows](strata::index_t i, strata::index_t j) {
      return shock_bubble_setup::at(i, j, rows);
    });
    // Listing 12, twice (in -> out, then out -> in): the buffers end where they began.
    half_step(f_.in, f_.out, w1_, dt1_);
    half_step(f_.out, f_.in, w2_, dt2_);
  }

  /// Runs `pairs` graph passes (2 * pairs steps); returns the simulated time they covered.
  double run(int pairs) {
    double t = 0;
    for (int k = 0; k < pairs; ++k) {
      strata::run(g_).wait();
      t += dt1_ + dt2_;
      time_ += dt1_ + dt2_;
      steps_ += 2;
    }
    return t;
  }
  double time() const noexcept { return time_; }
  int steps() const noexcept { return steps_; }
  double h() const noexcept { return h_; }
  strata::index_t rows() const noexcept { return rows_; }
  strata::index_t cols() const noexcept { return 2 * rows_; }
  /// The conserved variables of every cell, row-major (double).
  std::vector<conserved<double>> state(strata::place const& host) const { return f_.get(host); }

 private:
  void half_step(strata::tensor<typename euler_field<T, L>::cell, 2>& in,
                 strata::tensor<typename euler_field<T, L>::cell, 2>& out,
                 strata::reduction_result<T>& w, double& dt) {
    g_.then_split(max_wavespeed{}, in, f_.speeds, T(euler_gamma))
        .then_reduce(f_.speeds, w, strata::reduce_max{})
        .then([&w, &dt, h = h_] {  // set_dt
          dt = shock_bubble_setup::cfl * h / static_cast<double>(w.value());
        })
        .then_split(force_step{}, strata::concurrent_padded_access(in), out,
                    strata::deferred([&dt, h = h_] { return T(dt / h); }),
                    strata::deferred([&dt, h = h_] { return T(dt / h); }), T(euler_gamma));
  }

  euler_field<T, L> f_;
  strata::index_t rows_;
  double h_;
  strata::graph g_;
  strata::reduction_result<T> w1_{T(0)}, w2_{T(0)};
  double dt1_ = 0, dt2_ = 0, time_ = 0;
  int steps_ = 0;
};

/// The checks of a run (issue 17 item 4). Mass: in a closed box it stays what it was, to
/// round-off; with the outflow edges the mass gained is what the left edge let in, rows x
/// rho2 u2 x t / h in cell sums, up to the first-order scheme's upstream diffusion of the
/// initial shock (it reaches the inflow edge at 1e-5 of the flux after ~10 cells).
/// Symmetry: the field mirrored about the bubble's axis y = 0.5.
struct shock_bubble_check {
  double mass0 = 0, mass = 0, inflow = 0;
  double mass_error = 0;  // |mass - mass0 - inflow| / mass
  double asymmetry = 0;   // max |rho(y) - rho(1 - y)| / max rho
  bool shock_inside = true;
};
inline double total_mass(std::vector<conserved<double>> const& u) {
  double m = 0;
  for (auto const& c : u) m += c.r;
  return m;
}
inline shock_bubble_check check_shock_bubble(std::vector<conserved<double>> const& u,
                                             strata::index_t rows, double mass0, double time,
                                             bool closed = false) {
  shock_bubble_check c;
  strata::index_t const cols = 2 * rows;
  auto const [rho2, u2, p2] = shock_bubble_setup::post_shock();
  (void)p2;
  c.mass0 = mass0;
  c.mass = total_mass(u);
  c.inflow =
      closed ? 0.0 : static_cast<double>(rows) * rho2 * u2 * time * static_cast<double>(rows);
  c.mass_error = std::abs(c.mass - c.mass0 - c.inflow) / c.mass;
  double top = 0, diff = 0;
  for (strata::index_t i = 0; i < rows; ++i)
    for (strata::index_t j = 0; j < cols; ++j) {
      double const a = u[static_cast<std::size_t>(i * cols + j)].r;
      double const b = u[static_cast<std::size_t>((rows - 1 - i) * cols + j)].r;
      top = std::max(top, a);
      diff = std::max(diff, std::abs(a - b));
    }
  c.asymmetry = top > 0 ? diff / top : 0;
  double const speed = shock_bubble_setup::mach * std::sqrt(euler_gamma);
  c.shock_inside =
      shock_bubble_setup::shock_x + speed * time < 2.0 - 2.0 / static_cast<double>(rows);
  return c;
}

/// A numerical schlieren picture of the density (exp(-k |grad rho| / max |grad rho|), dark
/// where the density changes fast: shocks, the bubble's edge and its vortices), rows
/// flipped so that y points up.
image schlieren(std::vector<conserved<double>> const& u, strata::index_t rows,
                strata::index_t cols);

}  // namespace apps
