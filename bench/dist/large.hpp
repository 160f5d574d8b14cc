// STRATA_BENCH_LARGE=1: the largest sizes the issues name (n = 8192 for dist-summa and
// dist-fft), minutes per benchmark and rank count, so not in every run.
#pragma once

#include <cstdlib>
#include <string>

namespace strata::bench {

inline bool large_sizes() {
  char const* v = std::getenv("STRATA_BENCH_LARGE");
  return v && std::string(v) == "1";
}

}  // namespace strata::bench
