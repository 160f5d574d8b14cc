// A streaming block shares nothing: scratchpad() must not compile there.
#include <strata/strata.hpp>

int main() {
  strata::runtime rt;
  strata::launch(rt.machine(), strata::grid(4).block(8), [](auto const& self) {
#if defined(STRATA_SHOULD_FAIL)
    self.block().template scratchpad<float>(8)[0] = 1.0f;
#else
    (void)self;
#endif
  }).wait();
}
