// One kernel launched from translation units compiled three ways (plain g++, g++ -fopenmp,
// nvcc): issue 13's "one definition per template". Each unit's fill_* instantiates the
// same strata::launch<shape, odr_fill, int*, int, index_t>; whichever copy the linker
// keeps, every backend must run from every unit.
#pragma once

#include <strata/exec/launch.hpp>
#include <strata/exec/work_division.hpp>

struct odr_fill {
  template <class Self>
  STRATA_FN void operator()(Self const& self, int* out, int value, strata::index_t n) const {
    for (auto i : self.elements(n)) out[i] = value;
  }
};

using odr_shape = strata::shape<1, strata::streaming_group>;
using odr_tuple = strata::detail::kernel_tuple<int*, int, strata::index_t>;

inline strata::event odr_launch(strata::target const& where, int* out, int value,
                                strata::index_t n) {
  return strata::launch(where, strata::divide_work(where, n), odr_fill{}, out, value, n);
}

strata::event fill_plain(strata::target const& where, int* out, int value, strata::index_t n);
strata::event fill_openmp(strata::target const& where, int* out, int value, strata::index_t n);
strata::event fill_cuda(strata::target const& where, int* out, int value, strata::index_t n);
