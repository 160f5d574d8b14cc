// The Eikonal equation |grad phi| = 1 / f by the Fast Iterative Method (Jeong & Whitaker,
// SIAM J. Sci. Comput. 30, 2008), ripple-tensors-graphs-scheduling §7.4: f = 1, one source
// at the centre of the domain, solved in a band of `band` cells around it (the reinitialized
// band of a level set), 2-D and 3-D, float or double. Each cell is a record {value, state}
// (Ripple's Element: the FIM's active list as per-cell flags), so the AoS / SoA / AoSoA
// layouts apply. One kernel source (STRATA_FN) for every layout and place; used by
// apps/eikonal, bench/ripple and tests/apps.
#pragma once

#include <strata/strata.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace apps {

/// The FIM state's type: int32 with either value type, as in Ripple's Element and the
/// Kokkos peer's `{T, int32}` cell. (Until session 67 it was int64 with double, to work
/// around a {double, int32} gather that GCC 12 compiled away at -O2: a library bug, fixed
/// in sessions 15, 25 and 38 (docs/records.md, tests/tensor/record_o2_test.cpp). The wider
/// state cost the 2-D double solve a quarter of its bytes per cell: docs/apps.md, "Ripple's
/// Eikonal solve".)
template <class T>
using fim_state_t = std::int32_t;

/// A cell of the Eikonal solve: the arrival time (distance for f = 1) and its FIM state.
template <class T>
struct eikonal_cell {
  struct value : strata::field<T> {};
  struct state : strata::field<fim_state_t<T>> {};
  using fields = strata::fields<value, state>;
};

// The FIM states (Jeong & Whitaker §3.1): far (not yet reached), active (in the active list:
// its value changed in the last iteration), converged (reached, and its update no longer
// changes it), source (fixed).
inline constexpr int fim_far = 0;
inline constexpr int fim_active = 1;
inline constexpr int fim_converged = 2;
inline constexpr int fim_source = 3;

template <class T>
inline constexpr T fim_infinity = std::numeric_limits<T>::infinity();

/// Godunov's upwind update for f = 1 on spacing h (Jeong & Whitaker eq. 2.4; Zhao 2005):
/// the largest root u of sum_d max(u - a_d, 0)^2 = h^2, where a_d is the smaller of the two
/// neighbours along dimension d. Written with selects, not branches, so that the loop over
/// a row vectorizes; a far neighbour (infinity) is never selected into a root, and a
/// discriminant made from one is clamped (the root it gives is discarded by the select).
template <std::size_t N, class T>
STRATA_FN T godunov_update(T const (&a)[N], T h) {
  if constexpr (N == 1) {
    return a[0] + h;
  } else if constexpr (N == 2) {
    T const lo = a[0] < a[1] ? a[0] : a[1], hi = a[0] < a[1] ? a[1] : a[0];
    T const one = lo + h;
    T const d = hi - lo, disc = T(2) * h * h - d * d;
    T const two = T(0.5) * (lo + hi + std::sqrt(disc > T(0) ? disc : T(0)));
    return one > hi ? two : one;
  } else {
    static_assert(N == 3, "the Eikonal kernels are 1-D, 2-D or 3-D");
    // Sort the three minima (a0 <= a1 <= a2) with a min/max network.
    T const x = a[0] < a[1] ? a[0] : a[1], y = a[0] < a[1] ? a[1] : a[0];
    T const a0 = x < a[2] ? x : a[2], z = x < a[2] ? a[2] : x;
    T const a1 = y < z ? y : z, a2 = y < z ? z : y;
    T const one = a0 + h;
    T const d = a1 - a0, disc2 = T(2) * h * h - d * d;
    T const two = T(0.5) * (a0 + a1 + std::sqrt(disc2 > T(0) ? disc2 : T(0)));
    T const u2 = one > a1 ? two : one;
    T const s = a0 + a1 + a2;
    T const disc3 = s * s - T(3) * (a0 * a0 + a1 * a1 + a2 * a2 - h * h);
    T const three = (s + std::sqrt(disc3 > T(0) ? disc3 : T(0))) / T(3);
    return u2 > a2 ? three : u2;
  }
}

