// Philox4x32-10 (include/strata/exec/random.hpp): the published known answers, the
// engine's counter layout, the conversions' documented ends, unbiased integers, a
// statistical sanity check, and the same numbers from a kernel on every CPU backend, a
// sim device and any work division.
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "exec/backends.hpp"

namespace strata {
namespace {

using block = philox4x32::block;

void expect_block(block got, block want) {
  for (int w = 0; w < 4; ++w)
    EXPECT_EQ(got.word[w], want.word[w])
        << std::hex << "word " << w << ": " << got.word[w] << " instead of " << want.word[w];
}

// Random123's kat_vectors for philox4x32 with 10 rounds (as reproduced in D. E. Shaw
// Research's fs123, core123/ut/ut_philox.cpp): counter, key -> output.
TEST(Random, Philox4x32MatchesTheRandom123KnownAnswers) {
  expect_block(philox4x32::bijection({{0, 0, 0, 0}}, {{0, 0}}),
               {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}});
  expect_block(philox4x32::bijection({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
                                     {{0xffffffff, 0xffffffff}}),
               {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}});
  expect_block(philox4x32::bijection({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
                                     {{0xa4093822, 0x299f31d0}}),
               {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}});
}

// Also at compile time: the bijection is constexpr.
static_assert(philox4x32::bijection({{0, 0, 0, 0}}, {{0, 0}}).word[3] == 0x9b00dbd8u);

TEST(Random, EngineDrawsTheBlocksOfItsCounter) {
  std::uint64_t const seed = 0x0123456789abcdefull, element = 0xfedcba9876543210ull;
  std::uint32_t const stream = 77;
  philox4x32 g(seed, element, stream);
  philox4x32::key_type const key{{0x89abcdefu, 0x01234567u}};
  for (std::uint32_t draw = 0; draw < 3; ++draw) {
    auto want = philox4x32::bijection({{draw, stream, 0x76543210u, 0xfedcba98u}}, key);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(g(), want.word[w]) << "draw " << draw << " word " << w;
  }
  // next_u64: two draws, the first in the low half.
  philox4x32 a(1, 2), b(1, 2);
  std::uint64_t lo = b(), hi = b();
  EXPECT_EQ(a.next_u64(), lo | (hi << 32));
  // Neighbouring elements, streams and seeds give different numbers.
  EXPECT_NE(philox4x32(1, 2)(), philox4x32(1, 3)());
  EXPECT_NE(philox4x32(1, 2, 0)(), philox4x32(1, 2, 1)());
  EXPECT_NE(philox4x32(1, 2)(), philox4x32(2, 2)());
}

TEST(Random, DiscardSkipsDraws) {
  for (std::uint64_t n : {0, 1, 3, 4, 5, 8, 13, 1000}) {
    for (int already = 0; already < 4; ++already) {
      philox4x32 skipped(9, 4), stepped(9, 4);
      for (int k = 0; k < already; ++k) skipped(), stepped();
      skipped.discard(n);
      for (std::uint64_t k = 0; k < n; ++k) stepped();
      EXPECT_EQ(skipped(), stepped()) << "discard(" << n << ") after " << already << " draws";
    }
  }
}

// A generator that replays given words, to drive the conversions to their ends.
template <class Word>
struct replay {
  using result_type = Word;
  std::vector<Word> words;
  std::size_t next = 0;
  static constexpr Word min() { return 0; }
  static constexpr Word max() { return static_cast<Word>(~Word{0}); }
  Word operator()() { return words.at(next++); }
};
using replay32 = replay<std::uint32_t>;

TEST(Random, RealsStayInTheirDocumentedIntervals) {
  replay32 zeros{{0, 0, 0, 0}}, ones{{~0u, ~0u, ~0u, ~0u}};
  EXPECT_EQ(uniform_real<float>(zeros), 0.0f);
  EXPECT_EQ(uniform_real<float>(ones), 1.0f - 0x1p-24f);
  EXPECT_EQ(uniform_real<double>(zeros), 0.0);
  EXPECT_EQ(uniform_real<double>(ones), 1.0 - 0x1p-53);
  zeros.next = ones.next = 0;
  EXPECT_EQ(uniform_real_nonzero<float>(zeros), 0x1p-24f);
  EXPECT_EQ(uniform_real_nonzero<float>(ones), 1.0f);
  EXPECT_EQ(uniform_real_nonzero<double>(zeros), 0x1p-53);
  EXPECT_EQ(uniform_real_nonzero<double>(ones), 1.0);
  // Box-Muller's largest radius: u = 2^-24 (float), an angle of 0.
  replay32 extreme{{0, 0}};
  EXPECT_NEAR(normal<float>(extreme), std::sqrt(-2.0 * std::log(0x1p-24)), 1e-5);
}

TEST(Random, UniformIntRejectsTheWordsThatWouldBias) {
  // Range 3: 2^32 mod 3 = 1 word is rejected, w = 0 (w * 3 has a low half of 0 < 1).
  // Taking it would make 0 one word likelier than 1 and 2. The next word, 2^31, maps to 1.
  replay32 g{{0, 0x80000000u}};
  EXPECT_EQ(uniform_int(g, 0, 2), 1);
  EXPECT_EQ(g.next, 2u);
  replay32 h{{0x80000000u}};  // an accepted word costs one draw
  EXPECT_EQ(uniform_int(h, 10, 12), 11);
  EXPECT_EQ(h.next, 1u);
  // The same in 64 bits (two 32-bit draws a word): w = 0 rejected, then w = 2^63 -> 1.
  replay32 g64{{0, 0, 0, 0x80000000u}};
  EXPECT_EQ(uniform_int(g64, std::int64_t{-1}, std::int64_t{1}), 0);
  EXPECT_EQ(g64.next, 4u);
  // Whole ranges take the raw bits; a one-value range is that value.
  replay32 raw{{0xfffffffeu, 0x12345678u, 0x9abcdef0u, 7}};
  EXPECT_EQ(uniform_int(raw, INT32_MIN, INT32_MAX), -2);
  EXPECT_EQ(uniform_int(raw, std::uint64_t{0}, UINT64_MAX), 0x9abcdef012345678ull);
  EXPECT_EQ(uniform_int(raw, 5, 5), 5);
}

TEST(Random, UniformIntCoversSmallAndSignedTypesInclusively) {
  philox4x32 g(3, 0);
  bool seen_lo = false, seen_hi = false;
  for (int k = 0; k < 2000; ++k) {
    auto v = uniform_int(g, std::int16_t{-3}, std::int16_t{2});
    static_assert(std::is_same_v<decltype(v), std::int16_t>);
    ASSERT_TRUE(v >= -3 && v <= 2) << v;
    seen_lo |= v == -3;
    seen_hi |= v == 2;
    auto w = uniform_int(g, std::int64_t{-5'000'000'000}, std::int64_t{-4'999'999'990});
    ASSERT_TRUE(w >= -5'000'000'000 && w <= -4'999'999'990) << w;
    auto c = uniform_int(g, std::uint8_t{250}, std::uint8_t{255});
    ASSERT_TRUE(c >= 250) << int(c);
  }
  EXPECT_TRUE(seen_lo && seen_hi) << "both ends are included";
}

// Deterministic (the generator is): mean and variance of 10^6 samples against the
// distributions', with bounds of 6 or more standard errors of the estimate.
TEST(Random, MeanAndVarianceOfAMillionSamples) {
  int const n = 1'000'000;
  double sum = 0, sum2 = 0, fsum = 0, nsum = 0, nsum2 = 0, fnsum2 = 0;
  long within_one = 0;
  std::vector<long> bins(10, 0);
  for (int i = 0; i < n; ++i) {
    philox4x32 g(2024, static_cast<std::uint64_t>(i));
    double u = uniform_real<double>(g);
    ASSERT_TRUE(u >= 0 && u < 1) << u;
    sum += u;
    sum2 += u * u;
    float uf = uniform_real_nonzero<float>(g);
    ASSERT_TRUE(uf > 0 && uf <= 1) << uf;
    fsum += uf;
    auto z = normal2<double>(g);
    nsum += z.first + z.second;
    nsum2 += z.first * z.first + z.second * z.second;
    within_one += (std::abs(z.first) < 1) + (std::abs(z.second) < 1);
    float zf = normal<float>(g, 3.0f, 2.0f);
    fnsum2 += (zf - 3.0) * (zf - 3.0);
    ++bins[uniform_int(g, 0, 9)];
  }
  double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.002);
  EXPECT_NEAR(var, 1.0 / 12, 0.001);
  EXPECT_NEAR(fsum / n, 0.5, 0.002);
  EXPECT_NEAR(nsum / (2 * n), 0.0, 0.005);
  EXPECT_NEAR(nsum2 / (2 * n), 1.0, 0.01);
  EXPECT_NEAR(double(within_one) / (2 * n), 0.682689, 0.003);
  EXPECT_NEAR(fnsum2 / n, 4.0, 0.06);
  double chi2 = 0;
  for (long b : bins) {
    double const diff = static_cast<double>(b) - n / 10.0;
    chi2 += diff * diff / (n / 10.0);
  }
  EXPECT_LT(chi2, 40.0) << "10 bins, 9 degrees of freedom: 40 has p < 1e-5";
}

