// Tiling (PARRAY §4.1): tiles of an outer array loaded into a parallel block's
// scratchpad or a thread's private memory, worked on, and stored back.
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace strata {
namespace {

constexpr index_t rows = 48, cols = 40, tr = 8, tc = 10;

TEST(LayoutTiles, TransposeThroughScratchpadTilesOnThreads) {
  runtime rt;
  auto where = on(rt.machine(), backend_id::threads);
  array_type<double> const a{rows, cols};
  array_type<double> const b{cols, rows};
  // The inner type stores the tile transposed: tile element (i, j) at j * tr + i, a type
  // of shape (tr, tc) whose dimensions refer to a dense (tc, tr) type in swapped order.
  array_type<double> const dense{tc, tr};
  array_type<double> const inner{dense[1], dense[0]};
  std::vector<double> src(rows * cols), dst(rows * cols, -1.0);
  std::iota(src.begin(), src.end(), 0.0);
  auto shape =
      grid(rows / tr, cols / tc).block(parallel, 2, 3).scratchpad(tr * tc * sizeof(double));
  launch(
      where, shape,
      [=](auto const& self, double const* in, double* out) {
        auto block = self.block();
        double* tile = block.template scratchpad<double>(tr * tc);
        vec<2> bi = self.block_index();
        itile(block, tile, inner, in, a, vec<2>{bi[0] * tr, bi[1] * tc}, vec<2>{tr, tc});
        // The scratchpad now holds the tile transposed: store it as a (tc x tr) tile of b.
        otile(block, tile, array_type<double>(static_dims(tc, tr)), out, b,
              vec<2>{bi[1] * tc, bi[0] * tr}, vec<2>{tc, tr});
      },
      src.data(), dst.data())
      .wait();
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j)
      ASSERT_EQ(dst[static_cast<std::size_t>(b(j, i))], src[static_cast<std::size_t>(a(i, j))])
          << i << "," << j;
}

TEST(LayoutTiles, PrivateTilesInAStreamingKernel) {
  runtime rt;
  array_type<int> const a{dims{4, 6}, 12};  // [[4][6]][12]: tiles over A_0 and A_1
  std::vector<int> data(4 * 6 * 12);
  std::iota(data.begin(), data.end(), 0);
  launch(
      on(rt.machine(), backend_id::threads), grid(6),
      [=](auto const& self, int* d) {
        for (auto t : self.elements(6)) {
          int priv[4 * 12];
          // The rows t, t + 6, t + 12, t + 18 of A_0 are not one box: load row by row.
          for (index_t r = 0; r < 4; ++r)
            load_tile(priv + r * 12, array_type<int>(static_dims(1, 12)), d, a,
                      vec<2>{r * 6 + t, 0}, vec<2>{1, 12});
          for (int& v : priv) v = -v;
          for (index_t r = 0; r < 4; ++r)
            store_tile(priv + r * 12, array_type<int>(static_dims(1, 12)), d, a,
                       vec<2>{r * 6 + t, 0}, vec<2>{1, 12});
        }
      },
      data.data())
      .wait();
  for (std::size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], -static_cast<int>(i));
}

// The same rows as one tile over the leaf sub-dimensions: [[4][6]][12] has leaves
// A_0_0 x A_0_1 x A_1, and rows t, t + 6, t + 12, t + 18 are the box (0, t, 0) + (4, 1, 12).
TEST(LayoutTiles, TilesOverLeafSubDimensions) {
  runtime rt;
  array_type<int> const a{dims{4, 6}, 12};
  array_type<int> const priv_type{4, 12};
  std::vector<int> data(4 * 6 * 12);
  std::iota(data.begin(), data.end(), 0);
  launch(
      on(rt.machine(), backend_id::threads), grid(6),
      [=](auto const& self, int* d) {
        for (auto t : self.elements(6)) {
          int priv[4 * 12];
          load_tile(priv, priv_type, d, a, vec<3>{0, t, 0}, vec<3>{4, 1, 12});
          for (int& v : priv) v = -v;
          store_tile(priv, priv_type, d, a, vec<3>{0, t, 0}, vec<3>{4, 1, 12});
        }
      },
      data.data())
      .wait();
  for (std::size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], -static_cast<int>(i));
  std::vector<int> priv(8);
  EXPECT_THROW(load_tile(priv.data(), array_type<int>{8}, data.data(), a, vec<1>{0}, vec<1>{8}),
               invalid_argument);  // neither 2 top-level dimensions nor 3 leaves
  EXPECT_THROW(
      load_tile(priv.data(), array_type<int>{8}, data.data(), a, vec<3>{0, 5, 0}, vec<3>{1, 2, 4}),
      invalid_argument);  // past A_0_1's end
}

// PARRAY `iotile`: load, work on the scratchpad, store, in one call per block.
TEST(LayoutTiles, IotileLoadsWorksAndStores) {
  runtime rt;
  array_type<double> const a{32, 24};
  array_type<double> const inner{8, 6};
  std::vector<double> data(32 * 24);
  std::iota(data.begin(), data.end(), 0.0);
  auto shape = grid(4, 4).block(parallel, 2, 3).scratchpad(8 * 6 * sizeof(double));
  launch(
      on(rt.machine(), backend_id::serial), shape,
      [=](auto const& self, double* d) {
        auto block = self.block();
        double* tile = block.template scratchpad<double>(48);
        vec<2> const bi = self.block_index();
        iotile(block, tile, inner, d, a, vec<2>{bi[0] * 8, bi[1] * 6}, vec<2>{8, 6}, [&] {
          for (index_t k = block.linear_index(); k < 48; k += block.linear_size())
            tile[k] = 2 * tile[k] + 1;
        });
      },
      data.data())
      .wait();
  for (std::size_t i = 0; i < data.size(); ++i)
    ASSERT_EQ(data[i], 2.0 * static_cast<double>(i) + 1);
}

// PARRAY `create`: memory for a type's whole span, whatever its size.
TEST(LayoutTiles, AllocateByArrayType) {
  runtime rt;
  array_type<int> const whole{100, 100};
  array_type<int> const window{80 | disp(10) | whole[0], 80 | disp(10) | whole[1]};
  auto p = allocate(rt.machine(), window);  // offsets up to 89 * 100 + 89
  for (index_t k = 0; k < window.size(); ++k) p.get()[window(k)] = static_cast<int>(k);
  EXPECT_EQ(p.get()[89 * 100 + 89], 80 * 80 - 1);
  deallocate(p);
  array_type<int> const below{4 | disp(-2)};
  EXPECT_THROW(allocate(rt.machine(), below), invalid_argument);
}

TEST(LayoutTiles, TilesOutsideTheArrayAreErrors) {
  runtime rt;
  array_type<int> const a{8, 8};
  std::vector<int> d(64), priv(16);
  EXPECT_THROW(
      load_tile(priv.data(), array_type<int>{4, 4}, d.data(), a, vec<2>{6, 0}, vec<2>{4, 4}),
      invalid_argument);
  EXPECT_THROW(
      load_tile(priv.data(), array_type<int>{4, 3}, d.data(), a, vec<2>{0, 0}, vec<2>{4, 4}),
      invalid_argument);
}

}  // namespace
}  // namespace strata
