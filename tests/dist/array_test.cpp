// Distributed array types (include/strata/dist/array.hpp) under mpiexec -n 1..4: copies
// between random pairs of distributed types (whole, block, cyclic, block-cyclic over
// random process grids, random storage orders, odd extents, grids smaller than the team)
// put every element where the destination type says, checked against the global index;
// transposes, scatters and gathers as copies; malformed types and mismatched copies are
// errors. Every rank draws the same types from the same seed.
#include <strata/dist.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace strata;
namespace dist = strata::dist;
using dist::distribution;

namespace {

template <std::size_t N>
double value(vec<N> const& i) {
  double v = 0;
  for (std::size_t d = 0; d < N; ++d) v = v * 1000.0 + static_cast<double>(i[d]);
  return v;
}

// A random type over at most `size` processes.
template <std::size_t N>
dist::array_type<N> random_type(std::mt19937& rng, vec<N> const& extent, int size) {
  dist::array_type<N> t;
  t.extent = extent;
  int procs = std::uniform_int_distribution<int>(0, 3)(rng) == 0
                  ? std::uniform_int_distribution<int>(1, size)(rng)
                  : size;
  // Deal the factors of procs to random dimensions.
  for (int f = 2; procs > 1;) {
    if (procs % f) {
      ++f;
      continue;
    }
    t.grid[std::uniform_int_distribution<std::size_t>(0, N - 1)(rng)] *= f;
    procs /= f;
  }
  for (std::size_t d = 0; d < N; ++d) {
    int k = std::uniform_int_distribution<int>(t.grid[d] == 1 ? 0 : 1, 3)(rng);
    t.dist[d] = k == 0   ? distribution::whole()
                : k == 1 ? distribution::block()
                : k == 2
                    ? distribution::cyclic()
                    : distribution::block_cyclic(std::uniform_int_distribution<index_t>(1, 5)(rng));
  }
  std::shuffle(t.order.begin(), t.order.end(), rng);
  return t;
}

// An n x n array in row blocks over p ranks, and the same in column blocks stored
// transposed (the two sides of a distributed transpose).
dist::array_type<2> row_blocks(index_t n, int p) {
  return {.extent = {n, n}, .dist = {distribution::block(), distribution::whole()}, .grid = {p, 1}};
}
dist::array_type<2> column_blocks_transposed(index_t n, int p) {
  return {.extent = {n, n},
          .dist = {distribution::whole(), distribution::block()},
          .grid = {1, p},
          .order = {1, 0}};
}

template <std::size_t N>
void check_copy(dist::team const& team, dist::array_type<N> const& from,
                dist::array_type<N> const& to, std::string const& what) {
  dist::array<double, N> a(team, from), b(team, to);
  a.for_each([](vec<N> const& i, double& x) { x = value(i); });
  b.for_each([](vec<N> const&, double& x) { x = -1; });
  dist::copy(b, a).wait();
  int bad = 0;
  b.for_each([&](vec<N> const& i, double const& x) {
    if (x != value(i) && bad++ < 3)
      ADD_FAILURE() << what << ": element " << value(i) << " holds " << x;
  });
  // Every element landed once: the destination parts add up to the whole.
  long mine = static_cast<long>(b.local().size()), all = 0;
  dist::all_reduce(team, std::span<long const>(&mine, 1), std::span<long>(&all, 1),
                   dist::reduce_op::sum)
      .wait();
  EXPECT_EQ(all, from.extent.product()) << what;
}

}  // namespace

TEST(DistArray, RandomRedistributionsPlaceEveryElement) {
  dist::runtime rt;
  std::mt19937 rng(2026);
  int const p = rt.size();
  for (int k = 0; k < 40; ++k) {
    vec<2> e{std::uniform_int_distribution<index_t>(1, 37)(rng),
             std::uniform_int_distribution<index_t>(1, 29)(rng)};
    auto a = random_type<2>(rng, e, p), b = random_type<2>(rng, e, p);
    check_copy(rt.world(), a, b, "2-D pair " + std::to_string(k));
  }
  for (int k = 0; k < 15; ++k) {
    vec<3> e{std::uniform_int_distribution<index_t>(1, 9)(rng),
             std::uniform_int_distribution<index_t>(1, 11)(rng),
             std::uniform_int_distribution<index_t>(1, 7)(rng)};
    auto a = random_type<3>(rng, e, p), b = random_type<3>(rng, e, p);
    check_copy(rt.world(), a, b, "3-D pair " + std::to_string(k));
  }
}

