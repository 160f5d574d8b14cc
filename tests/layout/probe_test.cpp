// Defects an outside probe of the layout layer found: sizes that wrap, spans that wrap,
// over-aligned fields, dangling types, sparse offsets and staging that does not fit a
// device. Each test failed (or crashed) before its fix.
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace strata {
namespace {

// A size below 1 made a size-0 type (a copy of it divided by zero); sizes whose product
// wraps made one too.
TEST(LayoutProbe, StaticDimsRejectsBadSizesAndOverflow) {
  EXPECT_THROW((void)static_dims(0), invalid_argument);
  EXPECT_THROW((void)static_dims(-4), invalid_argument);
  EXPECT_THROW((void)static_dims(index_t{1} << 40, index_t{1} << 40), invalid_argument);
  EXPECT_THROW((void)static_dims(3, 0, 2), invalid_argument);
  // The largest product allowed (as dim_spec(dims) allows) and an ordinary type.
  EXPECT_EQ(array_type<int>(static_dims(index_t{1} << 31, index_t{1} << 31)).size(),
            index_t{1} << 62);
  constexpr array_type<int> a(static_dims(4, 3));
  static_assert(a(2, 1) == 7);
  EXPECT_EQ(array_type<int>(static_dims(5)).size(), 5);
}

}  // namespace
}  // namespace strata
