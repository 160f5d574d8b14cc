// The PARRAY manual's listings as cases: offsets and values must equal what the manual
// prints (Listings 7-8, 9-10, 11-12, 13-14, 37-38; §1.3 Tables 1-2; §5.1; §5.2).
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace strata {
namespace {

// parray pinned float [[3][3]][2] A
array_type<float, pinned_space> const A{dims{3, 3}, 2};

TEST(Listings, SizesAndOffsetsOfSection13) {
  EXPECT_EQ(A.size(), 18);
  EXPECT_EQ(A.ndim(), 2);
  EXPECT_EQ(A[0].size(), 9);
  EXPECT_EQ(A[0].ndim(), 2);
  EXPECT_EQ(A[0][1].size(), 3);
  EXPECT_EQ(A[1].ndim(), 0);
  // §2.4: A[i][j][k] = i*6 + j*2 + k, A[i][j] = i*2 + j, A_0[i][j] = i*6 + j*2.
  EXPECT_EQ(A(2, 1, 1), 2 * 6 + 1 * 2 + 1);
  EXPECT_EQ(A(4, 1), 4 * 2 + 1);
  EXPECT_EQ(A[0](2, 1), 2 * 6 + 1 * 2);
  EXPECT_EQ(A[0][1](2), 4);
  EXPECT_EQ(A[0][0](2), 12);
  for (index_t k = 0; k < 18; ++k) EXPECT_EQ(A(k), k);
  static_assert(std::is_same_v<decltype(A)::elm, float>);
  static_assert(std::is_same_v<decltype(A)::space, pinned_space>);
}

TEST(Listings, TransposedTypeOfTable2AndListing6) {
  // parray paged int [[n][n]][m] A; parray [[A_0_1][A_0_0]][A_1] B; n = 3, m = 2.
  array_type<int> a{dims{3, 3}, 2};
  array_type<int> b{dims{a[0][1], a[0][0]}, a[1]};
  // Listing 6: b[B(i)] = a[A(i)] = i, printed b[i] for i = 0..17.
  std::vector<int> x(18), y(18, -1);
  std::iota(x.begin(), x.end(), 0);
  for (index_t k = 0; k < 18; ++k)
    y[static_cast<std::size_t>(b(k))] = x[static_cast<std::size_t>(a(k))];
  std::vector<int> const printed{0, 1, 6, 7, 12, 13, 2, 3, 8, 9, 14, 15, 4, 5, 10, 11, 16, 17};
  EXPECT_EQ(y, printed);
  // Table 2: B_0(k) = A_0_1(k / n) + A_0_0(k % n).
  for (index_t k = 0; k < 9; ++k) EXPECT_EQ(b[0](k), a[0][1](k / 3) + a[0][0](k % 3));
}

TEST(Listings, Listing7And8TypeReferences) {
  array_type<float, pinned_space> const a{dims{3, 3}, 2};
  array_type<float, sim_space> const B{dims{7 | a[0]}};  // [[7 # A_0]]
  array_type<float, sim_space> const C{7 | a[0]};        // [7 # A_0]
  array_type<float, sim_space> const D{dims{2, 2} | a[0]};
  array_type<float> const E{a[0][1], a[0][0]};
  array_type<float> const F{a[0]};
  for (index_t i = 0; i < C.size(); ++i) {
    EXPECT_EQ(B[0](i), 2 * i);  // B_0[0] = 0 ... B_0[6] = 12
    EXPECT_EQ(C(i), 2 * i);
  }
  EXPECT_EQ(C.ndim(), 0);  // C_0 does not exist
  EXPECT_THROW(C[0], invalid_argument);
  EXPECT_EQ(D[0](0), 0);
  EXPECT_EQ(D[0](1), 4);
  EXPECT_EQ(E[0](0), 0);
  EXPECT_EQ(E[0](1), 2);
  EXPECT_EQ(E[0](2), 4);
  EXPECT_EQ(F[0](0), 0);  // F_0 is inherited from A_0_0
  EXPECT_EQ(F[0](1), 6);
  EXPECT_EQ(F[0](2), 12);
  EXPECT_EQ(F.ndim(), 2);
  EXPECT_EQ(F.size(), 9);
}

TEST(Listings, Section51RegularAndFixedParts) {
  array_type<float, pinned_space> const a{dims{3, 3}, 2};
  array_type<float> const b{dims{a[0][1], a[0][0]}, a[1]};
  // parray dmem float [[[3][A_1]][2] # B] C
  array_type<float> const c{dims{dims{3, a[1]}, 2} | b.root()};
  for (index_t i = 0; i < 3; ++i) EXPECT_EQ(c[0][0](i), b((i % 3) * 2 * 2));
  for (index_t i = 0; i < 2; ++i) EXPECT_EQ(c[0][1](i), a[1](i));  // fixed on A_1
  for (index_t i = 0; i < 6; ++i) EXPECT_EQ(c[0](i), b((i / 2 % 3) * 2 * 2) + a[1](i % 2));
}

TEST(Listings, Listing9And10DisplacedWindow) {
  runtime rt;
  array_type<float> const data{100, 100};
  array_type<float> const window{80 | disp(10) | data[0], 80 | disp(10) | data[1]};
  array_type<float> const copy_type{80, 80};
  EXPECT_EQ(window(0, 0), data(10, 10));
  EXPECT_EQ(window(0, 0), 1010);
  EXPECT_EQ(stp(data), 1);
  EXPECT_EQ(stp(data[0]), 100);
  EXPECT_EQ(stp(data[1]), 1);
  EXPECT_EQ(stp(window), 0);
  EXPECT_EQ(stp(window[0]), 100);
  EXPECT_EQ(stp(window[1]), 1);
  std::vector<float> d(10000), out(6400, -1.f);
  std::iota(d.begin(), d.end(), 0.f);
  // 80 rows of 80 contiguous elements.
  auto plan = plan_copy(linear(copy_type), linear(window));
  ASSERT_TRUE(plan.ok);
  EXPECT_EQ(plan.run(), 80);
  copy(copy_type.on(out.data()), window.on(d.data())).wait();
  for (index_t i = 0; i < 80; ++i)
    for (index_t j = 0; j < 80; ++j)
      ASSERT_EQ(out[static_cast<std::size_t>(i * 80 + j)], float((i + 10) * 100 + j + 10));
}

TEST(Listings, Listing11And12CyclicDisplacement) {
  array_type<int> const g{10 | disp(3) | cyclic(10)};
  std::vector<index_t> printed{3, 4, 5, 6, 7, 8, 9, 0, 1, 2};
  for (index_t i = 0; i < 10; ++i) EXPECT_EQ(g(i), printed[static_cast<std::size_t>(i)]);
  EXPECT_FALSE(linear(g).ok);  // the wrap has no strided form
  EXPECT_EQ(stp(g), 0);
  EXPECT_TRUE(g.is_unique());
  EXPECT_TRUE(g.is_exhaustive());
}

// Listing 13: offsets recorded on first access, in access order.
struct access_table {
  int id = 0;
  index_t offset[100] = {};
};
index_t access(index_t i, void const* context) {
  auto* t = const_cast<access_table*>(static_cast<access_table const*>(context));
  for (int j = 0; j < t->id; ++j)
    if (t->offset[j] == i) return j;
  t->offset[t->id] = i;
  return t->id++;
}

TEST(Listings, Listing13And14UserOffsetFunction) {
  access_table table;
  array_type<int> const data{1000 | func{access, &table}};
  // printf evaluates its arguments right to left: DATA[6], DATA[5], DATA[4].
  index_t d6 = data(6), d5 = data(5), d4 = data(4);
  EXPECT_EQ(d4, 2);
  EXPECT_EQ(d5, 1);
  EXPECT_EQ(d6, 0);
  EXPECT_EQ(data(5), 1);  // recorded
}

TEST(Listings, Listing37And38ParameterizedWindows) {
  runtime rt;
  array_type<int> const data{6, 6};
  auto window = [&](index_t y, index_t x) {
    return array_type<int>{2 | disp(y) | data[0], 4 | disp(x) | data[1]};
  };
  std::vector<int> d(36);
  std::iota(d.begin(), d.end(), 0);
  copy(window(4, 1).on(d.data()), window(1, 2).on(d.data())).wait();
  std::vector<int> const printed{0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
                                 24, 8,  9,  10, 11, 29, 30, 14, 15, 16, 17, 35};
  EXPECT_EQ(d, printed);
}

TEST(Listings, Section52Contiguity) {
  array_type<float> const a{dims{3, 3}, 2};
  array_type<float> const b{dims{a[0][1], a[0][0]}, a[1]};
  EXPECT_EQ(stp(a), 1);
  EXPECT_EQ(stp(a[1]), 1);
  EXPECT_EQ(stp(a[0]), 2);
  EXPECT_EQ(stp(a[0][1]), 2);
  EXPECT_EQ(stp(a[0][0]), 6);
  EXPECT_EQ(stp(b), 0);
  EXPECT_EQ(stp(b[0]), 0);
  EXPECT_EQ(stp(b[0][1]), 6);
  EXPECT_TRUE(cnt(a));
  EXPECT_FALSE(cnt(b));
  EXPECT_TRUE(cnt(b[1]));
  // Copying B to A goes in runs of size(B_1) elements.
  auto plan = plan_copy(linear(a), linear(b));
  ASSERT_TRUE(plan.ok);
  EXPECT_EQ(plan.run(), 2);
}

}  // namespace
}  // namespace strata
