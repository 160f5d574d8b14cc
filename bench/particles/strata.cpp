// particles: x += v * dt over 10^7 particles of 48 bytes (position, velocity, force,
// mass, charge, id), the same Strata kernel on SoA, AoS and AoSoA record arrays
// (Ripple §4.2), against hand-written AoS/SoA loops, Kokkos Serial and raw OpenMP.
// The push reads 24 and writes 12 of the 48 bytes: in AoS whole records stream through
// the cache, in SoA only the six component arrays do; in AoSoA<16> each block's six hot
// lines lie between six cold ones, which the stream prefetcher fetches as well, and
// grouped<aosoa<16>, fields<position, velocity>> (hot/cold groups) puts the hot lines of
// all blocks together.
#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"
#include "particles/peer.hpp"

namespace strata::bench {
namespace {

using particles::particle_aos;
using particles::particles_soa;

struct particle {
  struct position : field<float, 3> {};
  struct velocity : field<float, 3> {};
  struct force : field<float, 3> {};
  struct mass : field<float> {};
  struct charge : field<float> {};
  struct id : field<std::int32_t> {};
  using fields = strata::fields<position, velocity, force, mass, charge, id>;

  template <class R>
  struct access : accessors<R> {
    STRATA_FN auto& x(std::size_t d) { return get<position>(*this, d); }
    STRATA_FN auto& v(std::size_t d) { return get<velocity>(*this, d); }
  };
};
static_assert(record_traits<particle>::record_bytes == sizeof(particle_aos));
using hot16 = grouped<aosoa<16>, fields<particle::position, particle::velocity>>;

// The one kernel source for every layout.
struct push_k {
  template <class Self, class P>
  STRATA_FN void operator()(Self const& self, P p, float dt) const {
    for_each_record(p, self.elements(p.size()), [dt](auto r) {
      r.x(0) += r.v(0) * dt;
      r.x(1) += r.v(1) * dt;
      r.x(2) += r.v(2) * dt;
    });
  }
};

float x0_of(index_t i, int d) {
  return static_cast<float>(i % 1024) + 0.25f * static_cast<float>(d);
}
float v0_of(index_t i, int d) {
  return static_cast<float>((i + d) % 7) - 3.0f;
}
constexpr float dt = 1.0f / 64;  // exact in binary: sums stay exact for small step counts

// A side of the comparison: its data, how to push once, how to read x, steps taken.
struct side {
  std::string name;
  std::function<void()> push;
  std::function<float(index_t, int)> x;
  long steps = 0;
};

void check(side const& s, index_t n) {
  for (index_t i : {index_t{0}, n / 3, n - 1})
    for (int d = 0; d < 3; ++d) {
      float expect = x0_of(i, d);
      for (long k = 0; k < s.steps; ++k) expect += v0_of(i, d) * dt;
      if (std::abs(s.x(i, d) - expect) > 1e-3f * (1 + std::abs(expect)))
        throw std::runtime_error("particles benchmark: wrong result on " + s.name +
                                 " at particle " + std::to_string(i));
    }
}

template <class L>
void init_records(record_array<particle, L>& a, place const& where) {
  launch(
      where, divide_work(where, a.size()),
      [](auto const& self, record_span<particle, L> p) {
        for (auto i : self.elements(p.size())) {
          auto r = p[i];
          for (int d = 0; d < 3; ++d) {
            r.x(static_cast<std::size_t>(d)) = x0_of(i, d);
            r.v(static_cast<std::size_t>(d)) = v0_of(i, d);
            r.template get<particle::force>(static_cast<std::size_t>(d)) = 0;
          }
          r.template get<particle::mass>() = 1;
          r.template get<particle::charge>() = 0;
          r.template get<particle::id>() = static_cast<std::int32_t>(i);
        }
      },
      a.view())
      .wait();
}

template <class L>
side strata_side(std::string name, record_array<particle, L>& a, target where) {
  auto s = divide_work(where, a.size());
  auto v = a.view();
  return {std::move(name), [=] { launch(where, s, push_k{}, v, dt).wait(); },
          [&a](index_t i, int d) { return a[i].x(static_cast<std::size_t>(d)); }};
}

void run_particles(context& ctx) {
  index_t const n = ctx.opts().quick ? index_t{1} << 16 : 10'000'000;
  place const host = ctx.cpus(static_cast<int>(ctx.thread_counts().back()));
  record_array<particle, soa> soa_a(host, n);
  record_array<particle, aos> aos_a(host, n);
  record_array<particle, aosoa<16>> aosoa_a(host, n);
  record_array<particle, hot16> hot_a(host, n);
  init_records(soa_a, host);
  init_records(aos_a, host);
  init_records(aosoa_a, host);
  init_records(hot_a, host);

  std::vector<particle_aos> hand_aos(static_cast<std::size_t>(n));
  particles_soa hand_soa(n);
  std::vector<float> x0(3 * static_cast<std::size_t>(n)), v0(x0.size());
  for (index_t i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) {
      auto k = static_cast<std::size_t>(d * n + i);
      auto u = static_cast<std::size_t>(i);
      x0[k] = hand_aos[u].x[d] = hand_soa.x[d][u] = x0_of(i, d);
      v0[k] = hand_aos[u].v[d] = hand_soa.v[d][u] = v0_of(i, d);
    }
  std::optional<particles::kokkos_particles> kk;
  if (particles::kokkos_particles::available()) {
    kk.emplace(n);
    kk->init(x0.data(), v0.data());
  }

  auto serial = on(ctx.cpus(1), backend_id::serial);
  side s_soa = strata_side("strata-soa/serial", soa_a, serial);
  side s_aos = strata_side("strata-aos/serial", aos_a, serial);
  side s_aosoa = strata_side("strata-aosoa16/serial", aosoa_a, serial);
  side s_hot = strata_side("strata-aosoa16-hot/serial", hot_a, serial);
  side h_aos{"hand-aos/1", [&] { particles::push_aos(hand_aos.data(), n, dt, 1); },
             [&](index_t i, int d) { return hand_aos[static_cast<std::size_t>(i)].x[d]; }};
  side h_soa{"hand-soa/1", [&] { particles::push_soa(hand_soa, n, dt, 1); },
             [&](index_t i, int d) { return hand_soa.x[d][static_cast<std::size_t>(i)]; }};
  side k_soa{"kokkos-serial-soa/1", [&] { kk->push(dt); },
             [&](index_t i, int d) { return kk->x(i, d); }};

  double const bytes = 48.0 * static_cast<double>(n);  // the records' footprint
  auto measure = [&](side& strata_s, side& peer, int threads) {
    long runs = 0, peer_runs = 0;
    auto [ts, tp] = compare(
        ctx.opts().repeats,
        [&] {
          strata_s.push();
          ++runs;
        },
        [&] {
          peer.push();
          ++peer_runs;
        });
    strata_s.steps += runs;
    peer.steps += peer_runs;
    result r{"particles", strata_s.name, static_cast<double>(n), ts, peer.name, tp};
    r.extra = {{"threads", threads},
               {"strata_mparticles_s", static_cast<double>(n) / ts / 1e6},
               {"peer_mparticles_s", static_cast<double>(n) / tp / 1e6},
               {"record_bytes", bytes / static_cast<double>(n)}};
    ctx.report(r);
  };
  // Single thread: the layouts against each other and against the hand-written loops.
  measure(s_soa, s_aos, 1);  // the goal: SoA >= 1.3x AoS
  measure(s_soa, h_aos, 1);
  measure(s_soa, h_soa, 1);
  measure(s_aosoa, s_soa, 1);  // the goals: AoSoA16 >= 0.9x SoA, >= 1.3x AoS
  measure(s_aosoa, s_aos, 1);
  measure(s_hot, s_soa, 1);  // with hot/cold groups
  measure(s_hot, s_aos, 1);
  measure(s_aosoa, h_soa, 1);
  measure(s_aos, h_aos, 1);
  if (kk) measure(s_soa, k_soa, 1);

  // Threads: Strata's SoA push on the threads and openmp backends vs a raw OpenMP loop.
  std::vector<side> extra_sides;
  extra_sides.reserve(8);
  for (int t : ctx.thread_counts()) {
    side peer{"omp-soa/" + std::to_string(t), [&, t] { particles::push_soa(hand_soa, n, dt, t); },
              h_soa.x};
    for (auto b : {backend_id::threads, backend_id::openmp}) {
#if !defined(_OPENMP)
      if (b == backend_id::openmp) continue;
#endif
      side s = strata_side("strata-soa/" + std::string(to_string(b)) + "/" + std::to_string(t),
                           soa_a, on(ctx.cpus(t), b));
      measure(s, peer, t);
      s_soa.steps += s.steps;
      h_soa.steps += peer.steps;
      peer.steps = 0;
    }
    side hot = strata_side("strata-aosoa16-hot/threads/" + std::to_string(t), hot_a,
                           on(ctx.cpus(t), backend_id::threads));
    measure(hot, peer, t);
    s_hot.steps += hot.steps;
    h_soa.steps += peer.steps;
    peer.steps = 0;
  }
  for (side const* s : {&s_soa, &s_aos, &s_aosoa, &s_hot, &h_aos, &h_soa}) check(*s, n);
  if (kk) check(k_soa, n);
}

registrar particles_r("particles",
                      "x += v*dt over 48-byte particles: Strata SoA/AoS/AoSoA records vs "
                      "hand-written AoS/SoA loops, Kokkos Serial and raw OpenMP",
                      run_particles);

}  // namespace
}  // namespace strata::bench
