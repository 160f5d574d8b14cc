// Compiled by nvcc: host code of a .cu file may not dereference a CUDA pointer (nvcc's
// host pass rejects it, as the host compiler does); kernels receive plain T* (launch
// unwraps ptr<T, cuda_space>), which device code dereferences.
#include <strata/strata.hpp>

__global__ void set(int* p) {
  *p = 1;
}

int main() {
  strata::ptr<int, strata::cuda_space> d;
  set<<<1, 1>>>(d.get());
#if defined(STRATA_SHOULD_FAIL)
  return *d;
#else
  return d ? 1 : 0;
#endif
}
