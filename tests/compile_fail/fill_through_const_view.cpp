// fill() and memset() through a view of const elements do not compile (issue 21: they
// used to write through a const_cast, while copy() rejected a const destination).
#include <strata/strata.hpp>

int main() {
  strata::runtime rt;
  strata::buffer<int> b(rt.machine(), 4);
#if defined(STRATA_SHOULD_FAIL)
  strata::view<int const> v = b.view();
#else
  strata::view<int> v = b.view();
#endif
  strata::fill(v, 1).wait();
  return 0;
}
