// Defects an outside probe of the layout layer found: sizes that wrap, spans that wrap,
// over-aligned fields, dangling types, sparse offsets and staging that does not fit a
// device. Each test failed (or crashed) before its fix.
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
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

struct alignas(128) wide {
  unsigned char x[128];
};
struct overaligned {
  struct a : field<std::uint8_t> {};
  struct b : field<wide> {};
  using fields = strata::fields<a, b>;
};

template <class L>
void expect_aligned_fields(place const& where) {
  std::vector<record_array<overaligned, L>> keep;  // live together: other addresses
  for (index_t n = 1; n <= 40; ++n) {
    keep.emplace_back(where, n);
    auto const& arr = keep.back();
    for (index_t i = 0; i < n; ++i) {
      auto addr = reinterpret_cast<std::uintptr_t>(arr[i].template component<1>(0));
      ASSERT_EQ(addr % alignof(wide), 0U) << "n " << n << ", record " << i;
    }
  }
}

// Record memory was aligned to 64 bytes only: a field declared alignas(128) was misaligned.
TEST(LayoutProbe, RecordArraysAlignOveralignedFields) {
  runtime rt;
  expect_aligned_fields<aos>(rt.machine());
  expect_aligned_fields<soa>(rt.machine());
  expect_aligned_fields<aosoa<4>>(rt.machine());
  static_assert(record_array<overaligned, aos>::alignment == 128);
}

struct counter {
  struct x : field<std::uint64_t> {};
  using fields = strata::fields<x>;
};

// A negative count was taken as is, and 2^61 records of 8 bytes spanned 0 bytes: a copy
// of the same layout moved nothing, one of another layout read past the memory.
TEST(LayoutProbe, RecordViewRejectsBadSizes) {
  runtime rt;
  auto raw = allocate<std::byte>(rt.machine(), 4096);
  EXPECT_THROW((record_view<counter, aos>(raw, -5)), invalid_argument);
  EXPECT_THROW((record_view<counter, aos>(raw, index_t{1} << 61)), invalid_argument);
  EXPECT_THROW((record_view<counter, soa>(raw, index_t{1} << 61)), invalid_argument);
  EXPECT_THROW((record_view<counter, aosoa<8>>(raw, std::numeric_limits<index_t>::max())),
               invalid_argument);
  EXPECT_THROW((record_array<counter, soa>(rt.machine(), index_t{1} << 61)), invalid_argument);
  // In range: a view of the memory's 512 records copies.
  record_view<counter, aos> const v(raw, 512);
  record_array<counter, soa> dst(rt.machine(), 512);
  for (index_t i = 0; i < 512; ++i) v[i].get<counter::x>() = static_cast<std::uint64_t>(i);
  copy(dst, v).wait();
  EXPECT_EQ(dst[511].get<counter::x>(), 511U);
  deallocate(raw);
}

// private_array kept a reference to a temporary type, which dangled: a temporary is now a
// compile error (tests/compile_fail/private_array_of_temporary_type.cpp), a named type works.
TEST(LayoutProbe, PrivateArrayTakesNamedTypesOnly) {
  static_assert(!std::is_constructible_v<private_array<float, 32>, array_type<float, rmem_space>>);
  static_assert(
      std::is_constructible_v<private_array<float, 32>, array_type<float, rmem_space> const&>);
  array_type<float, rmem_space> const type{16, 2};
  private_array<float, 32> r(type);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 2; ++j) r(i, j) = static_cast<float>(10 * i + j);
  EXPECT_EQ(r.data()[2 * 7 + 1], 71.0f);
}