// What each element of the fill kernel draws: element i's own sequence, so the values
// cannot depend on which thread of which backend handles i.
struct fill_k {
  template <class Self>
  void operator()(Self const& self, std::uint64_t seed, index_t n, double* u, float* z,
                  int* k) const {
    for (auto i : self.elements(n)) {
      philox4x32 g(seed, static_cast<std::uint64_t>(i), 5);
      u[i] = uniform_real<double>(g);
      z[i] = normal<float>(g);
      k[i] = uniform_int(g, -50, 50);
    }
  }
};

struct filled {
  std::vector<double> u;
  std::vector<float> z;
  std::vector<int> k;
};

template <class Space, class Shape>
filled fill_on(place const& memory, target const& where, Shape const& s, index_t n) {
  auto count = static_cast<std::size_t>(n);
  auto u = allocate<double, Space>(memory, count);
  auto z = allocate<float, Space>(memory, count);
  auto k = allocate<int, Space>(memory, count);
  launch(where, s, fill_k{}, std::uint64_t{42}, n, u, z, k).wait();
  filled out{std::vector<double>(count), std::vector<float>(count), std::vector<int>(count)};
  copy(ptr<double>(out.u.data(), 0), u, count).wait();
  copy(ptr<float>(out.z.data(), 0), z, count).wait();
  copy(ptr<int>(out.k.data(), 0), k, count).wait();
  deallocate(u);
  deallocate(z);
  deallocate(k);
  return out;
}

