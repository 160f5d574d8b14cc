// A record description with no fields does not compile (its layouts divide by the record
// size: an array of it crashed at run time).
#include <strata/strata.hpp>

struct point {
#if defined(STRATA_SHOULD_FAIL)
  using fields = strata::fields<>;
#else
  struct x : strata::field<float> {};
  using fields = strata::fields<x>;
#endif
};

int main() {
  strata::runtime rt;
  strata::record_array<point, strata::soa> a(rt.machine(), 4);
}
