// The tensor benchmarks' kernels (bench/tensor/strata.cpp on the host and sim devices,
// bench/cuda/tensor.cu on a GPU): the iterator kernels and the raw-pointer kernel a user
// would write instead.
#pragma once

#include <strata/strata.hpp>

namespace strata::bench {

/// Ripple Listing 7 over a tensor's cells.
struct saxpy_cell {
  template <class X, class Y>
  STRATA_FN void operator()(X& x, Y& y, float a) const {
    *y = a * *x + *y;
  }
};

/// The same on raw pointers.
struct saxpy_raw {
  template <class S>
  STRATA_FN void operator()(S const& self, float a, index_t n, float const* x, float* y) const {
    for (auto i : self.elements(n)) y[i] = a * x[i] + y[i];
  }
};

/// 2-D 5-point Jacobi over a tensor with padding 1.
struct jacobi_cell {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    *out = 0.25 * (*in.offset(0, -1) + *in.offset(0, 1) + *in.offset(1, -1) + *in.offset(1, 1));
  }
};

}  // namespace strata::bench
