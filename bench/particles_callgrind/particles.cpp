// The particles push (x += v * dt, Ripple §4.2 records) for callgrind: the Strata kernel
// on an AoSoA<16> and on an SoA record array (serial backend), and the hand-written SoA
// loop. `valgrind --tool=callgrind --toggle-collect=<side>` counts one side's instructions;
// tools/callgrind-particles.sh compares them. Instruction counts are deterministic, so a
// loop that stops vectorizing (4-8x the instructions) fails the check, where a timing
// would only drift.
#include <strata/strata.hpp>

#include <cstdio>
#include <cstring>
#include <memory>

namespace {

using strata::index_t;

struct particle {
  struct position : strata::field<float, 3> {};
  struct velocity : strata::field<float, 3> {};
  struct force : strata::field<float, 3> {};
  struct mass : strata::field<float> {};
  struct charge : strata::field<float> {};
  struct id : strata::field<std::int32_t> {};
  using fields = strata::fields<position, velocity, force, mass, charge, id>;
};

// The kernel a user writes: a lambda capturing dt by value (the case that used not to
// vectorize on AoSoA).
struct push {
  template <class Self, class P>
  void operator()(Self const& self, P p, float dt) const {
    strata::for_each_record(p, self.elements(p.size()), [dt](auto r) {
      using pos = particle::position;
      using vel = particle::velocity;
      r.template get<pos>(0) += r.template get<vel>(0) * dt;
      r.template get<pos>(1) += r.template get<vel>(1) * dt;
      r.template get<pos>(2) += r.template get<vel>(2) * dt;
    });
  }
};

template <class L>
[[gnu::noinline]] void strata_side(strata::target const& where,
                                   strata::record_array<particle, L>& a, float dt) {
  strata::launch(where, strata::divide_work(where, a.size()), push{}, a.view(), dt).wait();
}

[[gnu::noinline]] void raw_side(index_t n, float* __restrict x, float* __restrict y,
                                float* __restrict z, float const* __restrict vx,
                                float const* __restrict vy, float const* __restrict vz, float dt) {
  for (index_t i = 0; i < n; ++i) {
    x[i] += vx[i] * dt;
    y[i] += vy[i] * dt;
    z[i] += vz[i] * dt;
  }
}

template <class L>
int run_strata(strata::place const& machine, strata::target const& where, index_t n) {
  strata::record_array<particle, L> a(machine, n);
  for (index_t i = 0; i < n; ++i)
    for (std::size_t d = 0; d < 3; ++d) {
      a[i].template get<particle::position>(d) = 1.0f;
      a[i].template get<particle::velocity>(d) = 2.0f;
    }
  strata_side(where, a, 0.5f);
  float const last = a[n - 1].template get<particle::position>(2);
  std::printf("x[n-1] = %g\n", static_cast<double>(last));
  return last == 2.0f ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: particles_callgrind aosoa16|aosoa16hot|soa|raw N\n");
    return 2;
  }
  index_t const n = std::atol(argv[2]);
  strata::runtime rt({.cuda = false});
  auto where = strata::on(rt.machine().processors().front(), strata::backend_id::serial);
  if (std::strcmp(argv[1], "aosoa16") == 0)
    return run_strata<strata::aosoa<16>>(rt.machine(), where, n);
  if (std::strcmp(argv[1], "soa") == 0) return run_strata<strata::soa>(rt.machine(), where, n);
  if (std::strcmp(argv[1], "aosoa16hot") == 0)  // hot/cold field groups
    return run_strata<
        strata::grouped<strata::aosoa<16>, strata::fields<particle::position, particle::velocity>>>(
        rt.machine(), where, n);
  if (std::strcmp(argv[1], "raw") != 0) return 2;
  auto const u = static_cast<std::size_t>(n);
  std::unique_ptr<float[]> c[6];
  for (auto& p : c) p = std::make_unique<float[]>(u);
  for (std::size_t i = 0; i < u; ++i)
    for (int k = 0; k < 6; ++k) c[k][i] = k < 3 ? 1.0f : 2.0f;
  raw_side(n, c[0].get(), c[1].get(), c[2].get(), c[3].get(), c[4].get(), c[5].get(), 0.5f);
  std::printf("x[n-1] = %g\n", static_cast<double>(c[2][u - 1]));
  return c[2][u - 1] == 2.0f ? 0 : 1;
}
