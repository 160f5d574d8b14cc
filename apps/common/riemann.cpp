// The exact Riemann solver for the 1-D Euler equations of an ideal gas (Toro, Riemann
// Solvers and Numerical Methods for Fluid Dynamics, ch. 4): the reference of the FORCE
// app's Sod shock tube (ripple-tensors-graphs-scheduling §7.3, issue 17).
#include "ripple_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace apps {
namespace {

double sound_speed(primitive const& w, double g) {
  return std::sqrt(g * w.p / w.rho);
}

// Toro (4.6)-(4.7), (4.37): the pressure function f_K(p) and its derivative.
void pressure_function(double p, primitive const& k, double g, double& f, double& fd) {
  double const ck = sound_speed(k, g);
  if (p > k.p) {  // shock
    double const a = 2 / ((g + 1) * k.rho), b = (g - 1) / (g + 1) * k.p;
    double const q = std::sqrt(a / (b + p));
    f = (p - k.p) * q;
    fd = q * (1 - 0.5 * (p - k.p) / (b + p));
  } else {  // rarefaction
    double const pr = p / k.p;
    f = 2 * ck / (g - 1) * (std::pow(pr, (g - 1) / (2 * g)) - 1);
    fd = 1 / (k.rho * ck) * std::pow(pr, -(g + 1) / (2 * g));
  }
}

}  // namespace

primitive riemann_star(primitive const& l, primitive const& r, double g) {
  double const cl = sound_speed(l, g), cr = sound_speed(r, g);
  double const du = r.u - l.u;
  if (2 * (cl + cr) / (g - 1) <= du)
    throw std::domain_error("exact_riemann: the initial data generate vacuum");
  // The primitive-variable (PVRS) guess, Toro (4.47), kept positive.
  double p = std::max(1e-8, 0.5 * (l.p + r.p) - 0.125 * du * (l.rho + r.rho) * (cl + cr));
  for (int it = 0; it < 100; ++it) {
    double fl = 0, fld = 0, fr = 0, frd = 0;
    pressure_function(p, l, g, fl, fld);
    pressure_function(p, r, g, fr, frd);
    double const next = std::max(1e-12, p - (fl + fr + du) / (fld + frd));
    double const change = 2 * std::abs(next - p) / (next + p);
    p = next;
    if (change < 1e-14) break;
  }
  double fl = 0, fld = 0, fr = 0, frd = 0;
  pressure_function(p, l, g, fl, fld);
  pressure_function(p, r, g, fr, frd);
  return {0, 0.5 * (l.u + r.u) + 0.5 * (fr - fl), p};
}

primitive exact_riemann(primitive const& l, primitive const& r, double g, double s) {
  auto const star = riemann_star(l, r, g);
  double const ps = star.p, us = star.u;
  double const g1 = (g - 1) / (2 * g), g2 = (g + 1) / (2 * g), g6 = (g - 1) / (g + 1);
  if (s <= us) {  // left of the contact (Toro §4.5, Figure 4.14)
    double const cl = sound_speed(l, g);
    if (ps > l.p) {  // left shock
      double const sl = l.u - cl * std::sqrt(g2 * ps / l.p + g1);
      if (s <= sl) return l;
      return {l.rho * (ps / l.p + g6) / (g6 * ps / l.p + 1), us, ps};
    }
    double const head = l.u - cl;  // left rarefaction
    double const tail = us - cl * std::pow(ps / l.p, g1);
    if (s <= head) return l;
    if (s > tail) return {l.rho * std::pow(ps / l.p, 1 / g), us, ps};
    double const c = 2 / (g + 1) * (cl + (g - 1) / 2 * (l.u - s));
    return {l.rho * std::pow(c / cl, 2 / (g - 1)), 2 / (g + 1) * (cl + (g - 1) / 2 * l.u + s),
            l.p * std::pow(c / cl, 2 * g / (g - 1))};
  }
  double const cr = sound_speed(r, g);  // right of the contact
  if (ps > r.p) {                       // right shock
    double const sr = r.u + cr * std::sqrt(g2 * ps / r.p + g1);
    if (s >= sr) return r;
    return {r.rho * (ps / r.p + g6) / (g6 * ps / r.p + 1), us, ps};
  }
  double const head = r.u + cr;  // right rarefaction
  double const tail = us + cr * std::pow(ps / r.p, g1);
  if (s >= head) return r;
  if (s <= tail) return {r.rho * std::pow(ps / r.p, 1 / g), us, ps};
  double const c = 2 / (g + 1) * (cr - (g - 1) / 2 * (r.u - s));
  return {r.rho * std::pow(c / cr, 2 / (g - 1)), 2 / (g + 1) * (-cr + (g - 1) / 2 * r.u + s),
          r.p * std::pow(c / cr, 2 * g / (g - 1))};
}

}  // namespace apps
