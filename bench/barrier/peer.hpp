#pragma once

#include <cstddef>

namespace strata::bench::plain {
/// The sum of x[0..n) by a plain loop on the calling thread.
double sum(std::ptrdiff_t n, double const* x);
}  // namespace strata::bench::plain
