// A record description listing one field twice does not compile (get<F> reaches the first
// listing only; the second is storage nothing reads).
#include <strata/strata.hpp>

struct point {
  struct x : strata::field<int> {};
  struct y : strata::field<float> {};
#if defined(STRATA_SHOULD_FAIL)
  using fields = strata::fields<x, y, x>;
#else
  using fields = strata::fields<x, y>;
#endif
};

int main() {
  strata::runtime rt;
  strata::record_array<point, strata::aos> a(rt.machine(), 4);
}
