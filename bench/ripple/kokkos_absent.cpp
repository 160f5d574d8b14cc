// Built instead of kokkos.cpp when Kokkos was not found: the peers report themselves absent.
#include <stdexcept>

#include "ripple/peer.hpp"

namespace strata::bench::ripple {
namespace {
[[noreturn]] void absent() {
  throw std::logic_error("ripple: this build has no Kokkos (libtrilinos-kokkos-dev)");
}
}  // namespace

bool kokkos_available() {
  return false;
}

struct kokkos_particles::impl {};
kokkos_particles::kokkos_particles(std::ptrdiff_t, bool) {
  absent();
}
kokkos_particles::~kokkos_particles() = default;
void kokkos_particles::init(float const*, float const*) {}
void kokkos_particles::push(float) {}
float kokkos_particles::x(std::ptrdiff_t, int) const {
  return 0;
}

template <class T>
struct kokkos_force<T>::impl {};
template <class T>
kokkos_force<T>::kokkos_force(std::ptrdiff_t, std::ptrdiff_t) {
  absent();
}
template <class T>
kokkos_force<T>::~kokkos_force() = default;
template <class T>
void kokkos_force<T>::set(std::ptrdiff_t, std::ptrdiff_t, T const (&)[4]) {}
template <class T>
void kokkos_force<T>::step(T, T, T, bool) {}
template <class T>
void kokkos_force<T>::get(std::ptrdiff_t, std::ptrdiff_t, T (&)[4]) const {}
template class kokkos_force<float>;
template class kokkos_force<double>;

template <class T, int N>
struct kokkos_eikonal<T, N>::impl {};
template <class T, int N>
kokkos_eikonal<T, N>::kokkos_eikonal(std::ptrdiff_t, double) {
  absent();
}
template <class T, int N>
kokkos_eikonal<T, N>::~kokkos_eikonal() = default;
template <class T, int N>
void kokkos_eikonal<T, N>::reset() {}
template <class T, int N>
int kokkos_eikonal<T, N>::solve(int) {
  return 0;
}
template <class T, int N>
bool kokkos_eikonal<T, N>::converged() const {
  return false;
}
template <class T, int N>
void kokkos_eikonal<T, N>::values(double*) const {}
template class kokkos_eikonal<float, 2>;
template class kokkos_eikonal<double, 2>;
template class kokkos_eikonal<float, 3>;
template class kokkos_eikonal<double, 3>;

}  // namespace strata::bench::ripple
