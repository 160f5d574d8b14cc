// A streaming block's threads are independent: barrier() must not compile there.
#include <strata/strata.hpp>

int main() {
  strata::runtime rt;
  strata::launch(rt.machine(), strata::grid(4).block(8), [](auto const& self) {
#if defined(STRATA_SHOULD_FAIL)
    self.block().barrier();
#else
    (void)self;
#endif
  }).wait();
}
