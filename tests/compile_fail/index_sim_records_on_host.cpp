// Element access to a sim device's record array from host code does not compile
// (Ripple §4.2 records follow the memory spaces' rules).
#include <strata/strata.hpp>

struct point {
  struct x : strata::field<float> {};
  using fields = strata::fields<x>;
};

int main() {
  strata::runtime rt({.sim_devices = "1"});
#if defined(STRATA_SHOULD_FAIL)
  strata::record_array<point, strata::soa, strata::sim_space> a(rt.machine(), 4);
#else
  strata::record_array<point, strata::soa, strata::host_space> a(rt.machine(), 4);
#endif
  a[0].get<point::x>() = 1;
  return static_cast<int>(a[0].get<point::x>()) - 1;
}
