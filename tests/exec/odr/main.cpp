// Issue 13, "one definition per template": the same launch instantiated in a plain, an
// OpenMP and an nvcc translation unit (kernel.hpp). CMake links this program with the
// units in both orders, at -O0 and -O2; the linker keeps a different unit's copy of
// launch<...> in each. Before launch's backend list was made the same in every unit,
// the openmp backend threw "not compiled into this translation unit" from some units in
// some of these programs, depending on which copy was kept. This unit instantiates no
// launch itself (it would come first in the link and always be the copy kept).
#include <strata/exec/copy.hpp>
#include <strata/memory.hpp>
#include <strata/runtime.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "kernel.hpp"

namespace {

int failures = 0;

void check(char const* unit,
           strata::event (*fill)(strata::target const&, int*, int, strata::index_t),
           strata::target const& where, char const* what) {
  strata::index_t const n = 1000;
  std::vector<int> v(n, 0);
  try {
    fill(where, v.data(), 7, n).wait();
    for (strata::index_t i = 0; i < n; ++i)
      if (v[static_cast<std::size_t>(i)] != 7) {
        std::printf("FAIL %s unit, %s: element %lld is %d, expected 7\n", unit, what,
                    static_cast<long long>(i), v[static_cast<std::size_t>(i)]);
        ++failures;
        return;
      }
  } catch (std::exception const& e) {
    std::printf("FAIL %s unit, %s: %s\n", unit, what, e.what());
    ++failures;
  }
}

struct unit {
  char const* name;
  strata::event (*fill)(strata::target const&, int*, int, strata::index_t);
};
unit const units[] = {{"plain", fill_plain}, {"openmp", fill_openmp}, {"cuda", fill_cuda}};

}  // namespace

int main() {
  std::vector<strata::backend_id> backends{strata::backend_id::serial, strata::backend_id::threads};
  if (strata::detail::openmp_built()) backends.push_back(strata::backend_id::openmp);
  {
    // Every backend named explicitly, from every unit, on host places and a sim device.
    strata::runtime_options o;
    o.sim_devices = "1";
    o.cuda = false;
    strata::runtime rt(o);
    for (auto const& u : units) {
      for (auto b : backends)
        check(u.name, u.fill, strata::on(rt.machine(), b),
              (std::string("backend ") + std::string(strata::to_string(b))).c_str());
      // A sim device: the kernel writes the device's memory, read back by a copy.
      auto sims = rt.machine().slice(strata::isa::sim).descendants(strata::place_type::device);
      if (sims.empty()) {
        std::printf("FAIL no sim device\n");
        ++failures;
        continue;
      }
      try {
        strata::index_t const n = 100;
        strata::buffer<int, 1, strata::sim_space> on_sim(sims.front(), n);
        strata::buffer<int> back(rt.machine(), n);
        u.fill(sims.front(), on_sim.data().get(), 7, n).wait();
        strata::copy(back.view(), on_sim.view()).wait();
        for (strata::index_t i = 0; i < n; ++i)
          if (int const x = back.data().get()[i]; x != 7) {
            std::printf("FAIL %s unit, sim device: read %d, expected 7\n", u.name, x);
            ++failures;
            break;
          }
      } catch (std::exception const& e) {
        std::printf("FAIL %s unit, sim device: %s\n", u.name, e.what());
        ++failures;
      }
    }
  }
  // The default CPU backend set to each backend in turn (STRATA_CPU_BACKEND's option):
  // launches on places that name none.
  for (auto b : backends) {
    strata::runtime_options o;
    o.cpu_backend = b;
    o.cuda = false;
    strata::runtime rt(o);
    for (auto const& u : units)
      check(u.name, u.fill, rt.machine(),
            (std::string("default backend ") + std::string(strata::to_string(b))).c_str());
  }
#if defined(STRATA_ODR_WITH_CUDA)
  // The nvcc unit registered its CUDA launcher for the whole program: a host-compiled unit
  // (this one) sees it. Running it needs a GPU; the table does not.
  if (!strata::detail::cuda_dispatch::compiled<odr_shape, odr_fill, odr_tuple>()) {
    std::printf("FAIL the nvcc unit's CUDA launcher is not registered\n");
    ++failures;
  }
#else
  if (strata::detail::cuda_dispatch::compiled<odr_shape, odr_fill, odr_tuple>()) {
    std::printf("FAIL a CUDA launcher is registered in a program without nvcc units\n");
    ++failures;
  }
#endif
  if (failures == 0) std::printf("ok: every backend from every unit\n");
  return failures == 0 ? 0 : 1;
}
