// Hand-written particle pushes: what a user writes without Strata (compiled with the
// same flags as the Strata side).
#include "particles/peer.hpp"

namespace strata::bench::particles {

particles_soa::particles_soa(std::ptrdiff_t n) {
  auto const m = static_cast<std::size_t>(n);
  for (int d = 0; d < 3; ++d) {
    x[d] = std::make_unique<float[]>(m);
    v[d] = std::make_unique<float[]>(m);
    f[d] = std::make_unique<float[]>(m);
  }
  mass = std::make_unique<float[]>(m);
  charge = std::make_unique<float[]>(m);
  id = std::make_unique<std::int32_t[]>(m);
}

void push_aos(particle_aos* p, std::ptrdiff_t n, float dt, int threads) {
#pragma omp parallel for num_threads(threads) if (threads > 1)
  for (std::ptrdiff_t i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) p[i].x[d] += p[i].v[d] * dt;
}

void push_soa(particles_soa& p, std::ptrdiff_t n, float dt, int threads) {
  float* __restrict x0 = p.x[0].get();
  float* __restrict x1 = p.x[1].get();
  float* __restrict x2 = p.x[2].get();
  float const* __restrict v0 = p.v[0].get();
  float const* __restrict v1 = p.v[1].get();
  float const* __restrict v2 = p.v[2].get();
#pragma omp parallel for simd num_threads(threads) if (threads > 1)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    x0[i] += v0[i] * dt;
    x1[i] += v1[i] * dt;
    x2[i] += v2[i] * dt;
  }
}

}  // namespace strata::bench::particles
