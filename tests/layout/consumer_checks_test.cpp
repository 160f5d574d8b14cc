// A consumer's debug build (compiled without NDEBUG, tests/layout/CMakeLists.txt) against
// the library as shipped (built with NDEBUG): the range checks of array copies are the
// consumer's, so they run here (issue 14).
#if defined(NDEBUG)
#error "consumer_checks_test.cpp must be compiled without NDEBUG"
#endif
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

TEST(ConsumerDebugBuild, ArrayCopiesCheckTheirRanges) {
  runtime rt;
  place machine = rt.machine();
  auto p = allocate<int>(machine, 1000);
  array_type<int> const small{1000};
  array_type<int> const large{1010};
  std::vector<int> out(1010);
  // The source runs 10 elements past its allocation.
  EXPECT_THROW(copy(large.on(out.data()), large.on(ptr<int const>(p))).wait(), invalid_argument);
  // The destination does.
  EXPECT_THROW(copy(large.on(p), large.on(std::as_const(out).data())).wait(), invalid_argument);
  // In range: fine.
  EXPECT_NO_THROW(copy(small.on(p), small.on(std::as_const(out).data())).wait());
  deallocate(p);
}

}  // namespace
}  // namespace strata
