// Random numbers in kernels whose values depend on neither the backend nor the work
// division. The Alpaka paper asks that one kernel source give the same results on every
// accelerator (§3.2, §4.2); a generator with state per OS thread or per block would tie
// the numbers to how the work was divided. A counter-based generator does not: the value
// is a pure function of (seed, element, stream, draw), so element i gets the same numbers
// whichever thread of whichever backend handles it. (The Alpaka library ships the same
// generator, Philox4x32-10, as alpaka::rand for this reason.)
//
//   struct noise {
//     template <class Self>
//     STRATA_FN void operator()(Self const& self, std::uint64_t seed, index_t n, double* x) const {
//       for (auto i : self.elements(n)) {
//         strata::philox4x32 rng(seed, i);     // element i's own stream
//         x[i] = strata::normal<double>(rng);
//       }
//     }
//   };
//
// Which results are bit-identical where: the raw bits, uniform_real, uniform_real_nonzero
// and uniform_int are integer arithmetic and exact conversions, identical on every
// backend including CUDA. normal() calls log, sqrt and sincos (math.hpp): identical on
// all host backends (serial, threads, openmp, sim), within CUDA's documented ulp errors
// of those on a GPU.
#pragma once

#include <strata/config.hpp>
#include <strata/exec/math.hpp>

#include <concepts>
#include <cstdint>
#include <type_traits>

namespace strata {

/// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2,
/// 3", SC'11, §4.2): a keyed bijection of 128-bit counters, ten rounds of two 32x32->64
/// multiplications whose high halves are xor-ed with the other words and the round key.
/// Passes TestU01's BigCrush; checked against the Random123 known-answer vectors.
///
/// As an engine: key = `seed`; counter = (draw, stream, element low, element high). Each
/// (seed, element, stream) is its own sequence of 2^32 blocks of four 32-bit values (2^34
/// values, after which it repeats). It models std::uniform_random_bit_generator, so host
/// code may also feed it to <random>'s distributions.
class philox4x32 {
 public:
  /// 128 bits: a counter going in, four random words coming out.
  struct block {
    std::uint32_t word[4];
  };
  /// The 64-bit key.
  struct key_type {
    std::uint32_t word[2];
  };
  using result_type = std::uint32_t;
  static constexpr int rounds = 10;

  /// The bijection itself (what the known-answer tests check): counter -> random block.
  STRATA_FN static constexpr block bijection(block counter, key_type key) {
    for (int r = 0; r < rounds; ++r) {
      if (r > 0) {  // the key schedule: a Weyl sequence (golden ratio, sqrt(3) - 1)
        key.word[0] += weyl0;
        key.word[1] += weyl1;
      }
      counter = round(counter, key);
    }
    return counter;
  }

  /// Element `element`'s sequence in sub-stream `stream` (e.g. a time step, or a second
  /// independent field) under `seed`.
  STRATA_FN constexpr philox4x32(std::uint64_t seed, std::uint64_t element,
                                 std::uint32_t stream = 0)
      : key_{{low(seed), high(seed)}}, counter_{{0, stream, low(element), high(element)}} {}

  /// The next 32 random bits.
  STRATA_FN constexpr result_type operator()() {
    if (used_ == 4) refill();
    return out_.word[used_++];
  }

  /// The next 64 random bits (two 32-bit draws, the first in the low half).
  STRATA_FN constexpr std::uint64_t next_u64() {
    std::uint64_t lo = (*this)();
    return lo | (std::uint64_t{(*this)()} << 32);
  }

  /// Skips `n` 32-bit draws, as if operator() were called n times.
  STRATA_FN constexpr void discard(std::uint64_t n) {
    std::uint64_t const left = 4 - used_;
    if (n <= left) {
      used_ += static_cast<std::uint32_t>(n);
      return;
    }
    n -= left;
    counter_.word[0] += static_cast<std::uint32_t>(n / 4);  // wraps with the sequence
    used_ = 4;
    if (n % 4 != 0) {
      refill();
      used_ = static_cast<std::uint32_t>(n % 4);
    }
  }

  STRATA_FN static constexpr result_type min() { return 0; }
  STRATA_FN static constexpr result_type max() { return 0xffffffffu; }

 private:
  // The published constants (Salmon et al. §4.2, Random123's philox.h): the multipliers
  // and the round-key increments.
  static constexpr std::uint32_t multiplier0 = 0xD2511F53u;
  static constexpr std::uint32_t multiplier1 = 0xCD9E8D57u;
  static constexpr std::uint32_t weyl0 = 0x9E3779B9u;
  static constexpr std::uint32_t weyl1 = 0xBB67AE85u;

  STRATA_FN static constexpr std::uint32_t low(std::uint64_t v) {
    return static_cast<std::uint32_t>(v);
  }
  STRATA_FN static constexpr std::uint32_t high(std::uint64_t v) {
    return static_cast<std::uint32_t>(v >> 32);
  }

  // One round: the S-box is a 32x32->64 product; its high half mixes into the other
  // word of the pair with the round key, its low half moves (the P-box permutes).
  STRATA_FN static constexpr block round(block c, key_type k) {
    std::uint64_t const p0 = std::uint64_t{multiplier0} * c.word[0];
    std::uint64_t const p1 = std::uint64_t{multiplier1} * c.word[2];
    return block{
        {high(p1) ^ c.word[1] ^ k.word[0], low(p1), high(p0) ^ c.word[3] ^ k.word[1], low(p0)}};
  }

  STRATA_FN constexpr void refill() {
    out_ = bijection(counter_, key_);
    ++counter_.word[0];
    used_ = 0;
  }

