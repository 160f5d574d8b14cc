// The particles benchmark's peers: the loops a user would write by hand (a plain C++ AoS
// struct, or one array per component), single-threaded and with OpenMP, and Kokkos
// Serial (built only when Debian's Kokkos is found).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace strata::bench::particles {

/// The hand-written record: 48 bytes, as the Strata description's AoS layout.
struct particle_aos {
  float x[3];
  float v[3];
  float f[3];  // force: carried, not touched by the push (what makes layouts matter)
  float mass;
  float charge;
  std::int32_t id;
};

/// One array per component, as a user lays out SoA by hand.
struct particles_soa {
  std::unique_ptr<float[]> x[3], v[3], f[3], mass, charge;
  std::unique_ptr<std::int32_t[]> id;
  explicit particles_soa(std::ptrdiff_t n);
};

// x += v * dt for every particle; `threads` OpenMP threads (1: a plain loop).
void push_aos(particle_aos* p, std::ptrdiff_t n, float dt, int threads);
void push_soa(particles_soa& p, std::ptrdiff_t n, float dt, int threads);

/// Kokkos Serial with one View per component (LayoutLeft for the vectors: SoA), the way
/// a Kokkos user stores particles. Absent when Strata was built without Kokkos.
class kokkos_particles {
 public:
  static bool available();
  explicit kokkos_particles(std::ptrdiff_t n);
  ~kokkos_particles();
  kokkos_particles(kokkos_particles const&) = delete;
  kokkos_particles& operator=(kokkos_particles const&) = delete;
  void init(float const* x0, float const* v0);  // x0, v0: component-major, 3 * n each
  void push(float dt);
  float x(std::ptrdiff_t i, int d) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace strata::bench::particles
