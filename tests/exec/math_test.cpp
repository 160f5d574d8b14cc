// strata::math (include/strata/exec/math.hpp): known values in each precision, the
// precision kept (no silent promotion), and in kernels on every CPU backend and a sim
// device the same bits as <cmath> on the host.
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "exec/backends.hpp"

namespace strata {
namespace {

template <class T>
class Math : public testing::Test {};
using reals = testing::Types<float, double>;
TYPED_TEST_SUITE(Math, reals);

TYPED_TEST(Math, KnownValuesInTheArgumentsPrecision) {
  using T = TypeParam;
  static_assert(std::is_same_v<decltype(math::sqrt(T{})), T>);
  static_assert(std::is_same_v<decltype(math::pow(T{}, 2)), T>);
  static_assert(std::is_same_v<decltype(math::fma(T{}, 2, 3)), T>);
  EXPECT_EQ(math::sqrt(T(6.25)), T(2.5));
  EXPECT_EQ(math::rsqrt(T(4)), T(0.5));
  EXPECT_EQ(math::exp(T(0)), T(1));
  EXPECT_EQ(math::log(T(1)), T(0));
  EXPECT_NEAR(math::log(math::exp(T(1.5))), T(1.5), 4 * std::numeric_limits<T>::epsilon());
  EXPECT_EQ(math::sin(T(0)), T(0));
  EXPECT_EQ(math::cos(T(0)), T(1));
  T s{}, c{};
  math::sincos(T(0.7), s, c);
  EXPECT_EQ(s, math::sin(T(0.7)));
  EXPECT_EQ(c, math::cos(T(0.7)));
  EXPECT_EQ(math::pow(T(2), 10), T(1024));
  EXPECT_EQ(math::fma(T(2), 3, 4), T(10));
  // One rounding: fma(a, a, -(a*a)) is the rounding error of a*a, which is not zero here.
  T const a = T(1) + std::numeric_limits<T>::epsilon();
  EXPECT_NE(math::fma(a, a, -(a * a)), T(0));
  EXPECT_EQ(math::abs(T(-2.5)), T(2.5));
  EXPECT_EQ(math::floor(T(-1.5)), T(-2));
  EXPECT_EQ(math::ceil(T(-1.5)), T(-1));
  EXPECT_EQ(math::min(T(-1), 2), T(-1));
  EXPECT_EQ(math::max(T(-1), 2), T(2));
  T const nan = std::numeric_limits<T>::quiet_NaN();
  EXPECT_EQ(math::min(nan, 1), T(1)) << "a NaN loses to a number";
  EXPECT_EQ(math::max(T(1), nan), T(1));
}

TEST(MathIntegers, AbsMinMax) {
  EXPECT_EQ(math::abs(-7), 7);
  EXPECT_EQ(math::abs(std::int64_t{-1} << 40), std::int64_t{1} << 40);
  EXPECT_EQ(math::min(3u, 9u), 3u);
  EXPECT_EQ(math::max(std::int64_t{-3}, 2), 2);
  static_assert(std::is_same_v<decltype(math::abs(short{-1})), short>);
}

// Every function over a range of inputs, in a kernel.
struct math_k {
  template <class Self>
  void operator()(Self const& self, index_t n, float* f, double* d) const {
    for (auto i : self.elements(n)) {
      float const x = 0.01f + 0.37f * static_cast<float>(i);
      double const y = 0.01 + 0.37 * static_cast<double>(i);
      float* fo = f + 14 * i;
      double* dout = d + 14 * i;
      fo[0] = math::sqrt(x), dout[0] = math::sqrt(y);
      fo[1] = math::rsqrt(x), dout[1] = math::rsqrt(y);
      fo[2] = math::exp(x / 40), dout[2] = math::exp(y / 40);
      fo[3] = math::log(x), dout[3] = math::log(y);
      fo[4] = math::sin(x), dout[4] = math::sin(y);
      fo[5] = math::cos(x), dout[5] = math::cos(y);
      math::sincos(x, fo[6], fo[7]), math::sincos(y, dout[6], dout[7]);
      fo[8] = math::pow(x, 1.3f), dout[8] = math::pow(y, 1.3);
      fo[9] = math::fma(x, x, -1.0f), dout[9] = math::fma(y, y, -1.0);
      fo[10] = math::abs(-x), dout[10] = math::abs(-y);
      fo[11] = math::floor(x) + math::ceil(x), dout[11] = math::floor(y) + math::ceil(y);
      fo[12] = math::min(x, 5.0f), dout[12] = math::min(y, 5.0);
      fo[13] = math::max(x, 5.0f), dout[13] = math::max(y, 5.0);
    }
  }
};

// The same with <cmath>, on this thread (float overloads for float).
template <class T>
void reference(index_t i, T* out) {
  T const x = T(0.01) + T(0.37) * static_cast<T>(i);
  out[0] = std::sqrt(x);
  out[1] = T(1) / std::sqrt(x);
  out[2] = std::exp(x / 40);
  out[3] = std::log(x);
  out[4] = std::sin(x);
  out[5] = std::cos(x);
  out[6] = std::sin(x);
  out[7] = std::cos(x);
  out[8] = std::pow(x, T(1.3));
  out[9] = std::fma(x, x, T(-1));
  out[10] = std::fabs(-x);
  out[11] = std::floor(x) + std::ceil(x);
  out[12] = std::fmin(x, T(5));
  out[13] = std::fmax(x, T(5));
}

template <class Space>
void check_math(place const& memory, target const& where, std::string const& what) {
  index_t const n = 300;
  auto count = static_cast<std::size_t>(14 * n);
  auto f = allocate<float, Space>(memory, count);
  auto d = allocate<double, Space>(memory, count);
  launch(where, divide_work(where, n), math_k{}, n, f, d).wait();
  std::vector<float> hf(count);
  std::vector<double> hd(count);
  copy(ptr<float>(hf.data(), 0), f, count).wait();
  copy(ptr<double>(hd.data(), 0), d, count).wait();
  deallocate(f);
  deallocate(d);
  float rf[14];
  double rd[14];
  for (index_t i = 0; i < n; ++i) {
    reference(i, rf);
    reference(i, rd);
    for (int k = 0; k < 14; ++k) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(hf[14 * i + k]), std::bit_cast<std::uint32_t>(rf[k]))
          << what << ": float function " << k << ", input " << i;
      ASSERT_EQ(std::bit_cast<std::uint64_t>(hd[14 * i + k]), std::bit_cast<std::uint64_t>(rd[k]))
          << what << ": double function " << k << ", input " << i;
    }
  }
}

TEST(MathKernels, SameBitsAsCmathOnEveryCpuBackendAndSim) {
  runtime rt{runtime_options{.sim_devices = "1"}};
  place machine = rt.machine();
  for (auto b : test::cpu_backends())
    check_math<host_space>(machine, on(machine, b), std::string(to_string(b)));
  place sim0 = machine.slice(isa::sim).descendants(place_type::device).front();
  check_math<sim_space>(sim0, sim0, "sim");
}

}  // namespace
}  // namespace strata
