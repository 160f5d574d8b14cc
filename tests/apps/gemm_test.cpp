// The single-source tiled GEMM (apps/common/gemm_kernel.hpp, gemm.hpp) against a naive
// triple loop: odd and non-square extents around the tile sizes, single and double
// precision, on serial, threads, openmp and a sim device (the CPU and the device tiling
// of the same kernel); operands given by array types (a transpose, a window); alpha and
// beta cases (beta = 0 must not read C); errors.
#include "gemm.hpp"

#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {

using strata::index_t;

template <class T>
std::vector<T> values(index_t count, std::uint64_t seed) {
  std::vector<T> v(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < v.size(); ++i) {
    strata::philox4x32 g(seed, i);
    v[i] = static_cast<T>(2 * strata::uniform_real<double>(g) - 1);
  }
  return v;
}

// C = alpha A B + beta C0, row-major, accumulated in double (long double for double).
template <class T>
std::vector<T> naive(index_t m, index_t n, index_t k, T alpha, std::vector<T> const& a,
                     std::vector<T> const& b, T beta, std::vector<T> const& c0) {
  std::vector<T> c(static_cast<std::size_t>(m * n));
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      long double s = 0;
      for (index_t p = 0; p < k; ++p)
        s += static_cast<long double>(a[static_cast<std::size_t>(i * k + p)]) *
             b[static_cast<std::size_t>(p * n + j)];
      auto const ij = static_cast<std::size_t>(i * n + j);
      c[ij] =
          static_cast<T>(alpha * s + (beta == T(0) ? 0 : beta * static_cast<long double>(c0[ij])));
    }
  return c;
}

// Largest |x - y| relative to the sum of magnitudes (k + 2 roundoffs is the bound).
template <class T>
void expect_close(std::vector<T> const& got, std::vector<T> const& want, index_t k,
                  std::string const& what) {
  ASSERT_EQ(got.size(), want.size());
  double const tol = 2.0 * static_cast<double>(k + 2) * std::numeric_limits<T>::epsilon();
  for (std::size_t i = 0; i < got.size(); ++i) {
    double const scale = std::max(1.0, std::fabs(static_cast<double>(want[i])));
    // Entries of A and B lie in [-1, 1): a product's magnitude sum is at most k + |beta C|.
    double const bound = tol * std::max(scale, static_cast<double>(k));
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= bound)) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
      return;
    }
  }
}

class Gemm : public testing::Test {
 protected:
  strata::runtime rt{strata::runtime_options{.sim_devices = "1:units=2"}};
  std::vector<std::pair<std::string, strata::target>> targets() {
    auto host = rt.machine().slice(strata::isa::host);
    auto sims = rt.machine().slice(strata::isa::sim).descendants(strata::place_type::device);
    return {{"serial", strata::on(host, strata::backend_id::serial)},
            {"threads", strata::on(host, strata::backend_id::threads)},
            {"openmp", strata::on(host, strata::backend_id::openmp)},
            {"sim", strata::target(sims.at(0))}};
  }

  template <class T>
  void check_sizes() {
    struct mnk {
      index_t m, n, k;
    };
    // Tile edges: register tiles of 8 x 16 / 8 x 32 (CPU), 4 x 4 in 64 x 64 (device),
    // k slices of 384 / 256 (double / float on CPU) and 16, A chunks of 256 / 512 rows
    // for a one-thread block (on serial, double 257 rows are a chunk of 256 and one of 1;
    // 300 x 40 x 800 is two chunks over three k slices, 520 rows two float chunks).
    std::vector<mnk> const cases = {{1, 1, 1},     {17, 17, 17},   {255, 255, 255}, {257, 257, 257},
                                    {17, 255, 33}, {257, 1, 64},   {3, 257, 255},   {255, 17, 1},
                                    {9, 33, 300},  {130, 70, 513}, {300, 40, 800},  {520, 33, 300}};
    T const alpha = T(1.5), beta = T(-0.5);
    for (auto const& c : cases) {
      auto const a = values<T>(c.m * c.k, 1), b = values<T>(c.k * c.n, 2),
                 c0 = values<T>(c.m * c.n, 3);
      auto const want = naive(c.m, c.n, c.k, alpha, a, b, beta, c0);
      for (auto const& [name, where] : targets()) {
        std::vector<T> got = c0;
        apps::gemm<T>(where, c.m, c.n, c.k, alpha, a.data(), c.k, b.data(), c.n, beta, got.data(),
                      c.n);
        expect_close(got, want, c.k,
                     name + " " + std::to_string(c.m) + " x " + std::to_string(c.n) + " x " +
                         std::to_string(c.k) + (sizeof(T) == 4 ? " float" : " double"));
      }
    }
  }
};