/// One FIM iteration over every cell, in -> out (Jacobi: every cell reads the previous
/// iterate, so the result does not depend on how the domain is cut into blocks or on the
/// order cells are visited). `in` needs padding 1, loaded; its edge padding is far.
///
/// A cell's update q (Godunov, from its neighbours) beyond `limit` (band * h) is treated
/// as far: the solve stays inside the band. The value only decreases: v = min(p, q). The
/// state follows Jeong & Whitaker's list with tolerance 0: a cell whose value changed is
/// active (in the list), a reached cell whose update gives its value again is converged,
/// and a converged or far cell whose update is smaller re-enters the list. `active` gets
/// It returns 1 for an active cell, else 0 (a reducing split folds them): when no cell is
/// active, out equals in, the fixed point of the scheme (what the Fast Marching Method
/// computes), so the solve stops there.
struct fim_step {
  template <class In, class Out, class T>
  STRATA_FN std::uint16_t operator()(In& in, Out& out, T h, T limit) const {
    return update(in, out, h, limit) ? 1 : 0;
  }

 private:
  // Writes the cell's next value and state; returns whether it is active.
  template <class In, class Out, class T>
  STRATA_FN static bool update(In& in, Out& out, T h, T limit) {
    using D = eikonal_cell<T>;
    constexpr std::size_t N = In::dims;
    auto const c = *in;
    T const p = c[typename D::value{}];
    auto const s = c[typename D::state{}];
    T a[N];
    strata::unrolled_for<N>([&](auto d) {
      T const lo = (*in.offset(d, -1))[typename D::value{}];
      T const hi = (*in.offset(d, 1))[typename D::value{}];
      a[d] = lo < hi ? lo : hi;
    });
    T q = godunov_update<N>(a, h);
    q = q > limit ? fim_infinity<T> : q;
    bool const source = s == fim_source;
    bool const lower = !source && q < p;
    T const v = lower ? q : p;
    // "Reached" is `p != infinity`, not `p < infinity` (the same for p >= 0): the test is
    // evaluated only when the first two are false, and an ordered comparison may trap (on
    // a NaN, under GCC's default -ftrapping-math), so GCC does not evaluate it for every
    // lane and leaves the row loop scalar ("control flow in loop"); an equality test
    // cannot trap. On SoA records that made the 2-D solve 2.5x slower (docs/apps.md).
    fim_state_t<T> const next = source                 ? fim_source
                                : lower                ? fim_active
                                : p != fim_infinity<T> ? fim_converged
                                                       : fim_far;
    auto o = *out;
    o[typename D::value{}] = v;
    o[typename D::state{}] = next;
    return lower;
  }
};

/// Sets every cell far, except the source at `centre` (value 0).
struct fim_init {
  template <class It, class T, std::size_t N>
  STRATA_FN void operator()(It& it, strata::vec<N> centre, T zero) const {
    using D = eikonal_cell<T>;
    bool at = true;
    for (std::size_t d = 0; d < N; ++d) at = at && it.global_index(d) == centre[d];
    auto o = *it;
    o[typename D::value{}] = at ? zero : fim_infinity<T>;
    o[typename D::state{}] = fim_state_t<T>(at ? fim_source : fim_far);
  }
};

/// The exact solution: the distance from the centre cell's centre, |x - c| h.
template <std::size_t N>
double exact_distance(strata::vec<N> const& cell, strata::vec<N> const& centre, double h) {
  double s = 0;
  for (std::size_t d = 0; d < N; ++d) {
    double const k = static_cast<double>(cell[d] - centre[d]);
    s += k * k;
  }
  return std::sqrt(s) * h;
}

/// The source cell: the centre of the domain (extent / 2 in every dimension).
template <std::size_t N>
strata::vec<N> eikonal_centre(strata::vec<N> const& extent) {
  strata::vec<N> c{};
  for (std::size_t d = 0; d < N; ++d) c[d] = extent[d] / 2;
  return c;
}

/// The error bound checked, in units of h, for a band of `band` cells. The first-order
/// Godunov scheme has O(h) error for smooth solutions, but a point source is a kink: the
/// error in units of h grows like the log of the distance from the source in cells (Zhao
/// 2005, §4: O(h |log h|) for a point source; it is 0.29 h already at the first diagonal
/// neighbour, h + h/sqrt 2 against sqrt 2 h). Measured maxima (docs/apps.md): 2-D 0.51 h
/// at band 5, 0.70 h at 10, 1.27 h at 64, 1.74 h at 256 (slope 0.34 per unit of ln band);
/// 3-D 0.80 h at 5, 1.14 h at 10, 1.72 h at 32 (slope 0.48). The bound is C0 + C1 ln(band)
/// with a steeper slope than measured, so its margin grows with the band.
template <std::size_t N>
double eikonal_error_bound(double band) {
  double const c0 = N == 3 ? 0.3 : 0.2, c1 = N == 3 ? 0.55 : 0.4;
  return c0 + c1 * std::log(band > 1 ? band : 1);
}

