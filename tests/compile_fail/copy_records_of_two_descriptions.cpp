// Copying between record arrays of two descriptions does not compile.
#include <strata/strata.hpp>

struct point {
  struct x : strata::field<float> {};
  using fields = strata::fields<x>;
};
struct other {
  struct y : strata::field<float> {};
  using fields = strata::fields<y>;
};

int main() {
  strata::runtime rt;
  strata::record_array<point, strata::soa> a(rt.machine(), 4);
#if defined(STRATA_SHOULD_FAIL)
  strata::record_array<other, strata::aos> b(rt.machine(), 4);
#else
  strata::record_array<point, strata::aos> b(rt.machine(), 4);
#endif
  strata::copy(a, b).wait();
}
