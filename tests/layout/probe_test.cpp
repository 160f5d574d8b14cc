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

// 2^61 doubles span 2^64 bytes: the span check wrapped to 0 bytes and passed, and the copy
// ran past two 8 KiB allocations.
TEST(LayoutProbe, CopyOfATypeWhoseSpanOverflowsIsRefused) {
  runtime rt;
  auto a = allocate<double>(rt.machine(), 1024);
  auto b = allocate<double>(rt.machine(), 1024);
  array_type<double> const big{index_t{1} << 30, index_t{1} << 31};
  EXPECT_THROW(copy(big.on(b), big.on(ptr<double const>(a))).wait(), invalid_argument);
  // A huge source over a small destination type of the same size cannot be made (sizes
  // must match), so both sides wrapping is the case; an ordinary copy still runs.
  array_type<double> const t{32, 32};
  EXPECT_NO_THROW(copy(t.on(b), t.on(ptr<double const>(a))).wait());
  deallocate(a);
  deallocate(b);
}

index_t spread(index_t i, void const*) {
  return i * (index_t{1} << 40);
}
index_t spread_pairs(index_t i, void const*) {
  return (i / 2) * (index_t{1} << 40);
}
index_t extremes(index_t i, void const*) {
  return i == 0 ? std::numeric_limits<index_t>::min() : std::numeric_limits<index_t>::max();
}

// A bitmap over the whole offset span: 4 offsets 2^40 apart needed hundreds of GB.
TEST(LayoutProbe, IsUniqueOfSparseOffsetsSorts) {
  array_type<int> const sparse{4 | func{spread}};
  EXPECT_TRUE(sparse.is_unique());
  EXPECT_FALSE(sparse.is_exhaustive());
  array_type<int> const doubled{4 | func{spread_pairs}};
  EXPECT_FALSE(doubled.is_unique());
  // A span that does not even fit index_t.
  array_type<int> const wide_apart{2 | func{extremes}};
  EXPECT_TRUE(wide_apart.is_unique());
  // Dense offsets (the bitmap) still decide both ways.
  array_type<int> const dense{8, 4};
  EXPECT_TRUE(dense.is_unique());
  EXPECT_TRUE(dense.is_exhaustive());
}

}  // namespace
}  // namespace strata
