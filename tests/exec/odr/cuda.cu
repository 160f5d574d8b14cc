// Compiled by nvcc (no OpenMP flags): see kernel.hpp. Its launch also registers the
// kernel's CUDA launcher for the whole program.
#include "kernel.hpp"

strata::event fill_cuda(strata::target const& where, int* out, int value, strata::index_t n) {
  return odr_launch(where, out, value, n);
}