  key_type key_;
  block counter_;
  block out_{};
  std::uint32_t used_ = 4;  // words of out_ handed out; 4: none left
};

/// Generators the helpers below take: all 32 or 64 bits random per call (philox4x32, and
/// on the host std::mt19937 / std::mt19937_64).
template <class G>
concept random_bits_generator = requires(G& g) {
  { g() } -> std::same_as<typename G::result_type>;
}
&&(std::same_as<typename G::result_type, std::uint32_t> ||
   std::same_as<typename G::result_type, std::uint64_t>)&&G::min() == 0 &&
    G::max() == static_cast<typename G::result_type>(~typename G::result_type{0});

namespace detail {

template <random_bits_generator G>
STRATA_FN constexpr std::uint32_t random_u32(G& g) {
  return static_cast<std::uint32_t>(g());  // of a 64-bit generator: its low half
}

template <random_bits_generator G>
STRATA_FN constexpr std::uint64_t random_u64(G& g) {
  if constexpr (sizeof(typename G::result_type) == 8) {
    return g();
  } else {
    std::uint64_t lo = g();
    return lo | (std::uint64_t{g()} << 32);
  }
}

/// The high 64 bits of a 64x64-bit product, from 32-bit halves (portable and constexpr).
STRATA_FN constexpr std::uint64_t mul_high(std::uint64_t a, std::uint64_t b) {
  std::uint64_t const a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
  std::uint64_t const p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  std::uint64_t const mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

}  // namespace detail

/// A uniform real in [0, 1): the top 24 (float) or 53 (double) random bits scaled by 2^-24
/// or 2^-53, so every value is a multiple of that step, equally likely, 1 never occurs.
template <math::real T, random_bits_generator G>
STRATA_FN constexpr T uniform_real(G& g) {
  if constexpr (std::is_same_v<T, float>)
    return static_cast<float>(detail::random_u32(g) >> 8) * 0x1p-24f;
  else
    return static_cast<double>(detail::random_u64(g) >> 11) * 0x1p-53;
}

/// A uniform real in (0, 1]: uniform_real's steps shifted up by one, so 0 never occurs
/// and log() of it is finite (as Box-Muller needs).
template <math::real T, random_bits_generator G>
STRATA_FN constexpr T uniform_real_nonzero(G& g) {
  if constexpr (std::is_same_v<T, float>)
    return static_cast<float>((detail::random_u32(g) >> 8) + 1) * 0x1p-24f;
  else
    return static_cast<double>((detail::random_u64(g) >> 11) + 1) * 0x1p-53;
}

/// Two independent standard normal values.
template <math::real T>
struct normal_pair {
  T first, second;
};

/// Two standard normals from two uniforms by the Box-Muller transform. The radius comes
/// from u in (0, 1], so the tails end at sqrt(-2 ln 2^-24) = 5.8 (float) and
/// sqrt(-2 ln 2^-53) = 8.6 (double) standard deviations.
template <math::real T, random_bits_generator G>
STRATA_FN normal_pair<T> normal2(G& g) {
  T const u = uniform_real_nonzero<T>(g);
  T const v = uniform_real<T>(g);
  T const radius = math::sqrt(T{-2} * math::log(u));
  T const two_pi = static_cast<T>(6.283185307179586);
  T s{}, c{};
  math::sincos(two_pi * v, s, c);
  return {radius * c, radius * s};
}

/// One normal value with the given mean and standard deviation (the first of normal2's
/// pair; the second is dropped, so a kernel needing many should call normal2).
template <math::real T, random_bits_generator G>
STRATA_FN T normal(G& g, std::type_identity_t<T> mean = T{0},
                   std::type_identity_t<T> stddev = T{1}) {
  return mean + stddev * normal2<T>(g).first;
}

/// A uniform integer in [lo, hi] (both included; requires lo <= hi), without modulo bias:
/// Lemire's multiply-and-shift ("Fast random integer generation in an interval", 2019)
/// maps a random word w to (w * range) >> bits and rejects the few w whose low product
/// half falls under 2^bits mod range, so each value has exactly the same number of words
/// mapping to it. A rejection costs one more draw; it happens with probability
/// range / 2^bits at most.
template <class T, random_bits_generator G>
requires std::integral<T> &&(!std::same_as<T, bool>)STRATA_FN constexpr T
    uniform_int(G& g, T lo, T hi) {
  using U = std::make_unsigned_t<T>;
  U const span = static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));  // range - 1
  if constexpr (sizeof(T) <= 4) {
    if (span == static_cast<U>(~U{0}) && sizeof(T) == 4)
      return static_cast<T>(static_cast<U>(detail::random_u32(g)));
    std::uint32_t const range = static_cast<std::uint32_t>(span) + 1;
    std::uint64_t m = std::uint64_t{detail::random_u32(g)} * range;
    if (static_cast<std::uint32_t>(m) < range) {
      std::uint32_t const reject_below = (0u - range) % range;  // 2^32 mod range
      while (static_cast<std::uint32_t>(m) < reject_below)
        m = std::uint64_t{detail::random_u32(g)} * range;
    }
    return static_cast<T>(static_cast<U>(static_cast<U>(lo) + static_cast<U>(m >> 32)));
  } else {
    if (span == static_cast<U>(~U{0})) return static_cast<T>(detail::random_u64(g));
    std::uint64_t const range = static_cast<std::uint64_t>(span) + 1;
    std::uint64_t w = detail::random_u64(g);
    if (w * range < range) {
      std::uint64_t const reject_below = (0ull - range) % range;  // 2^64 mod range
      while (w * range < reject_below) w = detail::random_u64(g);
    }
    return static_cast<T>(static_cast<U>(static_cast<U>(lo) + detail::mul_high(w, range)));
  }
}

}  // namespace strata