// 2^32 x 2^32 threads wrapped to 0 before the "more than 2^31 threads" check.
TEST(LayoutProbe, ThreadArraySizeOverflowIsRefused) {
  EXPECT_THROW((thread_array<thread_kind::pthd>{index_t{1} << 32, index_t{1} << 32}),
               invalid_argument);
  EXPECT_THROW((thread_array<thread_kind::cuda>{index_t{1} << 40, index_t{1} << 40, 3}),
               invalid_argument);
  EXPECT_THROW((thread_array<thread_kind::pthd>{index_t{1} << 31, 2}), invalid_argument);
  EXPECT_EQ((thread_array<thread_kind::pthd>{4, 8}).size(), 32);
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

// origin + extent wrapped for an origin near INT64_MAX, and the load read far outside.
TEST(LayoutProbe, TileOriginNearTheIndexLimitIsRefused) {
  array_type<float> const outer{8, 8};
  array_type<float> const inner{2, 2};
  std::vector<float> data(64, 1.f), tile(4, 0.f);
  index_t const big = std::numeric_limits<index_t>::max() - 1;
  EXPECT_THROW(load_tile(tile.data(), inner, data.data(), outer, vec<2>{big, 0}, vec<2>{2, 2}),
               invalid_argument);
  EXPECT_THROW(store_tile(tile.data(), inner, data.data(), outer, vec<2>{0, big}, vec<2>{2, 2}),
               invalid_argument);
  EXPECT_THROW(load_tile(tile.data(), inner, data.data(), outer, vec<2>{-1, 0}, vec<2>{2, 2}),
               invalid_argument);
  EXPECT_NO_THROW(load_tile(tile.data(), inner, data.data(), outer, vec<2>{6, 6}, vec<2>{2, 2}));
}

std::string message_of(auto&& fn) {
  try {
    fn();
  } catch (invalid_argument const& e) {
    return e.what();
  }
  return "(no error)";
}

// Session 35's outside probe: a step of 0 looped for ever (a thread's share of a tile is
// first, first + step, ...), and equality checks said "N is outside [0, M)" of a value
// inside it, without the value expected.
TEST(LayoutProbe, TileStepZeroAndMismatchedCountsSayWhatWasExpected) {
  array_type<float> const outer{8, 8};
  array_type<float> const inner{2, 2};
  std::vector<float> data(64, 1.f), tile(16, 0.f);
  auto const step0 = message_of([&] {
    load_tile(tile.data(), inner, data.data(), outer, vec<2>{0, 0}, vec<2>{2, 2}, 0, 0);
  });
  EXPECT_NE(step0.find("tile step: 0 given, expected 1 or more"), std::string::npos) << step0;
  EXPECT_THROW(
      store_tile(tile.data(), inner, data.data(), outer, vec<2>{0, 0}, vec<2>{2, 2}, -1, 1),
      invalid_argument);
  // Every thread's share with a step: the whole tile, once.
  std::vector<float> src(64);
  for (int i = 0; i < 64; ++i) src[static_cast<std::size_t>(i)] = static_cast<float>(i);
  for (index_t first = 0; first < 3; ++first)
    load_tile(tile.data(), inner, src.data(), outer, vec<2>{2, 4}, vec<2>{2, 2}, first, 3);
  EXPECT_EQ(tile[0], 20.f);
  EXPECT_EQ(tile[3], 29.f);

  auto const size = message_of([&] {
    load_tile(tile.data(), array_type<float>{3, 4}, data.data(), outer, vec<2>{0, 0}, vec<2>{4, 4});
  });
  EXPECT_NE(size.find("12 given, expected 16"), std::string::npos) << size;
  array_type<float> const a{3, 4};
  auto const count = message_of([&] { (void)a(1, 2, 3); });
  EXPECT_NE(count.find("3 given, expected 2"), std::string::npos) << count;
  auto const rank = message_of([&] {
    load_tile(tile.data(), inner, data.data(), outer, vec<3>{0, 0, 0}, vec<3>{1, 2, 2});
  });
  EXPECT_NE(rank.find("3 given, expected 2"), std::string::npos) << rank;
  auto const empty = message_of([&] {
    load_tile(tile.data(), array_type<float>{1}, data.data(), outer, vec<2>{0, 0}, vec<2>{0, 1});
  });
  EXPECT_NE(empty.find("0 given, expected 1 or more"), std::string::npos) << empty;
}

struct quad {
  struct x : field<float, 4> {};
  using fields = strata::fields<x>;
};

// A host AoS -> device SoA copy staged a second copy of the records on the device: with
// room for the destination only, it failed ("allocate: ... do not fit"). It now copies
// per component when the staging does not fit; the reverse direction likewise.
TEST(LayoutProbe, RecordCopyWithoutRoomForStagingStillCopies) {
  runtime rt{runtime_options{.sim_devices = "1:bw=50GB/s,lat=1us,mem=1MiB"}};
  place m = rt.machine();
  place s0 = m.slice(isa::sim).descendants(place_type::device)[0];
  index_t const n = 40000;  // 640 KB: one array fits the 1 MiB device, two do not
  record_array<quad, aos> h(m, n);
  for (index_t i = 0; i < n; ++i)
    for (int d = 0; d < 4; ++d) h[i].get<quad::x>(d) = static_cast<float>(i * 4 + d);
  record_array<quad, soa, sim_space> dev(s0, n);
  ASSERT_NO_THROW(copy(dev, h).wait());
  record_array<quad, soa> back(m, n);  // device SoA -> host SoA: one layout
  copy(back, dev).wait();
  record_array<quad, aos> back2(m, n);  // device SoA -> host AoS: staging on the device
  ASSERT_NO_THROW(copy(back2, dev).wait());
  index_t bad = 0;
  for (index_t i = 0; i < n; ++i)
    for (int d = 0; d < 4; ++d) {
      bad += back[i].get<quad::x>(d) != static_cast<float>(i * 4 + d);
      bad += back2[i].get<quad::x>(d) != static_cast<float>(i * 4 + d);
    }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace strata
