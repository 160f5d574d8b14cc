// The Kokkos Serial peer of ripple-eikonal (ripple-tensors-graphs-scheduling §7.4): the
// Fast Iterative Method as a Kokkos user writes it, Views of {value, state} structs and
// parallel_for / parallel_reduce over MDRangePolicy (Ripple §7: "the implementations of the
// kernel function objects and structs for Kokkos and Ripple are very similar").
#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "ripple/peer.hpp"

namespace strata::bench::ripple {

namespace {

// Ripple's Kokkos Element: the value and the FIM state of a cell.
template <class T>
struct fim_cell {
  T value;
  std::int32_t state;
};

constexpr std::int32_t far_state = 0, active_state = 1, converged_state = 2, source_state = 3;

template <class T, int N>
using fim_view = Kokkos::View<std::conditional_t<N == 2, fim_cell<T>**, fim_cell<T>***>,
                              Kokkos::LayoutRight, Kokkos::HostSpace>;

// Godunov's upwind update for f = 1 (as apps::godunov_update): the largest root of
// sum_d max(u - a_d, 0)^2 = h^2 over the sorted neighbour minima.
template <class T>
KOKKOS_INLINE_FUNCTION T godunov(T a, T b, T h) {
  T const lo = a < b ? a : b, hi = a < b ? b : a;
  T const one = lo + h;
  T const d = hi - lo, disc = T(2) * h * h - d * d;
  T const two = T(0.5) * (lo + hi + std::sqrt(disc > T(0) ? disc : T(0)));
  return one > hi ? two : one;
}
template <class T>
KOKKOS_INLINE_FUNCTION T godunov(T a, T b, T c, T h) {
  T const x = a < b ? a : b, y = a < b ? b : a;
  T const a0 = x < c ? x : c, z = x < c ? c : x;
  T const a1 = y < z ? y : z, a2 = y < z ? z : y;
  T const u2 = godunov(a0, a1, h);
  T const s = a0 + a1 + a2;
  T const disc = s * s - T(3) * (a0 * a0 + a1 * a1 + a2 * a2 - h * h);
  T const three = (s + std::sqrt(disc > T(0) ? disc : T(0))) / T(3);
  return u2 > a2 ? three : u2;
}

// The FIM update of one cell from its Godunov value q (as apps::fim_step); returns 1 when
// the cell is active afterwards.
template <class T>
KOKKOS_INLINE_FUNCTION int fim_update(fim_cell<T> const& c, T q, T limit, fim_cell<T>& out) {
  q = q > limit ? std::numeric_limits<T>::infinity() : q;
  bool const source = c.state == source_state;
  bool const lower = !source && q < c.value;
  out.value = lower ? q : c.value;
  out.state = source                                          ? source_state
              : lower                                         ? active_state
              : c.value != std::numeric_limits<T>::infinity() ? converged_state
                                                              : far_state;
  return lower ? 1 : 0;
}

}  // namespace

template <class T, int N>
struct kokkos_eikonal<T, N>::impl {
  std::ptrdiff_t n;
  T h, limit;
  fim_view<T, N> a, b;
  bool converged = false;
  static fim_view<T, N> make(std::string const& name, std::ptrdiff_t n) {
    auto const m = static_cast<std::size_t>(n + 2);
    if constexpr (N == 2)
      return fim_view<T, N>(name, m, m);
    else
      return fim_view<T, N>(name, m, m, m);
  }
  impl(std::ptrdiff_t size, double band)
      : n(size),
        h(T(1.0 / static_cast<double>(size))),
        limit(T(band / static_cast<double>(size))),
        a(make("a", size)),
        b(make("b", size)) {}
};

template <class T, int N>
kokkos_eikonal<T, N>::kokkos_eikonal(std::ptrdiff_t n, double band) {
  ensure_kokkos();
  impl_ = std::make_unique<impl>(n, band);
}
template <class T, int N>
kokkos_eikonal<T, N>::~kokkos_eikonal() = default;

template <class T, int N>
void kokkos_eikonal<T, N>::reset() {
  auto a = impl_->a;
  auto b = impl_->b;
  std::ptrdiff_t const c = impl_->n / 2 + 1, m = impl_->n + 2;
  fim_cell<T> const far{std::numeric_limits<T>::infinity(), far_state};
  // Every cell of both views, ghosts included, far; then the source.
  if constexpr (N == 2) {
    Kokkos::parallel_for(
        "fim_reset", Kokkos::MDRangePolicy<Kokkos::Serial, Kokkos::Rank<2>>({0, 0}, {m, m}),
        KOKKOS_LAMBDA(std::ptrdiff_t i, std::ptrdiff_t j) {
          a(i, j) = far;
          b(i, j) = far;
        });
    a(c, c) = fim_cell<T>{T(0), source_state};
  } else {
    Kokkos::parallel_for(
        "fim_reset", Kokkos::MDRangePolicy<Kokkos::Serial, Kokkos::Rank<3>>({0, 0, 0}, {m, m, m}),
        KOKKOS_LAMBDA(std::ptrdiff_t i, std::ptrdiff_t j, std::ptrdiff_t k) {
          a(i, j, k) = far;
          b(i, j, k) = far;
        });
    a(c, c, c) = fim_cell<T>{T(0), source_state};
  }
}

template <class T, int N>
int kokkos_eikonal<T, N>::solve(int max_iterations) {
  auto& p = *impl_;
  std::ptrdiff_t const n = p.n;
  T const h = p.h, limit = p.limit;
  int iterations = 0;
  // One iteration in -> out over the interior; `count` adds the active cells.
  auto iterate = [&](fim_view<T, N> in, fim_view<T, N> out, bool count) {
    int active = 0;
    if constexpr (N == 2) {
      using policy = Kokkos::MDRangePolicy<Kokkos::Serial, Kokkos::Rank<2>>;
      auto cell = KOKKOS_LAMBDA(std::ptrdiff_t i, std::ptrdiff_t j, int& act) {
        T const x =
            in(i, j - 1).value < in(i, j + 1).value ? in(i, j - 1).value : in(i, j + 1).value;
        T const y =
            in(i - 1, j).value < in(i + 1, j).value ? in(i - 1, j).value : in(i + 1, j).value;
        act += fim_update(in(i, j), godunov(x, y, h), limit, out(i, j));
      };
      if (count)
        Kokkos::parallel_reduce("fim_iterate_count", policy({1, 1}, {n + 1, n + 1}), cell, active);
      else
        Kokkos::parallel_for(
            "fim_iterate", policy({1, 1}, {n + 1, n + 1}),
            KOKKOS_LAMBDA(std::ptrdiff_t i, std::ptrdiff_t j) {
              int unused = 0;
              cell(i, j, unused);
            });
    } else {
      using policy = Kokkos::MDRangePolicy<Kokkos::Serial, Kokkos::Rank<3>>;
      auto cell = KOKKOS_LAMBDA(std::ptrdiff_t i, std::ptrdiff_t j, std::ptrdiff_t k, int& act) {
        T const x = in(i, j, k - 1).value < in(i, j, k + 1).value ? in(i, j, k - 1).value
                                                                  : in(i, j, k + 1).value;
        T const y = in(i, j - 1, k).value < in(i, j + 1, k).value ? in(i, j - 1, k).value
                                                                  : in(i, j + 1, k).value;
        T const z = in(i - 1, j, k).value < in(i + 1, j, k).value ? in(i - 1, j, k).value
                                                                  : in(i + 1, j, k).value;
        act += fim_update(in(i, j, k), godunov(x, y, z, h), limit, out(i, j, k));
      };
      if (count)
        Kokkos::parallel_reduce("fim_iterate_count", policy({1, 1, 1}, {n + 1, n + 1, n + 1}), cell,
                                active);
      else
        Kokkos::parallel_for(
            "fim_iterate", policy({1, 1, 1}, {n + 1, n + 1, n + 1}),
            KOKKOS_LAMBDA(std::ptrdiff_t i, std::ptrdiff_t j, std::ptrdiff_t k) {
              int unused = 0;
              cell(i, j, k, unused);
            });
    }
    return active;
  };
  // Two iterations per pass, a -> b -> a, the second counting (as the Strata graph).
  int active = 1;
  while (active != 0 && iterations < max_iterations) {
    iterate(p.a, p.b, false);
    active = iterate(p.b, p.a, true);
    iterations += 2;
  }
  p.converged = active == 0;
  return iterations;
}

template <class T, int N>
bool kokkos_eikonal<T, N>::converged() const {
  return impl_->converged;
}

template <class T, int N>
void kokkos_eikonal<T, N>::values(double* out) const {
  auto const& a = impl_->a;
  std::ptrdiff_t const n = impl_->n;
  std::size_t k = 0;
  if constexpr (N == 2) {
    for (std::ptrdiff_t i = 1; i <= n; ++i)
      for (std::ptrdiff_t j = 1; j <= n; ++j) out[k++] = a(i, j).value;
  } else {
    for (std::ptrdiff_t i = 1; i <= n; ++i)
      for (std::ptrdiff_t j = 1; j <= n; ++j)
        for (std::ptrdiff_t l = 1; l <= n; ++l) out[k++] = a(i, j, l).value;
  }
}

template class kokkos_eikonal<float, 2>;
template class kokkos_eikonal<double, 2>;
template class kokkos_eikonal<float, 3>;
template class kokkos_eikonal<double, 3>;

}  // namespace strata::bench::ripple