TEST_F(Gemm, DoubleOddAndNonSquareSizesOnEveryBackend) {
  check_sizes<double>();
}

TEST_F(Gemm, FloatOddAndNonSquareSizesOnEveryBackend) {
  check_sizes<float>();
}

// The CPU plan: tiles of whole register tiles, no larger than the tiling's largest, cutting
// C into blocks of about equal size (a 1032-row C is not a 1024-row block and an 8-row one),
// at least two per thread (one for one thread) where C has room for them.
template <class T>
void check_plans(strata::target const& where, index_t threads) {
  using tiling = apps::gemm_cpu_tiling<T>;
  for (auto [m, n] : std::vector<std::pair<index_t, index_t>>{{1, 1},
                                                              {17, 255},
                                                              {256, 256},
                                                              {257, 257},
                                                              {520, 520},
                                                              {1024, 1024},
                                                              {1032, 1040},
                                                              {4096, 4096}}) {
    SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n) + " on " + std::to_string(threads) +
                 " threads");
    auto const p = apps::plan_gemm<T>(where, m, n);
    EXPECT_EQ(p.bm % tiling::rm, 0);
    EXPECT_EQ(p.bn % tiling::rn, 0);
    EXPECT_LE(p.bm, tiling::max_bm);
    EXPECT_LE(p.bn, tiling::max_bn);
    index_t const rows = (m + p.bm - 1) / p.bm, cols = (n + p.bn - 1) / p.bn;
    EXPECT_GT(m - (rows - 1) * p.bm, p.bm - rows * tiling::rm);  // the last block row
    EXPECT_GT(n - (cols - 1) * p.bn, p.bn - cols * tiling::rn);
    // Blocks are split down to 2 register tiles high and 4 wide, not below.
    index_t const most =
        std::max<index_t>(1, m / (2 * tiling::rm)) * std::max<index_t>(1, n / (4 * tiling::rn));
    EXPECT_GE(rows * cols, std::min(threads > 1 ? 2 * threads : 1, most));
  }
}

TEST_F(Gemm, CpuPlansCutCIntoEqualBlocksTwoPerThread) {
  auto host = rt.machine().slice(strata::isa::host);
  auto const pus = static_cast<index_t>(host.processors().size());
  for (auto const& [name, where] : targets()) {
    if (name == "sim") continue;
    index_t const threads = name == "serial" ? 1 : pus;
    check_plans<double>(where, threads);
    check_plans<float>(where, threads);
  }
  // One thread: the largest tiles (1024 x 1024 double), cut evenly (1032 rows: 520 +
  // 512, not 1024 + 8; 1040 columns: 528 + 512).
  auto const one =
      apps::plan_gemm<double>(strata::on(host, strata::backend_id::serial), 1032, 1040);
  EXPECT_EQ(one.bm, 520);
  EXPECT_EQ(one.bn, 528);
}

TEST_F(Gemm, BetaZeroDoesNotReadCAndKZeroScalesC) {
  index_t const m = 19, n = 21, k = 23;
  auto const a = values<double>(m * k, 4), b = values<double>(k * n, 5),
             c0 = values<double>(m * n, 6);
  auto const want = naive(m, n, k, 2.0, a, b, 0.0, c0);
  for (auto const& [name, where] : targets()) {
    std::vector<double> got(c0.size(), std::numeric_limits<double>::quiet_NaN());
    apps::gemm<double>(where, m, n, k, 2.0, a.data(), k, b.data(), n, 0.0, got.data(), n);
    expect_close(got, want, k, name + " beta 0 over NaN");
    // k = 0: no product, C = beta C.
    got = c0;
    apps::gemm<double>(where, m, n, 0, 2.0, a.data(), 1, b.data(), n, 0.25, got.data(), n);
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 0.25 * c0[i]) << name;
  }
}

