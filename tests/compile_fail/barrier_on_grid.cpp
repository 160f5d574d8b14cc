// Blocks of a grid are independent (Alpaka §3.2.2): the grid level has no barrier.
#include <strata/strata.hpp>

int main() {
  strata::runtime rt;
  strata::launch(rt.machine(), strata::grid(4).block(strata::parallel, 8), [](auto const& self) {
#if defined(STRATA_SHOULD_FAIL)
    self.barrier();
#else
    self.block().barrier();
#endif
  }).wait();
}
