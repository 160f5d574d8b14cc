// A phase-split kernel is already cut at its barriers: barrier() inside a phase is an error.
#include <strata/strata.hpp>

int main() {
  strata::runtime rt;
  auto kernel = strata::phases<int>([](auto const& self, int&) {
#if defined(STRATA_SHOULD_FAIL)
    self.block().barrier();
#else
    (void)self;
#endif
  });
  strata::launch(rt.machine(), strata::grid(4).block(strata::parallel, 8), kernel).wait();
}