TEST_F(Gemm, OperandsAreArrayTypesTransposesAndWindows) {
  // A given as the transpose of a stored k x m array (PARRAY §2.9: [[S_1][S_0]]), B as a
  // window of n columns of a wider array (§2.10), C tight.
  index_t const m = 37, n = 29, k = 41, ldb = 50;
  auto const at = values<double>(k * m, 7);  // stored k x m
  auto const bw = values<double>(k * ldb, 8);
  std::vector<double> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
  for (index_t i = 0; i < m; ++i)
    for (index_t p = 0; p < k; ++p)
      a[static_cast<std::size_t>(i * k + p)] = at[static_cast<std::size_t>(p * m + i)];
  for (index_t p = 0; p < k; ++p)
    for (index_t j = 0; j < n; ++j)
      b[static_cast<std::size_t>(p * n + j)] = bw[static_cast<std::size_t>(p * ldb + j)];
  auto const c0 = values<double>(m * n, 9);
  auto const want = naive(m, n, k, 1.0, a, b, 1.0, c0);

  strata::array_type<double> stored{k, m};
  strata::array_type<double> a_type{stored[1], stored[0]};  // m x k, column strides
  auto const b_type = apps::row_major<double>(k, n, ldb);
  strata::array_type<double> c_type{m, n};
  for (auto const& [name, where] : targets()) {
    std::vector<double> got = c0;
    apps::gemm<double>(where, 1.0, a_type.on(at.data()), b_type.on(bw.data()), 1.0,
                       c_type.on(got.data()));
    expect_close(got, want, k, name + " transposed A, windowed B");
  }
  // A as a window of k columns of a wider array (rows contiguous, leading dimension past
  // k: the CPU packing's row-wise path), k past one slice.
  index_t const k2 = 400, lda = 411;
  auto const aw = values<double>(m * lda, 10), b2 = values<double>(k2 * n, 11);
  std::vector<double> a2(static_cast<std::size_t>(m * k2));
  for (index_t i = 0; i < m; ++i)
    for (index_t p = 0; p < k2; ++p)
      a2[static_cast<std::size_t>(i * k2 + p)] = aw[static_cast<std::size_t>(i * lda + p)];
  auto const want2 = naive(m, n, k2, 1.0, a2, b2, 1.0, c0);
  for (auto const& [name, where] : targets()) {
    std::vector<double> got = c0;
    apps::gemm<double>(where, 1.0, apps::row_major<double>(m, k2, lda).on(aw.data()),
                       strata::array_type<double>{k2, n}.on(b2.data()), 1.0, c_type.on(got.data()));
    expect_close(got, want2, k2, name + " windowed A");
  }
}

TEST_F(Gemm, BadInputIsAnError) {
  std::vector<double> const x(64, 1.0), y(64, 1.0);
  std::vector<double> z(64, 1.0);
  auto host = strata::on(rt.machine().slice(strata::isa::host), strata::backend_id::serial);
  strata::array_type<double> a{4, 3}, b{4, 2}, c{4, 2}, cube{2, 2, 2};
  // A 4 x 3 times B 4 x 2: the inner extents differ.
  EXPECT_THROW(apps::gemm<double>(host, 1.0, a.on(x.data()), b.on(y.data()), 0.0, c.on(z.data())),
               strata::invalid_argument);
  // A rank-3 operand.
  EXPECT_THROW(
      apps::gemm<double>(host, 1.0, cube.on(x.data()), b.on(y.data()), 0.0, c.on(z.data())),
      strata::invalid_argument);
  // A cyclic type has no two strides (PARRAY §2.10's dim(n)).
  strata::array_type<double> wrap{4 | strata::cyclic(3), 4};
  strata::array_type<double> square{4, 4}, c4{4, 4};
  EXPECT_THROW(
      apps::gemm<double>(host, 1.0, wrap.on(x.data()), square.on(y.data()), 0.0, c4.on(z.data())),
      strata::invalid_argument);
  // A leading dimension shorter than a row.
  EXPECT_THROW(apps::gemm<double>(host, 4, 4, 4, 1.0, x.data(), 3, y.data(), 4, 0.0, z.data(), 4),
               strata::invalid_argument);
  // Every one is a strata::error.
  EXPECT_THROW(apps::row_major<double>(0, 4, 4), strata::error);
}

}  // namespace
