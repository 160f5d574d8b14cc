// Element access to a sim device's buffer from host code does not compile.
#include <strata/strata.hpp>

int main() {
  strata::runtime rt({.sim_devices = "1"});
#if defined(STRATA_SHOULD_FAIL)
  strata::buffer<int, 1, strata::sim_space> b(rt.machine(), 4);
#else
  strata::buffer<int, 1, strata::host_space> b(rt.machine(), 4);
#endif
  return b(0);
}
