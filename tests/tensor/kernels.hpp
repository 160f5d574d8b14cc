// Kernels and references shared by the tensor tests (host/sim suites and the CUDA suite):
// functors, so that nvcc compiles them for the GPU too.
#pragma once

#include <strata/strata.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tensor_test {

/// Ripple Listing 7: y = a x + y, cell by cell.
struct saxpy_cell {
  template <class X, class Y>
  STRATA_FN void operator()(X& x, Y& y, float a) const {
    *y = a * *x + *y;
  }
};

/// One step of a 1-D three-point stencil on integers, out = in[-1] + 2 in + in[+1]
/// (Listing 10's difference, made symmetric so values stay bounded under repetition).
struct smooth {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    *out = (*in.offset(0, -1) + 2 * *in + *in.offset(0, 1)) % 1000003;
  }
};

/// smooth on a plain array with periodic edges.
inline std::vector<std::int64_t> smooth_ref(std::vector<std::int64_t> const& in) {
  std::vector<std::int64_t> out(in.size());
  auto const n = in.size();
  for (std::size_t i = 0; i < n; ++i) {
    auto l = in[i == 0 ? n - 1 : i - 1], r = in[i + 1 == n ? 0 : i + 1];
    out[i] = (l + 2 * in[i] + r) % 1000003;
  }
  return out;
}

/// The values the stencil tests start from.
inline std::vector<std::int64_t> start_values(std::size_t n) {
  std::vector<std::int64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int64_t>((i * 37) % 101);
  return v;
}

/// Exclusive access (Figure 8's race): the kernel writes the tensor whose padding it reads;
/// block-edge cells read their neighbour block's cell from the padding, which must have
/// been copied before that neighbour's kernel overwrote it.
struct bump {
  template <class It>
  STRATA_FN void operator()(It& it) const {
    auto v = *it * 3 % 1000003;
    if (it.index(0) == 0) v += *it.offset(0, -1);
    if (it.index(0) == it.size(0) - 1) v += 5 * *it.offset(0, 1);
    *it = v % 1000003;
  }
};

}  // namespace tensor_test
