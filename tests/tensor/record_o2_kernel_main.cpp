// The third GCC 12 instance (docs/records.md, "A GCC 12 miscompile") as the outside probe
// met it: a program of one kernel writing constants into SoA record cells through a copied
// proxy, compiled at -O2. Whether GCC drops the launch depends on what else the unit holds
// (inside a GoogleTest unit with other kernels it did not), so this is a program of its
// own. Exits 1, naming the first wrong cell, if a write is lost.
#include <strata/strata.hpp>

#include <cstdint>
#include <cstdio>

namespace {
struct cell {
  struct rho : strata::field<double> {};
  struct tag : strata::field<std::int32_t> {};
  using fields = strata::fields<rho, tag>;
};
}  // namespace

int main() {
  strata::runtime rt;
  std::vector<strata::place> host{rt.machine().slice(strata::isa::host)};
  strata::index_t const rows = 4, cols = 4;
  strata::tensor<strata::records<cell, strata::soa>, 2> t(
      host, strata::tensor_spec<2>{.extent = {rows, cols}});
  strata::fill(t, strata::record_value<cell>{}).wait();
  strata::for_each_cell(
      [](auto& it) {
        auto o = *it;
        o[cell::rho{}] = 0.5;
        o[cell::tag{}] = 7;
      },
      t)
      .wait();
  strata::record_array<cell, strata::aos> a(host[0], rows * cols);
  strata::copy(a.view(), t).wait();
  for (strata::index_t k = 0; k < rows * cols; ++k) {
    double const rho = a[k][cell::rho{}];
    std::int32_t const tag = a[k][cell::tag{}];
    if (rho != 0.5 || tag != 7) {
      std::printf("cell %lld: rho %g tag %d; expected 0.5 and 7 (the launch was lost)\n",
                  static_cast<long long>(k), rho, static_cast<int>(tag));
      return 1;
    }
  }
  std::printf("every cell written\n");
  return 0;
}