void expect_identical(filled const& got, filled const& want, std::string const& what) {
  ASSERT_EQ(got.u.size(), want.u.size());
  for (std::size_t i = 0; i < want.u.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint64_t>(got.u[i]), std::bit_cast<std::uint64_t>(want.u[i]))
        << what << ", element " << i;
    ASSERT_EQ(std::bit_cast<std::uint32_t>(got.z[i]), std::bit_cast<std::uint32_t>(want.z[i]))
        << what << ", element " << i;
    ASSERT_EQ(got.k[i], want.k[i]) << what << ", element " << i;
  }
}

TEST(Random, KernelFillIsBitIdenticalOnEveryBackendAndDivision) {
  runtime rt{runtime_options{.sim_devices = "1:units=3"}};
  place machine = rt.machine();
  place sim0 = machine.slice(isa::sim).descendants(place_type::device).front();
  index_t const n = 10007;  // a prime: no division fits it exactly
  auto count = static_cast<std::size_t>(n);
  // The reference: a plain loop on this thread.
  filled want{std::vector<double>(count), std::vector<float>(count), std::vector<int>(count)};
  for (index_t i = 0; i < n; ++i) {
    philox4x32 g(42, static_cast<std::uint64_t>(i), 5);
    want.u[i] = uniform_real<double>(g);
    want.z[i] = normal<float>(g);
    want.k[i] = uniform_int(g, -50, 50);
  }
  std::vector<std::pair<std::string, shape<1>>> divisions{
      {"one block", grid(1).elements(n)},
      {"a block per element", grid(n)},
      {"37 blocks of 7 threads", grid(37).block(7).elements((n + 258) / 259)},
  };
  auto parallel_blocks = grid(20).block(parallel, 16).elements(32);
  for (auto b : test::cpu_backends()) {
    std::string name(to_string(b));
    auto where = on(machine, b);
    expect_identical(fill_on<host_space>(machine, where, divide_work(where, n), n), want,
                     name + ", divide_work");
    for (auto const& [what, s] : divisions)
      expect_identical(fill_on<host_space>(machine, where, s, n), want, name + ", " + what);
    expect_identical(fill_on<host_space>(machine, where, parallel_blocks, n), want,
                     name + ", parallel blocks of 16");
  }
  expect_identical(fill_on<sim_space>(sim0, sim0, divide_work(sim0, n), n), want,
                   "sim, divide_work");
  for (auto const& [what, s] : divisions)
    expect_identical(fill_on<sim_space>(sim0, sim0, s, n), want, "sim, " + what);
  expect_identical(fill_on<sim_space>(sim0, sim0, parallel_blocks, n), want,
                   "sim, parallel blocks of 16");
}

}  // namespace
}  // namespace strata