TEST(DistArray, TransposeScatterAndGatherAreCopies) {
  dist::runtime rt;
  int const p = rt.size();
  index_t const n = 4 * p + 3;
  dist::array_type<2> rows{
      .extent = {n, n}, .dist = {distribution::block(), distribution::whole()}, .grid = {p, 1}};
  auto cols = rows;  // stored transposed: this rank's memory holds rows of the transpose
  cols.dist = {distribution::whole(), distribution::block()};
  cols.grid = {1, p};
  cols.order = {1, 0};
  dist::array<double, 2> a(rt.world(), rows), t(rt.world(), cols);
  a.for_each([](vec<2> const& i, double& x) { x = value(i); });
  dist::copy(t, a).wait();
  auto e = t.local_extent();  // n rows of this rank's columns
  auto const first = t.type().owned(1, rt.rank())[0];
  for (index_t j = 0; j < e[1]; ++j)
    for (index_t i = 0; i < n; ++i)
      ASSERT_EQ(t.local()[static_cast<std::size_t>(j * n + i)], value(vec<2>{i, first + j}));
  // Gather onto team rank 0 (a grid of one process), then scatter back block-cyclic.
  dist::array_type<2> root{.extent = {n, n}};
  dist::array<double, 2> g(rt.world(), root);
  dist::copy(g, t).wait();
  if (rt.rank() == 0) {
    ASSERT_EQ(g.local().size(), static_cast<std::size_t>(n * n));
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < n; ++j) ASSERT_EQ(g.at({i, j}), value(vec<2>{i, j}));
  } else {
    EXPECT_TRUE(g.local().empty());
  }
  check_copy(rt.world(), root,
             dist::array_type<2>{.extent = {n, n},
                                 .dist = {distribution::block_cyclic(2), distribution::cyclic()},
                                 .grid = {1, p}},
             "scatter");
}

