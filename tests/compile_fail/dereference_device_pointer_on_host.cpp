// Host code cannot dereference device memory, CUDA's or an emulated sim device's.
#include <strata/strata.hpp>

int main() {
#if defined(STRATA_SHOULD_FAIL)
  strata::ptr<int, strata::cuda_space> d;
#else
  strata::ptr<int, strata::pinned_space> d;
#endif
  return d ? *d : 0;
}