/// What a check of a solved field found.
struct eikonal_report {
  double max_error = 0;        // max |value - exact| over reached cells
  double max_error_cells = 0;  // the same in units of h
  double bound_cells = 0;      // the bound checked, in units of h
  std::int64_t reached = 0;    // cells with a finite value
  std::int64_t missed = 0;     // cells well inside the band (exact <= (band - bound) h) not reached
  std::int64_t outside = 0;    // reached cells whose value exceeds band * h
  std::int64_t below = 0;      // reached cells below the exact distance (beyond round-off)
  bool ok() const {
    return max_error_cells <= bound_cells && missed == 0 && outside == 0 && below == 0;
  }
};

/// Checks row-major `values` of a field of `extent` cells against the exact distance.
/// Besides the error bound: every cell whose exact distance is at most (band - bound) h
/// is reached (the scheme's values exceed the exact ones by at most the bound there), no
/// value exceeds the band, and none lies below the exact distance (the monotone upwind
/// scheme overestimates the distance of a point source off the axes: a diagonal step is
/// made of axis steps).
template <std::size_t N>
eikonal_report check_eikonal(std::vector<double> const& values, strata::vec<N> const& extent,
                             double h, double band, double round_off) {
  eikonal_report r;
  r.bound_cells = eikonal_error_bound<N>(band);
  auto const centre = eikonal_centre(extent);
  strata::vec<N> cell{};
  for (std::size_t k = 0; k < values.size(); ++k) {
    auto rest = static_cast<strata::index_t>(k);
    for (std::size_t d = N; d-- > 0;) {
      cell[d] = rest % extent[d];
      rest /= extent[d];
    }
    double const exact = exact_distance(cell, centre, h);
    double const v = values[k];
    if (std::isfinite(v)) {
      ++r.reached;
      double const e = std::abs(v - exact);
      if (e > r.max_error) r.max_error = e;
      if (v > band * h * (1 + round_off)) ++r.outside;
      if (v < exact * (1 - round_off) - round_off * h) ++r.below;
    } else if (exact <= (band - r.bound_cells) * h) {
      ++r.missed;
    }
  }
  r.max_error_cells = r.max_error / h;
  return r;
}

/// A FIM solve on partitioned record tensors: `extent` cells on the unit square / cube
/// (h = 1 / the largest extent), `parts` blocks over `places`, padding 1, far edges. One
/// graph (Ripple §5.3) holds two iterations, a -> b and b -> a, each a split with
/// `concurrent_padded_access` (the halos between blocks load before each block's kernel);
/// the second is a reducing split that folds the cells' active flags as it writes them
/// (the Kokkos peer's parallel_reduce; session 41 had a tensor of flags and a reduction
/// over it, two bytes a cell more and a pass). `conditional` re-runs the graph while a
/// cell is active. The solution ends in `a` (an even number of iterations).
template <class T, class L, std::size_t N>
class eikonal_solver {
 public:
  using desc = eikonal_cell<T>;
  using cell = strata::records<desc, L>;

  eikonal_solver(std::vector<strata::place> const& places, strata::vec<N> extent,
                 strata::vec<N> parts, double band);
  eikonal_solver(eikonal_solver const&) = delete;  // the graph's predicate holds `this`
  eikonal_solver& operator=(eikonal_solver const&) = delete;

  /// Every cell far, the centre a source.
  void reset();
  /// Iterates until no cell is active (or `max_iterations`); returns the iterations run.
  /// `pool`: the host PUs that run the graph's nodes (all by default).
  int solve(int max_iterations, strata::place const* pool = nullptr);
  /// Whether the last solve reached the fixed point (no active cell).
  bool converged() const { return last_ == 0; }
  T h() const { return h_; }
  double band() const { return band_; }
  strata::vec<N> extent() const { return a_.extent(); }
  strata::tensor<cell, N> const& field() const { return a_; }

  /// Every cell's value, row-major, in double (infinity where far).
  std::vector<double> values(strata::place const& host) const;

  /// Every cell's FIM state, row-major.
  std::vector<int> states(strata::place const& host) const;

 private:
  static strata::index_t largest(strata::vec<N> const& e) {
    strata::index_t m = 0;
    for (std::size_t d = 0; d < N; ++d) m = e[d] > m ? e[d] : m;
    return m;
  }
  static strata::tensor_spec<N> spec(strata::vec<N> extent, strata::vec<N> parts) {
    strata::tensor_spec<N> s{.extent = extent, .padding = 1};
    for (std::size_t d = 0; d < N; ++d) s.partitions[d] = static_cast<std::size_t>(parts[d]);
    return s;
  }