namespace {

// An element of 40 bytes (the copy's tiles shrink to 16 x 16 for it).
struct wide {
  double v[5];
};

template <class T>
T element(double v) {
  if constexpr (std::is_same_v<T, std::complex<double>>) {
    return {v, -v};
  } else {
    return {{v, v + 1, v + 2, v + 3, -v}};
  }
}

template <class T>
bool same(T const& a, T const& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// The sides of a distributed transpose of an n0 x n1 array over p ranks: rows in blocks,
// the columns in blocks stored transposed, and the columns in blocks of `nb` dealt
// cyclically, stored transposed.
std::array<dist::array_type<2>, 3> transpose_types(index_t n0, index_t n1, int p, index_t nb) {
  dist::array_type<2> rows{
      .extent = {n0, n1}, .dist = {distribution::block(), distribution::whole()}, .grid = {p, 1}};
  auto cols = rows;
  cols.dist = {distribution::whole(), distribution::block()};
  cols.grid = {1, p};
  cols.order = {1, 0};
  auto cyclic_cols = cols;
  cyclic_cols.dist[1] = distribution::block_cyclic(nb);
  return {rows, cols, cyclic_cols};
}

// Rows to the column type stored transposed and back (the distributed FFT's transposes),
// and rows to block-cyclic columns, for an element type wider than a double: the tiled
// copies that go through a buffer, partial tiles at the edges, and ranks without columns.
template <class T>
void check_wide_transposes(dist::runtime const& rt, index_t n0, index_t n1) {
  int const p = rt.size();
  std::string const what = std::to_string(n0) + " x " + std::to_string(n1) + ", " +
                           std::to_string(sizeof(T)) + "-byte elements";
  auto const [rows, cols, cyclic_cols] = transpose_types(n0, n1, p, 3);
  dist::array<T, 2> a(rt.world(), rows), back(rt.world(), rows);
  a.for_each([](vec<2> const& i, T& x) { x = element<T>(value(i)); });
  for (auto const& type : {cols, cyclic_cols}) {
    dist::array<T, 2> t(rt.world(), type);
    dist::copy(t, a).wait();
    int bad = 0;
    t.for_each([&](vec<2> const& i, T const& x) {
      if (!same(x, element<T>(value(i))) && bad++ < 3)
        ADD_FAILURE() << what << ": element " << value(i) << " misplaced in the transpose";
    });
    dist::copy(back, t).wait();
    back.for_each([&](vec<2> const& i, T const& x) {
      if (!same(x, element<T>(value(i))) && bad++ < 3)
        ADD_FAILURE() << what << ": element " << value(i) << " misplaced after the way back";
    });
  }
}

// An element of 12 bytes: its runs start and end off the 16-byte grid of the streaming
// stores (their heads and tails go by memcpy).
struct odd12 {
  float v[3];
};

// An element that names its global index exactly (value() repeats once an extent passes
// 1000): both indices in every element type here.
template <class T>
T indexed(vec<2> const& i) {
  auto const r = static_cast<double>(i[0]), c = static_cast<double>(i[1]);
  if constexpr (std::is_same_v<T, odd12>) {
    return T{{static_cast<float>(r), static_cast<float>(c), static_cast<float>(r + c)}};
  } else if constexpr (std::is_same_v<T, std::complex<double>>) {
    return {r, c};
  } else {
    return {{r, c, r + c, r - c, r * c}};
  }
}

// Transposes whose every rank's destination is at least dist::detail::stream_threshold
// bytes (from the machine's last-level cache), so that the tiles are written with
// non-temporal stores, there and back, with extents the ranks do not divide; and to
// block-cyclic columns (element by element at two or more ranks: their offsets jump). The
// test's runtime describes a machine with a 16 MiB last-level cache (see below), so the
// threshold is its minimum, 8 MiB.
template <class T>
void check_streamed_transposes(dist::runtime const& rt) {
  int const p = rt.size();
  auto const thr = dist::detail::stream_threshold(rt.machine(), p);
  index_t const n0 = 1031;
  auto const n1 = static_cast<index_t>(thr * 23 / 20 * static_cast<std::size_t>(p) /
                                       (static_cast<std::size_t>(n0) * sizeof(T))) +
                  3;
  std::string const what = std::to_string(n0) + " x " + std::to_string(n1) + ", " +
                           std::to_string(sizeof(T)) + "-byte elements";
  auto const [rows, cols, cyclic_cols] = transpose_types(n0, n1, p, 5);
  dist::array<T, 2> a(rt.world(), rows), back(rt.world(), rows);
  ASSERT_GE(a.local().size() * sizeof(T), thr) << what << ": the rows do not stream";
  a.for_each([&](vec<2> const& i, T& x) { x = indexed<T>(i); });
  for (auto const& type : {cols, cyclic_cols}) {
    dist::array<T, 2> t(rt.world(), type);
    ASSERT_GE(t.local().size() * sizeof(T), thr) << what << ": the columns do not stream";
    t.for_each([](vec<2> const&, T& x) { std::memset(static_cast<void*>(&x), 0xab, sizeof(T)); });
    back.for_each(
        [](vec<2> const&, T& x) { std::memset(static_cast<void*>(&x), 0xcd, sizeof(T)); });
    dist::copy(t, a).wait();
    int bad = 0;
    t.for_each([&](vec<2> const& i, T const& x) {
      if (!same(x, indexed<T>(i)) && bad++ < 3)
        ADD_FAILURE() << what << ": element (" << i[0] << ", " << i[1]
                      << ") misplaced in the transpose";
    });
    dist::copy(back, t).wait();
    back.for_each([&](vec<2> const& i, T const& x) {
      if (!same(x, indexed<T>(i)) && bad++ < 3)
        ADD_FAILURE() << what << ": element (" << i[0] << ", " << i[1]
                      << ") misplaced after the way back";
    });
  }
}

// The tiled copy itself, streamed and not: an nr x nc plane from row-major storage into
// column-major storage (the tiles' runs gathered from rows) and back (from columns), with
// partial tiles and more than one block of tiles each way, into destinations with guard
// elements on both sides that must stay untouched.
template <class T>
void check_plane_transposes(bool stream) {
  index_t const nr = 300, nc = 270, guard = 37;
  std::string const what =
      std::to_string(sizeof(T)) + "-byte elements" + (stream ? ", streamed" : ", not streamed");
  auto list = [](index_t n, index_t step) {
    std::vector<index_t> o(static_cast<std::size_t>(n));
    for (index_t k = 0; k < n; ++k) o[static_cast<std::size_t>(k)] = k * step;
    return o;
  };
  dist::detail::pair_set<2> by_rows, by_columns;
  by_rows.offsets = {list(nr, nc), list(nc, 1)};
  by_columns.offsets = {list(nr, 1), list(nc, nr)};
  auto const n = static_cast<std::size_t>(nr * nc), g = static_cast<std::size_t>(guard);
  std::vector<T> rows(n), columns(n + 2 * g), back(n + 2 * g);
  for (index_t r = 0; r < nr; ++r)
    for (index_t c = 0; c < nc; ++c)
      rows[static_cast<std::size_t>(r * nc + c)] = indexed<T>({r, c});
  T sentinel;
  std::memset(static_cast<void*>(&sentinel), 0x5a, sizeof(T));
  std::fill(columns.begin(), columns.end(), sentinel);
  std::fill(back.begin(), back.end(), sentinel);
  dist::detail::copy_set(rows.data(), by_rows, columns.data() + guard, by_columns, stream);
  dist::detail::copy_set(columns.data() + guard, by_columns, back.data() + guard, by_rows, stream);
  int bad = 0;
  for (std::size_t k = 0; k < g; ++k)
    for (auto const* v : {&columns, &back})
      for (std::size_t at : {k, g + n + k})
        if (!same((*v)[at], sentinel) && bad++ < 3)
          ADD_FAILURE() << what << ": guard element " << at << " written";
  for (index_t r = 0; r < nr; ++r)
    for (index_t c = 0; c < nc; ++c) {
      auto const want = indexed<T>({r, c});
      if (!same(columns[g + static_cast<std::size_t>(c * nr + r)], want) && bad++ < 3)
        ADD_FAILURE() << what << ": (" << r << ", " << c << ") misplaced by columns";
      if (!same(back[g + static_cast<std::size_t>(r * nc + c)], want) && bad++ < 3)
        ADD_FAILURE() << what << ": (" << r << ", " << c << ") misplaced back by rows";
    }
}

}  // namespace

TEST(DistArray, StreamedBytesTouchOnlyTheirRange) {
  // Every alignment of the destination and the source and every length up to a few
  // 16-byte groups: the bytes in range are the source's, the guard bytes around them
  // untouched.
  alignas(64) unsigned char src[256], dst[256];
  for (std::size_t k = 0; k < sizeof src; ++k) src[k] = static_cast<unsigned char>(k * 7 + 1);
  for (std::size_t d = 0; d < 32; ++d)
    for (std::size_t s = 0; s < 4; ++s)
      for (std::size_t len = 0; len < 100; ++len) {
        std::memset(dst, 0xee, sizeof dst);
        dist::detail::stream_bytes(dst + 64 + d, src + s, len);
        dist::detail::stream_fence();
        for (std::size_t k = 0; k < sizeof dst; ++k) {
          bool const in = k >= 64 + d && k < 64 + d + len;
          unsigned const want = in ? src[s + k - 64 - d] : 0xee;
          ASSERT_EQ(dst[k], want) << "byte " << k << ", offset " << d << ", source offset " << s
                                  << ", length " << len;
        }
      }
}

TEST(DistArray, TiledTransposesStreamedOrNotWriteOnlyTheirElements) {
  for (bool stream : {true, false}) {
    check_plane_transposes<std::complex<double>>(stream);
    check_plane_transposes<odd12>(stream);
    check_plane_transposes<wide>(stream);
  }
}

// The threshold itself: an eighth of the last-level cache over the ranks that share it,
// never under stream_threshold_min (a described machine: no MPI, no runtime needed).
TEST(DistArray, TheStreamingThresholdIsAnEighthOfTheCacheOverItsRanks) {
  machine_options mo;
  mo.topology = "synthetic:pack:1 numa:1 l3:1(size=512MiB) core:2 pu:1";
  mo.cuda = false;
  auto const m = discover_machine(mo).machine;
  EXPECT_EQ(dist::detail::stream_threshold(m, 1), std::size_t{64} << 20);
  EXPECT_EQ(dist::detail::stream_threshold(m, 2), std::size_t{32} << 20);
  EXPECT_EQ(dist::detail::stream_threshold(m, 16), dist::detail::stream_threshold_min);
  EXPECT_EQ(dist::detail::stream_threshold(m, 0), std::size_t{64} << 20);
}

TEST(DistArray, LargeTransposesStreamTheirStores) {
  // A described machine with a 16 MiB L3, so that the threshold is its minimum (8 MiB)
  // wherever the test runs: hwloc reports hundreds of MiB of L3 on some VMs, which made
  // these copies move 70 MiB per array (18 s at one rank under AddressSanitizer).
  runtime_options o;
  o.topology = "synthetic:pack:1 numa:1 l3:1(size=16MiB) core:2 pu:1";
  dist::runtime rt(o);
  ASSERT_EQ(rt.machine().last_level_cache(), std::uint64_t{16} << 20);
  ASSERT_EQ(dist::detail::stream_threshold(rt.machine(), rt.size()),
            dist::detail::stream_threshold_min);
  check_streamed_transposes<std::complex<double>>(rt);
  check_streamed_transposes<odd12>(rt);
}

TEST(DistArray, TransposesOfWideElements) {
  dist::runtime rt;
  for (auto [n0, n1] : {std::pair<index_t, index_t>{70, 45}, {64, 64}, {33, 97}, {5, 130}}) {
    check_wide_transposes<std::complex<double>>(rt, n0, n1);
    check_wide_transposes<wide>(rt, n0, n1);
  }
}

TEST(DistArray, MistakesAreErrors) {
  dist::runtime rt;
  int const p = rt.size();
  EXPECT_THROW((dist::array<double, 1>(
                   rt.world(), {.extent = {8}, .dist = {distribution::block()}, .grid = {p + 1}})),
               invalid_argument);
  if (p > 1) {
    EXPECT_THROW((dist::array<double, 1>(
                     rt.world(), {.extent = {8}, .dist = {distribution::whole()}, .grid = {p}})),
                 invalid_argument);
  }
  EXPECT_THROW((dist::array<double, 1>(rt.world(),
                                       {.extent = {8}, .dist = {distribution::block_cyclic(0)}})),
               invalid_argument);
  EXPECT_THROW((dist::array<double, 2>(rt.world(), {.extent = {4, 4}, .order = {0, 0}})),
               invalid_argument);
  dist::array<double, 1> a(rt.world(), {.extent = {8}}), b(rt.world(), {.extent = {9}});
  EXPECT_THROW(dist::copy(b, a), invalid_argument);
  // An element held by another rank, and one outside the extent.
  dist::array<double, 1> c(rt.world(),
                           {.extent = {8}, .dist = {distribution::cyclic()}, .grid = {p}});
  if (p > 1) {
    EXPECT_THROW(c.at({rt.rank() == 0 ? 1 : 0}) = 1.0, invalid_argument);
  }
  EXPECT_THROW(c.at({8}), invalid_argument);
  std::vector<int> in(4), out(4);
  std::vector<std::size_t> n(static_cast<std::size_t>(p), 0),
      bad(static_cast<std::size_t>(p) + 1, 0);
  EXPECT_THROW(
      dist::all_to_all_v(rt.world(), std::span<int const>(in), bad, n, std::span<int>(out), n, n),
      invalid_argument);
}

// Found by an outside probe: sizes that overflow were accepted (an empty part whose at()
// crashed; a grid of 0 processes that silently dropped every element; a block-cyclic
// block of 2^62 that looped allocating), and holds/owner_rank answered for indices
// outside the extent.
TEST(DistArray, OverflowingTypesAndIndicesOutsideTheExtentAreErrors) {
  dist::runtime rt;
  int const p = rt.size();
  index_t const big = index_t{1} << 21;
  EXPECT_THROW((dist::array<double, 3>(rt.world(), {.extent = {big, big, big * 2}})),
               invalid_argument);
  EXPECT_THROW(
      (dist::array<double, 2>(rt.world(), {.extent = {8, 8},
                                           .dist = {distribution::block(), distribution::block()},
                                           .grid = {65536, 65536}})),
      invalid_argument);
  // A block larger than the extent: every index on grid coordinate 0, in order.
  for (index_t b : {index_t{9}, index_t{1} << 40, index_t{1} << 62}) {
    dist::array_type<1> t{.extent = {8}, .dist = {distribution::block_cyclic(b)}, .grid = {p}};
    dist::array<double, 1> a(rt.world(), t);
    EXPECT_EQ(a.local().size(), rt.rank() == 0 ? 8u : 0u) << b;
    EXPECT_EQ(t.owner_rank({7}), 0);
    EXPECT_EQ(t.local_index(0, 7), 7);
  }
  dist::array_type<1> t{.extent = {10}, .dist = {distribution::block()}, .grid = {p}};
  dist::array<double, 1> a(rt.world(), t);
  EXPECT_FALSE(a.holds({-1}));
  EXPECT_FALSE(a.holds({10}));
  EXPECT_THROW((void)t.owner_rank({11}), invalid_argument);
  EXPECT_THROW((void)t.owner_rank({-1}), invalid_argument);
  // Extents that check() accepts, near INT64_MAX: the global view's arithmetic must not
  // overflow ((n + p - 1) / p made owner_rank({n - 1}) -3 and cyclic counts negative).
  index_t const n = std::numeric_limits<index_t>::max();
  for (auto how : {distribution::block(), distribution::cyclic(), distribution::block_cyclic(7)}) {
    dist::array_type<1> const huge{.extent = {n}, .dist = {how}, .grid = {3}};
    index_t total = 0;
    for (int c = 0; c < 3; ++c) {
      EXPECT_GE(huge.owned_count(0, c), 0) << c;
      total += huge.owned_count(0, c);
    }
    EXPECT_EQ(total, n);
    int const last = huge.owner_rank({n - 1});
    EXPECT_TRUE(last >= 0 && last < 3) << last;
    EXPECT_GE(huge.local_index(0, n - 1), 0);
    EXPECT_LT(huge.local_index(0, n - 1), huge.owned_count(0, last));
    EXPECT_EQ(huge.owner_rank({0}), 0);
  }
  dist::array_type<1> const blocks{.extent = {n}, .dist = {distribution::block()}, .grid = {3}};
  EXPECT_EQ(blocks.owner_rank({n - 1}), 2);
  EXPECT_EQ(blocks.local_index(0, n - 1), blocks.owned_count(0, 2) - 1);
  // The lists themselves for a small extent near the top: cyclic steps stop at the end.
  dist::array_type<1> const few{.extent = {5}, .dist = {distribution::cyclic()}, .grid = {3}};
  EXPECT_EQ(few.owned(0, 1), (std::vector<index_t>{1, 4}));
}

// Found by an outside probe: ranks that passed arrays of different sizes to one copy
// crashed (a bus error reading past a peer's block). On one node the first copy from an
// array compares the members' source types and every member fails alike.
TEST(DistArray, ACopyOfArraysOfDifferentTypesOnDifferentRanksIsAnError) {
  dist::runtime rt;
  if (rt.size() < 2 || !dist::detail::direct_access(rt.world()))
    GTEST_SKIP() << "needs 2 ranks copying directly on one node";
  index_t const n = rt.rank() == 0 ? 2000 : 8;
  dist::array_type<2> from{.extent = {n, n},
                           .dist = {distribution::block(), distribution::whole()},
                           .grid = {rt.size(), 1}};
  dist::array_type<2> to{.extent = {n, n},
                         .dist = {distribution::whole(), distribution::block()},
                         .grid = {1, rt.size()}};
  dist::array<double, 2> a(rt.world(), from), b(rt.world(), to);
  EXPECT_THROW(dist::copy(b, a).wait(), invalid_argument);
  // A later copy from the same source fails the same way; the team still works.
  EXPECT_THROW(dist::copy(b, a).wait(), invalid_argument);
  dist::barrier(rt.world()).wait();
  dist::array<double, 1> c(rt.world(), {.extent = {10}}), d(rt.world(), {.extent = {10}});
  dist::copy(d, c).wait();
}

// Copies and a reduction in flight together, the first copy's pack (or reads) far longer
// on some ranks than on others: the copies start their exchanges from callbacks, whose
// order differs between ranks, while MPI needs a team's collectives started in one order
// everywhere. The engine starts them in the order the copies were called.
TEST(DistArray, CopiesInFlightTogetherKeepTheirOrder) {
  dist::runtime rt;
  int const p = rt.size();
  auto const& w = rt.world();
  index_t const n = 768, m = 6;
  // One rank holds the large source: it packs (or is read) alone, the others at once.
  dist::array_type<2> const one{.extent = {n, n}, .grid = {1, 1}};
  dist::array_type<2> const rows{
      .extent = {n, n}, .dist = {distribution::block(), distribution::whole()}, .grid = {p, 1}};
  dist::array_type<2> const small_rows{
      .extent = {m, m}, .dist = {distribution::cyclic(), distribution::whole()}, .grid = {p, 1}};
  dist::array_type<2> const small_cols{.extent = {m, m},
                                       .dist = {distribution::whole(), distribution::block()},
                                       .grid = {1, p},
                                       .order = {1, 0}};
  dist::array<double, 2> big(w, one), spread(w, rows), a(w, small_rows), b(w, small_cols),
      c(w, small_cols);
  big.for_each([](vec<2> const& i, double& x) { x = value(i); });
  for (int round = 0; round < 4; ++round) {
    a.for_each([round](vec<2> const& i, double& x) { x = value(i) + round; });
    std::int64_t const mine = rt.rank() + round;
    std::int64_t sum = -1;
    auto e1 = dist::copy(spread, big);
    auto e2 = dist::copy(b, a);
    auto e3 = dist::all_reduce(w, std::span<std::int64_t const>(&mine, 1),
                               std::span<std::int64_t>(&sum, 1), dist::reduce_op::sum);
    auto e4 = dist::copy(c, a);  // reads what e2 reads: independent of it
    e1.wait();
    e2.wait();
    e3.wait();
    e4.wait();
    EXPECT_EQ(sum, static_cast<std::int64_t>(p) * (p - 1) / 2 + std::int64_t{p} * round);
    std::size_t wrong = 0;
    spread.for_each([&](vec<2> const& i, double& x) { wrong += x != value(i); });
    b.for_each([&](vec<2> const& i, double& x) { wrong += x != value(i) + round; });
    c.for_each([&](vec<2> const& i, double& x) { wrong += x != value(i) + round; });
    EXPECT_EQ(wrong, 0u) << "round " << round << " on rank " << rt.rank();
  }
}

// With direct reads (one node), a rank's copy completes only when no peer reads its
// source any more: overwriting the source right after wait() must not change what the
// peers received, whatever order the ranks finish in.
TEST(DistArray, SourceIsFreeOnceTheCopyCompletes) {
  dist::runtime rt;
  int const p = rt.size();
  auto const& w = rt.world();
  index_t const n = 257;
  dist::array_type<2> const rows{
      .extent = {n, n}, .dist = {distribution::block(), distribution::whole()}, .grid = {p, 1}};
  dist::array_type<2> const cols{.extent = {n, n},
                                 .dist = {distribution::whole(), distribution::cyclic()},
                                 .grid = {1, p},
                                 .order = {1, 0}};
  dist::array<double, 2> a(w, rows), b(w, cols);
  for (int round = 0; round < 6; ++round) {
    a.for_each([round](vec<2> const& i, double& x) { x = value(i) * (round + 1); });
    dist::copy(b, a).wait();
    // Rank 0 overwrites its source at once; the others first let time pass.
    if (rt.rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (auto& x : a.local()) x = -1;
    std::size_t wrong = 0;
    b.for_each([&](vec<2> const& i, double& x) { wrong += x != value(i) * (round + 1); });
    EXPECT_EQ(wrong, 0u) << "round " << round << " on rank " << rt.rank();
    dist::barrier(w).wait();
  }
}

// On one node a peer's array is mapped into this process for copies (dist/direct.hpp):
// arrays made and freed in a loop must not leave their mappings behind (each would keep
// a freed array's memory alive), and copies must read the arrays made since, not stale
// mappings of earlier ones at the same addresses.
TEST(DistArray, MappingsOfFreedArraysGo) {
  dist::runtime rt;
  int const p = rt.size();
  auto const& w = rt.world();
  index_t const n = 67;
  auto const rows = row_blocks(n, p), cols = column_blocks_transposed(n, p);
  for (int round = 0; round < 40; ++round) {
    dist::array<double, 2> a(w, rows), b(w, cols);
    a.for_each([round](vec<2> const& i, double& x) { x = value(i) + round; });
    dist::copy(b, a).wait();
    std::size_t wrong = 0;
    b.for_each([&](vec<2> const& i, double& x) { wrong += x != value(i) + round; });
    ASSERT_EQ(wrong, 0u) << "round " << round << " on rank " << rt.rank();
  }
  // The last round's sources at most, one per peer (none when nothing is mapped).
  auto const mapped = dist::detail::mapped_peer_blocks();
  if (dist::detail::direct_mapping(w))
    EXPECT_LE(mapped, static_cast<std::size_t>(p - 1));
  else
    EXPECT_EQ(mapped, 0u);
}

// dist::array copies its elements into memory of its own; a move keeps the memory.
TEST(DistArray, CopiesOwnTheirMemoryMovesKeepIt) {
  dist::runtime rt;
  int const p = rt.size();
  dist::array_type<1> const t{.extent = {103}, .dist = {distribution::cyclic()}, .grid = {p}};
  dist::array<double, 1> a(rt.world(), t);
  a.for_each([](vec<1> const& i, double& x) { x = value(i); });
  dist::array<double, 1> b = a;
  ASSERT_EQ(b.local().size(), a.local().size());
  if (!a.local().empty()) {
    EXPECT_NE(b.local().data(), a.local().data());
  }
  for (auto& x : a.local()) x = -1;
  std::size_t wrong = 0;
  b.for_each([&](vec<1> const& i, double& x) { wrong += x != value(i); });
  EXPECT_EQ(wrong, 0u);
  auto const* where = b.local().data();
  dist::array<double, 1> c = std::move(b);
  EXPECT_EQ(c.local().data(), where);
  a = c;
  wrong = 0;
  a.for_each([&](vec<1> const& i, double& x) { wrong += x != value(i); });
  EXPECT_EQ(wrong, 0u);
  // A copy made from the copy reads the new memory.
  dist::array_type<1> const blocks{.extent = {103}, .dist = {distribution::block()}, .grid = {p}};
  dist::array<double, 1> d(rt.world(), blocks);
  dist::copy(d, a).wait();
  wrong = 0;
  d.for_each([&](vec<1> const& i, double& x) { wrong += x != value(i); });
  EXPECT_EQ(wrong, 0u);
}

// A direct copy completes on a rank once every peer has counted its reads in its own
// block's header (no barrier). Ranks whose part is empty still read and count; ranks
// that finish first free their arrays at once, while slower ones may still look at their
// counts (a freed or reused block counts as done); scatters and gathers alternate with
// arrays made fresh every round and the ranks arriving in a different order each time.
TEST(DistArray, CopiesWithEmptyPartsAndRanksLeavingEarly) {
  dist::runtime rt;
  int const p = rt.size(), me = rt.rank();
  auto const& w = rt.world();
  index_t const n = 45;
  dist::array_type<2> const one{.extent = {n, n}, .grid = {1, 1}};
  dist::array_type<2> const spread{.extent = {n, n},
                                   .dist = {distribution::cyclic(), distribution::block()},
                                   .grid = {p, 1},
                                   .order = {1, 0}};
  for (int round = 0; round < 24; ++round) {
    dist::array<double, 2> a(w, round % 2 ? spread : one), b(w, round % 2 ? one : spread);
    a.for_each([round](vec<2> const& i, double& x) { x = value(i) - round; });
    if ((me + round) % p == 0) std::this_thread::sleep_for(std::chrono::microseconds(300));
    dist::copy(b, a).wait();
    std::size_t wrong = 0;
    b.for_each([&](vec<2> const& i, double& x) { wrong += x != value(i) - round; });
    ASSERT_EQ(wrong, 0u) << "round " << round << " on rank " << me;
  }
}

// A copy reads each peer's part only once that peer has joined the copy's agreement (it
// has called the copy, and its source is written). The ranks take turns arriving late and writing
// their source only then, right after overwriting it with garbage, and two copies from the source
// are in flight at once (the second before the first has gathered anything): a read that did not
// wait for its peer would see the garbage or the last round's values.
TEST(DistArray, LaterCopiesWaitForEachPeersSource) {
  dist::runtime rt;
  int const p = rt.size(), me = rt.rank();
  auto const& w = rt.world();
  index_t const n = 131;
  auto const rows = row_blocks(n, p), cols = column_blocks_transposed(n, p);
  dist::array_type<2> const mixed{
      .extent = {n, n}, .dist = {distribution::cyclic(), distribution::cyclic()}, .grid = {1, p}};
  dist::array<double, 2> a(w, rows), b(w, cols), c(w, mixed);
  for (int round = 0; round < 16; ++round) {
    if ((me + round) % p == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    a.for_each([round](vec<2> const& i, double& x) { x = value(i) * (round + 1); });
    auto e1 = dist::copy(b, a);
    auto e2 = dist::copy(c, a);
    e1.wait();
    e2.wait();
    for (auto& x : a.local()) x = -1;
    std::size_t wrong = 0;
    b.for_each([&](vec<2> const& i, double& x) { wrong += x != value(i) * (round + 1); });
    c.for_each([&](vec<2> const& i, double& x) { wrong += x != value(i) * (round + 1); });
    ASSERT_EQ(wrong, 0u) << "round " << round << " on rank " << me;
  }
}

// Copies in flight together that share arrays: b is the destination of the first and the
// source of the second (read after write), a the source of the first and the destination
// of the third (write after read), d the destination of the second and the source of the
// fourth. Each copy waits for the earlier ones on its arrays, on every rank: a peer reads
// this rank's b only once this rank has written it (without that, 20,000-46,000 wrong
// elements per rank at 3 ranks).
TEST(DistArray, CopiesThatShareArraysKeepTheirOrder) {
  dist::runtime rt;
  int const p = rt.size(), me = rt.rank();
  auto const& w = rt.world();
  index_t const n = 64;
  auto const rows = row_blocks(n, p), cols = column_blocks_transposed(n, p);
  dist::array_type<2> const mixed{.extent = {n, n},
                                  .dist = {distribution::cyclic(), distribution::block_cyclic(3)},
                                  .grid = {p, 1}};
  dist::array<double, 2> a(w, rows), b(w, cols), d(w, mixed), other(w, mixed), last(w, rows);
  for (int round = 0; round < 30; ++round) {
    double const base = 1e6 * round;
    a.for_each([&](vec<2> const& i, double& x) { x = base + value(i); });
    other.for_each([&](vec<2> const& i, double& x) { x = -base - value(i); });
    for (auto& x : b.local()) x = -7;
    if ((me + round) % p == 0) std::this_thread::sleep_for(std::chrono::microseconds(500));
    auto e1 = dist::copy(b, a);
    auto e2 = dist::copy(d, b);
    auto e3 = dist::copy(a, other);
    auto e4 = dist::copy(last, d);
    e4.wait();
    e3.wait();
    e2.wait();
    e1.wait();
    std::size_t wrong = 0;
    b.for_each([&](vec<2> const& i, double& x) { wrong += x != base + value(i); });
    d.for_each([&](vec<2> const& i, double& x) { wrong += x != base + value(i); });
    last.for_each([&](vec<2> const& i, double& x) { wrong += x != base + value(i); });
    a.for_each([&](vec<2> const& i, double& x) { wrong += x != -base - value(i); });
    ASSERT_EQ(wrong, 0u) << "round " << round << " on rank " << me;
  }
}

// A mistake only one rank can see (its destination's extent) throws there and fails the
// other ranks' copies with the same error, naming that rank, instead of leaving them
// waiting for it; a destination of another type on one rank fails every rank alike. The
// team's collectives stay in step: the next copy works.
TEST(DistArray, AMistakeOnOneRankFailsTheCopyOnEveryRank) {
  dist::runtime rt;
  if (rt.size() < 2) GTEST_SKIP() << "needs 2 ranks";
  auto const& w = rt.world();
  int const me = rt.rank();
  dist::array<double, 1> a(w, {.extent = {10}});
  dist::array<double, 1> wrong_extent(w, {.extent = {me == 1 ? 11 : 10}});
  if (me == 1) {
    EXPECT_THROW(dist::copy(wrong_extent, a), invalid_argument);
  } else {
    try {
      dist::copy(wrong_extent, a).wait();
      ADD_FAILURE() << "expected the copy to fail on rank " << me;
    } catch (invalid_argument const& e) {
      EXPECT_NE(std::string(e.what()).find("team rank 1 failed: dist::copy: the global extents"),
                std::string::npos)
          << e.what();
    }
  }
  dist::array<double, 1> other_type(
      w, {.extent = {10},
          .dist = {me == 0 ? distribution::cyclic() : distribution::block()},
          .grid = {rt.size()}});
  try {
    dist::copy(other_type, a).wait();
    ADD_FAILURE() << "expected the copy to fail on rank " << me;
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("passed a destination array of another type"),
              std::string::npos)
        << e.what();
  }
  dist::array<double, 1> c(w,
                           {.extent = {10}, .dist = {distribution::cyclic()}, .grid = {rt.size()}});
  a.for_each([](vec<1> const& i, double& x) { x = value(i) + 0.5; });
  dist::copy(c, a).wait();
  std::size_t bad = 0;
  c.for_each([&](vec<1> const& i, double& x) { bad += x != value(i) + 0.5; });
  EXPECT_EQ(bad, 0u);
}

// Arrays outliving their runtime: a copy between them is an error (their team has ended),
// on the direct path too, where the first copy left the peers' blocks mapped.
TEST(DistArray, ACopyOnAnEndedRuntimesTeamIsAnError) {
  std::optional<dist::array<double, 1>> a, b;
  {
    dist::runtime rt;
    a.emplace(rt.world(), dist::array_type<1>{.extent = {10}});
    b.emplace(
        rt.world(),
        dist::array_type<1>{.extent = {10}, .dist = {distribution::cyclic()}, .grid = {rt.size()}});
    dist::copy(*b, *a).wait();
  }
  dist::runtime rt;
  try {
    (void)dist::copy(*b, *a);
    ADD_FAILURE() << "expected an error";
  } catch (error const& e) {
    EXPECT_NE(std::string(e.what()).find("has ended"), std::string::npos) << e.what();
  }
}
