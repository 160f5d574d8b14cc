// Compiled with -fopenmp: see kernel.hpp.
#include "kernel.hpp"

strata::event fill_openmp(strata::target const& where, int* out, int value, strata::index_t n) {
  return odr_launch(where, out, value, n);
}
