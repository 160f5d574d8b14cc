// A private array of a temporary array type does not compile: the array keeps a reference
// to its type, which would dangle after the declaration.
#include <strata/strata.hpp>

int main() {
#if defined(STRATA_SHOULD_FAIL)
  strata::private_array<float, 32> r(strata::array_type<float, strata::rmem_space>{16, 2});
#else
  strata::array_type<float, strata::rmem_space> const type{16, 2};
  strata::private_array<float, 32> r(type);
#endif
  r(1, 1) = 1.0f;
}
