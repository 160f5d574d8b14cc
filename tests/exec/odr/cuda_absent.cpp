// A build without CUDA: the third unit is a host-compiled one, so the program still mixes
// three units.
#include "kernel.hpp"

strata::event fill_cuda(strata::target const& where, int* out, int value, strata::index_t n) {
  return odr_launch(where, out, value, n);
}
