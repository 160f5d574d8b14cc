// Only parallel blocks get a scratchpad: asking a streaming shape for one must not compile.
#include <strata/strata.hpp>

int main() {
#if defined(STRATA_SHOULD_FAIL)
  auto s = strata::grid(4).block(8).scratchpad(1024);
#else
  auto s = strata::grid(4).block(strata::parallel, 8).scratchpad(1024);
#endif
  return s.scratchpad_bytes() == 1024 ? 0 : 1;
}
