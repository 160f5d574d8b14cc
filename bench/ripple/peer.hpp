// The Kokkos peers of the Ripple benchmarks (ripple-tensors-graphs-scheduling §7.2-7.3):
// the particle update and the FORCE flux difference written as a Kokkos user writes them
// (Views, parallel_for over RangePolicy / MDRangePolicy, Kokkos Serial: Debian's Kokkos
// has no other backend). Built only when Debian's Kokkos is found (kokkos.cpp); otherwise
// kokkos_absent.cpp reports them absent. No Kokkos type appears here, so the Strata side
// never sees Kokkos headers.
#pragma once

#include <cstddef>
#include <memory>

namespace strata::bench::ripple {

bool kokkos_available();
/// Initializes Kokkos once per process (kokkos.cpp; finalized at exit).
void ensure_kokkos();

/// Particles as two Views, position and velocity, `View<float*[3], Layout>`: LayoutRight
/// (Kokkos' host default: each particle's three components together) or LayoutLeft
/// (component-major, what a user tuning for GPUs picks).
class kokkos_particles {
 public:
  kokkos_particles(std::ptrdiff_t n, bool layout_left);
  ~kokkos_particles();
  kokkos_particles(kokkos_particles const&) = delete;
  kokkos_particles& operator=(kokkos_particles const&) = delete;
  void init(float const* x0, float const* v0);  // component-major, 3 * n each
  void push(float dt);
  float x(std::ptrdiff_t i, int d) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A rows x cols field of 2-D Euler states (density, x/y momentum, energy) in one
/// `View<state**>` (LayoutRight, a struct per cell: Ripple's Kokkos State) with one cell
/// of padding; a step fills the padding by copying the edge cells (transmissive), then
/// computes the FORCE flux on the four faces of every cell over an MDRangePolicy<Rank<2>>
/// (or over rows, see step).
template <class T>
class kokkos_force {
 public:
  kokkos_force(std::ptrdiff_t rows, std::ptrdiff_t cols);
  ~kokkos_force();
  kokkos_force(kokkos_force const&) = delete;
  kokkos_force& operator=(kokkos_force const&) = delete;
  void set(std::ptrdiff_t i, std::ptrdiff_t j, T const (&u)[4]);  // rho, mx, my, e
  /// One step, in -> out, then the buffers swap; `rows_policy`: a RangePolicy over rows
  /// with a plain loop along each row instead of the MDRangePolicy.
  void step(T dt_dx, T dt_dy, T gamma, bool rows_policy = false);
  void get(std::ptrdiff_t i, std::ptrdiff_t j, T (&u)[4]) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Ripple's Kokkos FIM (§7.4): an (n + 2)^N View of {value, state} structs (LayoutRight,
/// the host default: a cell's members together), N = 2 or 3, one ghost layer kept far.
/// An iteration is a parallel_for over an MDRangePolicy<Rank<N>> (in -> out); every second
/// one is a parallel_reduce that also counts the active cells, and the solve stops when it
/// finds none: the same Jacobi FIM with tolerance 0 as apps::fim_step.
template <class T, int N>
class kokkos_eikonal {
 public:
  kokkos_eikonal(std::ptrdiff_t n, double band);
  ~kokkos_eikonal();
  kokkos_eikonal(kokkos_eikonal const&) = delete;
  kokkos_eikonal& operator=(kokkos_eikonal const&) = delete;
  /// Every cell far, the source (value 0) at cell n / 2 in every dimension.
  void reset();
  /// Iterates until no cell is active or `max_iterations`; returns the iterations run.
  int solve(int max_iterations);
  bool converged() const;
  /// Every cell's value, row-major (n^N), infinity where far.
  void values(double* out) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace strata::bench::ripple
