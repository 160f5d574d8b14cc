// The Kokkos Serial peers of the Ripple benchmarks (Debian's libtrilinos-kokkos-dev): the
// particle update over RangePolicy, and the FORCE flux difference over a 2-D MDRangePolicy
// on a View of State structs (Ripple §7: "the implementations of the kernel function
// objects and structs for Kokkos and Ripple are very similar"). Kokkos is initialized once
// per process, on first use, and finalized at exit. The Eikonal peer is kokkos_eikonal.cpp.
#include <Kokkos_Core.hpp>

#include <cstdlib>

#include "ripple/peer.hpp"

namespace strata::bench::ripple {

void ensure_kokkos() {
  static bool const started = [] {
    if (!Kokkos::is_initialized()) {
      Kokkos::initialize();
      std::atexit([] {
        if (Kokkos::is_initialized()) Kokkos::finalize();
      });
    }
    return true;
  }();
  (void)started;
}

bool kokkos_available() {
  return true;
}

// ------------------------------------------------------------------------- particles

struct kokkos_particles::impl {
  std::ptrdiff_t n;
  bool left;
  Kokkos::View<float*[3], Kokkos::LayoutRight, Kokkos::HostSpace> xr, vr;
  Kokkos::View<float*[3], Kokkos::LayoutLeft, Kokkos::HostSpace> xl, vl;
  impl(std::ptrdiff_t size, bool layout_left) : n(size), left(layout_left) {
    auto const m = static_cast<std::size_t>(size);
    if (left) {
      xl = decltype(xl)("x", m);
      vl = decltype(vl)("v", m);
    } else {
      xr = decltype(xr)("x", m);
      vr = decltype(vr)("v", m);
    }
  }
};

kokkos_particles::kokkos_particles(std::ptrdiff_t n, bool layout_left) {
  ensure_kokkos();
  impl_ = std::make_unique<impl>(n, layout_left);
}
kokkos_particles::~kokkos_particles() = default;

void kokkos_particles::init(float const* x0, float const* v0) {
  auto& p = *impl_;
  for (std::ptrdiff_t i = 0; i < p.n; ++i)
    for (int d = 0; d < 3; ++d) {
      if (p.left) {
        p.xl(i, d) = x0[d * p.n + i];
        p.vl(i, d) = v0[d * p.n + i];
      } else {
        p.xr(i, d) = x0[d * p.n + i];
        p.vr(i, d) = v0[d * p.n + i];
      }
    }
}

namespace {
template <class V>
void push_views(V x, V v, std::ptrdiff_t n, float dt) {
  Kokkos::parallel_for(
      "ripple_push", Kokkos::RangePolicy<Kokkos::Serial>(0, n), KOKKOS_LAMBDA(std::ptrdiff_t i) {
        x(i, 0) += v(i, 0) * dt;
        x(i, 1) += v(i, 1) * dt;
        x(i, 2) += v(i, 2) * dt;
      });
}
}  // namespace

void kokkos_particles::push(float dt) {
  if (impl_->left)
    push_views(impl_->xl, impl_->vl, impl_->n, dt);
  else
    push_views(impl_->xr, impl_->vr, impl_->n, dt);
}

float kokkos_particles::x(std::ptrdiff_t i, int d) const {
  return impl_->left ? impl_->xl(i, d) : impl_->xr(i, d);
}

// ------------------------------------------------------------------------- FORCE flux

namespace {

template <class T>
struct state {
  T rho, mx, my, e;
};

// The Euler flux along x (A = 0) or y (A = 1), as the Strata kernel computes it.
template <int A, class T>
KOKKOS_FORCEINLINE_FUNCTION state<T> flux(state<T> const& u, T gamma) {
  T const mn = A == 0 ? u.mx : u.my;
  T const un = mn / u.rho;
  T const p = (gamma - T(1)) * (u.e - T(0.5) * (u.mx * u.mx + u.my * u.my) / u.rho);
  state<T> f;
  f.rho = mn;
  f.mx = A == 0 ? u.mx * un + p : u.mx * un;
  f.my = A == 0 ? u.my * un : u.my * un + p;
  f.e = un * (u.e + p);
  return f;
}

// Toro's FORCE flux: (F_LF + F(U_RI)) / 2.
template <int A, class T>
KOKKOS_FORCEINLINE_FUNCTION state<T> force(state<T> const& l, state<T> const& r, T dt_dh, T gamma) {
  auto const fl = flux<A>(l, gamma);
  auto const fr = flux<A>(r, gamma);
  T const half = T(0.5), lf_k = T(0.5) / dt_dh, ri_k = T(0.5) * dt_dh;
  state<T> ri;
  ri.rho = half * (l.rho + r.rho) - ri_k * (fr.rho - fl.rho);
  ri.mx = half * (l.mx + r.mx) - ri_k * (fr.mx - fl.mx);
  ri.my = half * (l.my + r.my) - ri_k * (fr.my - fl.my);
  ri.e = half * (l.e + r.e) - ri_k * (fr.e - fl.e);
  auto const fri = flux<A>(ri, gamma);
  state<T> f;
  f.rho = half * (half * (fl.rho + fr.rho) + lf_k * (l.rho - r.rho) + fri.rho);
  f.mx = half * (half * (fl.mx + fr.mx) + lf_k * (l.mx - r.mx) + fri.mx);
  f.my = half * (half * (fl.my + fr.my) + lf_k * (l.my - r.my) + fri.my);
  f.e = half * (half * (fl.e + fr.e) + lf_k * (l.e - r.e) + fri.e);
  return f;
}

}  // namespace

template <class T>
struct kokkos_force<T>::impl {
  using view = Kokkos::View<state<T>**, Kokkos::LayoutRight, Kokkos::HostSpace>;
  std::ptrdiff_t rows, cols;
  view in, out;
  impl(std::ptrdiff_t r, std::ptrdiff_t c)
      : rows(r),
        cols(c),
        in("in", static_cast<std::size_t>(r + 2), static_cast<std::size_t>(c + 2)),
        out("out", static_cast<std::size_t>(r + 2), static_cast<std::size_t>(c + 2)) {}
};

template <class T>
kokkos_force<T>::kokkos_force(std::ptrdiff_t rows, std::ptrdiff_t cols) {
  ensure_kokkos();
  impl_ = std::make_unique<impl>(rows, cols);
}
template <class T>
kokkos_force<T>::~kokkos_force() = default;

template <class T>
void kokkos_force<T>::set(std::ptrdiff_t i, std::ptrdiff_t j, T const (&u)[4]) {
  impl_->in(i + 1, j + 1) = state<T>{u[0], u[1], u[2], u[3]};
}
template <class T>
void kokkos_force<T>::get(std::ptrdiff_t i, std::ptrdiff_t j, T (&u)[4]) const {
  auto const s = impl_->in(i + 1, j + 1);
  u[0] = s.rho;
  u[1] = s.mx;
  u[2] = s.my;
  u[3] = s.e;
}

template <class T>
void kokkos_force<T>::step(T dt_dx, T dt_dy, T gamma, bool rows_policy) {
  auto in = impl_->in;
  auto out = impl_->out;
  std::ptrdiff_t const rows = impl_->rows, cols = impl_->cols;
  // The padding: edge cells copied outwards (rows first, then columns with the corners).
  Kokkos::parallel_for(
      "ripple_pad_rows", Kokkos::RangePolicy<Kokkos::Serial>(1, cols + 1),
      KOKKOS_LAMBDA(std::ptrdiff_t j) {
        in(0, j) = in(1, j);
        in(rows + 1, j) = in(rows, j);
      });
  Kokkos::parallel_for(
      "ripple_pad_cols", Kokkos::RangePolicy<Kokkos::Serial>(0, rows + 2),
      KOKKOS_LAMBDA(std::ptrdiff_t i) {
        in(i, 0) = in(i, 1);
        in(i, cols + 1) = in(i, cols);
      });
  // The cell's update, forced inline into both loops below (as Strata's row loop inlines
  // its kernel: without it GCC 12 keeps a call per cell and nothing vectorizes).
  auto cell = [=](std::ptrdiff_t i, std::ptrdiff_t j) __attribute__((always_inline)) {
    // Member by member: GCC does not vectorize a whole-struct copy out of a View.
    auto at = [&](std::ptrdiff_t a, std::ptrdiff_t b) __attribute__((always_inline)) {
      return state<T>{in(a, b).rho, in(a, b).mx, in(a, b).my, in(a, b).e};
    };
    state<T> const c = at(i, j);
    auto const fw = force<0>(at(i, j - 1), c, dt_dx, gamma);
    auto const fe = force<0>(c, at(i, j + 1), dt_dx, gamma);
    auto const gs = force<1>(at(i - 1, j), c, dt_dy, gamma);
    auto const gn = force<1>(c, at(i + 1, j), dt_dy, gamma);
    state<T> u;
    u.rho = c.rho - dt_dx * (fe.rho - fw.rho) - dt_dy * (gn.rho - gs.rho);
    u.mx = c.mx - dt_dx * (fe.mx - fw.mx) - dt_dy * (gn.mx - gs.mx);
    u.my = c.my - dt_dx * (fe.my - fw.my) - dt_dy * (gn.my - gs.my);
    u.e = c.e - dt_dx * (fe.e - fw.e) - dt_dy * (gn.e - gs.e);
    out(i, j).rho = u.rho;
    out(i, j).mx = u.mx;
    out(i, j).my = u.my;
    out(i, j).e = u.e;
  };
  if (rows_policy) {
    // Rows over a RangePolicy, each row a plain inner loop over the inlined cell update
    // (what a user tuning for the CPU writes to let the compiler vectorize along a row;
    // TeamPolicy + ThreadVectorRange is the same on Serial). GCC 12 vectorizes it.
    Kokkos::parallel_for(
        "ripple_force_rows", Kokkos::RangePolicy<Kokkos::Serial>(1, rows + 1),
        KOKKOS_LAMBDA(std::ptrdiff_t i) {
          for (std::ptrdiff_t j = 1; j <= cols; ++j) cell(i, j);
        });
  } else {
    using policy = Kokkos::MDRangePolicy<Kokkos::Serial, Kokkos::Rank<2>>;
    Kokkos::parallel_for(
        "ripple_force", policy({1, 1}, {rows + 1, cols + 1}),
        KOKKOS_LAMBDA(std::ptrdiff_t i, std::ptrdiff_t j) { cell(i, j); });
  }
  std::swap(impl_->in, impl_->out);
}

template class kokkos_force<float>;
template class kokkos_force<double>;

}  // namespace strata::bench::ripple
