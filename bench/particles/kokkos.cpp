// The Kokkos Serial peer (Debian's libtrilinos-kokkos-dev): one View per field, vectors
// LayoutLeft (component-major: SoA), a RangePolicy<Serial> parallel_for. Kokkos is
// initialized once per process, on first use, and finalized at exit.
#include <Kokkos_Core.hpp>

#include <cstdlib>

#include "particles/peer.hpp"

namespace strata::bench::particles {
namespace {

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

using vec3_view = Kokkos::View<float* [3], Kokkos::LayoutLeft, Kokkos::HostSpace>;
using scalar_view = Kokkos::View<float*, Kokkos::HostSpace>;

}  // namespace

struct kokkos_particles::impl {
  std::ptrdiff_t n;
  vec3_view x, v, f;
  scalar_view mass, charge;
  Kokkos::View<std::int32_t*, Kokkos::HostSpace> id;
  explicit impl(std::ptrdiff_t size)
      : n(size),
        x("x", static_cast<std::size_t>(size)),
        v("v", static_cast<std::size_t>(size)),
        f("f", static_cast<std::size_t>(size)),
        mass("mass", static_cast<std::size_t>(size)),
        charge("charge", static_cast<std::size_t>(size)),
        id("id", static_cast<std::size_t>(size)) {}
};

bool kokkos_particles::available() {
  return true;
}

kokkos_particles::kokkos_particles(std::ptrdiff_t n) {
  ensure_kokkos();
  impl_ = std::make_unique<impl>(n);
}
kokkos_particles::~kokkos_particles() = default;

void kokkos_particles::init(float const* x0, float const* v0) {
  auto& p = *impl_;
  for (std::ptrdiff_t i = 0; i < p.n; ++i)
    for (int d = 0; d < 3; ++d) {
      p.x(i, d) = x0[d * p.n + i];
      p.v(i, d) = v0[d * p.n + i];
    }
}

void kokkos_particles::push(float dt) {
  auto x = impl_->x;
  auto v = impl_->v;
  Kokkos::parallel_for(
      "push", Kokkos::RangePolicy<Kokkos::Serial>(0, impl_->n), KOKKOS_LAMBDA(std::ptrdiff_t i) {
        x(i, 0) += v(i, 0) * dt;
        x(i, 1) += v(i, 1) * dt;
        x(i, 2) += v(i, 2) * dt;
      });
}

float kokkos_particles::x(std::ptrdiff_t i, int d) const {
  return impl_->x(i, d);
}

}  // namespace strata::bench::particles
