// Bitwise atomics take integers only (include/strata/exec/atomic.hpp): CUDA has no
// atomicOr for floats, so the host does not offer one either, and a kernel that compiles
// for one backend compiles for all.
#include <strata/strata.hpp>

int main() {
  strata::runtime rt;
  float f = 0;
  unsigned u = 0;
  strata::launch(
      rt.machine(), strata::grid(4),
      [](auto const&, float* fp, unsigned* up) {
        strata::atomic_add(fp, 1.0f);
#if defined(STRATA_SHOULD_FAIL)
        strata::atomic_or(fp, 1.0f);
#else
        strata::atomic_or(up, 1u);
#endif
      },
      &f, &u)
      .wait();
}
