// memset() through a view of const elements does not compile (issue 21).
#include <strata/strata.hpp>

int main() {
  strata::runtime rt;
  strata::buffer<int> b(rt.machine(), 4);
#if defined(STRATA_SHOULD_FAIL)
  strata::view<int const> v = b.view();
#else
  strata::view<int> v = b.view();
#endif
  strata::memset(v, 0).wait();
  return 0;
}
