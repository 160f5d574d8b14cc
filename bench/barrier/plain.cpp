#include "barrier/peer.hpp"

namespace strata::bench::plain {

double sum(std::ptrdiff_t n, double const* x) {
  double s = 0;
  for (std::ptrdiff_t i = 0; i < n; ++i) s += x[i];
  return s;
}

}  // namespace strata::bench::plain
