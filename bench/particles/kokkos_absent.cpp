// Built instead of kokkos.cpp when Kokkos was not found: the peer reports itself absent.
#include <stdexcept>

#include "particles/peer.hpp"

namespace strata::bench::particles {

struct kokkos_particles::impl {};

bool kokkos_particles::available() {
  return false;
}
kokkos_particles::kokkos_particles(std::ptrdiff_t) {
  throw std::logic_error("particles: this build has no Kokkos (libtrilinos-kokkos-dev)");
}
kokkos_particles::~kokkos_particles() = default;
void kokkos_particles::init(float const*, float const*) {}
void kokkos_particles::push(float) {}
float kokkos_particles::x(std::ptrdiff_t, int) const {
  return 0;
}

}  // namespace strata::bench::particles