  strata::tensor<cell, N> a_, b_;
  strata::reduction_result<std::uint16_t> result_{0};
  strata::graph graph_;
  T h_, limit_;
  double band_;
  int passes_ = 0, max_iterations_ = 0;
  std::uint16_t last_ = 1;
};

// The members that build the graph and launch the kernels are defined out of the class
// (not inline), so that `extern template` below keeps every other translation unit from
// instantiating them: each instantiation costs about 10 s of compile time, and the app, its
// tests and its benchmark used to compile the same dozen each.
template <class T, class L, std::size_t N>
eikonal_solver<T, L, N>::eikonal_solver(std::vector<strata::place> const& places,
                                        strata::vec<N> extent, strata::vec<N> parts, double band)
    : a_(places, spec(extent, parts)),
      b_(places, spec(extent, parts)),
      h_(T(1.0 / static_cast<double>(largest(extent)))),
      limit_(T(band / static_cast<double>(largest(extent)))),
      band_(band) {
  if (!(band >= 1))
    throw strata::invalid_argument("eikonal: band " + std::to_string(band) +
                                   " cells; expected at least 1");
  strata::record_value<desc> far;
  far[typename desc::value{}] = fim_infinity<T>;
  far[typename desc::state{}] = fim_far;
  strata::set_boundary(a_, strata::boundary::constant<strata::record_value<desc>>{far});
  strata::set_boundary(b_, strata::boundary::constant<strata::record_value<desc>>{far});
  graph_.split(fim_step{}, strata::concurrent_padded_access(a_), b_, h_, limit_)
      .then_split_reduce(result_, strata::reduce_max{}, fim_step{},
                         strata::concurrent_padded_access(b_), a_, h_, limit_);
  graph_.conditional([this] {
    ++passes_;
    last_ = result_.value_and_reset();
    return last_ != 0 && 2 * passes_ < max_iterations_;
  });
}

template <class T, class L, std::size_t N>
void eikonal_solver<T, L, N>::reset() {
  strata::for_each_cell_and_wait(fim_init{}, a_, eikonal_centre(a_.extent()), T(0));
}

template <class T, class L, std::size_t N>
int eikonal_solver<T, L, N>::solve(int max_iterations, strata::place const* pool) {
  passes_ = 0;
  max_iterations_ = max_iterations;
  (pool ? strata::run(graph_, *pool) : strata::run(graph_)).wait();
  return 2 * passes_;
}

template <class T, class L, std::size_t N>
std::vector<double> eikonal_solver<T, L, N>::values(strata::place const& host) const {
  auto const n = a_.extent().product();
  strata::record_array<desc, strata::aos> arr(host, n);
  strata::copy(arr.view(), a_).wait();
  std::vector<double> v(static_cast<std::size_t>(n));
  for (strata::index_t k = 0; k < n; ++k)
    v[static_cast<std::size_t>(k)] = arr[k][typename desc::value{}];
  return v;
}

template <class T, class L, std::size_t N>
std::vector<int> eikonal_solver<T, L, N>::states(strata::place const& host) const {
  auto const n = a_.extent().product();
  strata::record_array<desc, strata::aos> arr(host, n);
  strata::copy(arr.view(), a_).wait();
  std::vector<int> v(static_cast<std::size_t>(n));
  for (strata::index_t k = 0; k < n; ++k)
    v[static_cast<std::size_t>(k)] = static_cast<int>(arr[k][typename desc::state{}]);
  return v;
}

// Compiled once, in apps/common/eikonal_{float,double}_{2,3}d.cpp: the layouts the app,
// its tests and its benchmark run (AoS, SoA, AoSoA<16>). Other instantiations compile
// where they are used.
#define APPS_EIKONAL_SOLVERS(SPEC, T, N)                 \
  SPEC template class eikonal_solver<T, strata::aos, N>; \
  SPEC template class eikonal_solver<T, strata::soa, N>; \
  SPEC template class eikonal_solver<T, strata::aosoa<16>, N>;
APPS_EIKONAL_SOLVERS(extern, float, 2)
APPS_EIKONAL_SOLVERS(extern, double, 2)
APPS_EIKONAL_SOLVERS(extern, float, 3)
APPS_EIKONAL_SOLVERS(extern, double, 3)

}  // namespace apps
