// Pointers of two memory spaces never compare: there is no conversion between spaces.
#include <strata/strata.hpp>

int main() {
  strata::ptr<int, strata::host_space> h;
#if defined(STRATA_SHOULD_FAIL)
  strata::ptr<int, strata::sim_space> d;
#else
  strata::ptr<int, strata::host_space> d;
#endif
  return h == d ? 0 : 1;
}
