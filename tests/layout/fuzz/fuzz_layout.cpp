// libFuzzer target over the property tests' generator (tests/layout/random_types.hpp):
// the fuzzer's bytes choose a random tree and two types derived from it; offsets, the
// strided forms, stp and the host copy kernel are checked against naive loops.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "layout/random_types.hpp"

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size) {
  strata::test::byte_chooser c{data, size};
  strata::test::type_generator<strata::test::byte_chooser> gen(c);
  try {
    auto p = gen.base();
    auto dst = gen.derive(p), src = gen.derive(p);
    if (auto err = strata::test::check_pair(dst, src)) {
      std::fprintf(stderr, "layout fuzz: %s\n", err->c_str());
      std::abort();
    }
  } catch (strata::invalid_argument const& e) {
    // The node budget is the only error a generated type may hit.
    if (!std::strstr(e.what(), "dimension nodes")) {
      std::fprintf(stderr, "layout fuzz: unexpected error: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
