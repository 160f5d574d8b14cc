// Math usable in kernels on every backend (Alpaka §3.4.2: what a kernel calls must be
// callable on the accelerator; the Alpaka library has alpaka::math for it). Host backends
// call <cmath>; CUDA device code calls CUDA's math functions of the argument's precision
// (sqrtf for float, sqrt for double), never a silent promotion to double.
//
// Results: on the host backends these are the std:: functions, so every CPU backend and
// sim gives the same bits. CUDA's functions have their own documented ulp errors (sqrt,
// fma, floor, ceil, abs, min, max are exact on both), so transcendental results may
// differ from the host's in the last bits.
#pragma once

#include <strata/config.hpp>

#include <cmath>
#include <concepts>
#include <type_traits>

namespace strata::math {

/// The floating-point types these functions take.
template <class T>
concept real = std::same_as<T, float> || std::same_as<T, double>;

template <real T>
STRATA_FN T sqrt(T x) {
#if STRATA_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>)
    return ::sqrtf(x);
  else
    return ::sqrt(x);
#else
  return std::sqrt(x);
#endif
}

/// 1 / sqrt(x). CUDA has an instruction-backed rsqrt; the host divides.
template <real T>
STRATA_FN T rsqrt(T x) {
#if STRATA_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>)
    return ::rsqrtf(x);
  else
    return ::rsqrt(x);
#else
  return T{1} / std::sqrt(x);
#endif
}

template <real T>
STRATA_FN T exp(T x) {
#if STRATA_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>)
    return ::expf(x);
  else
    return ::exp(x);
#else
  return std::exp(x);
#endif
}

/// The natural logarithm.
template <real T>
STRATA_FN T log(T x) {
#if STRATA_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>)
    return ::logf(x);
  else
    return ::log(x);
#else
  return std::log(x);
#endif
}

template <real T>
STRATA_FN T sin(T x) {
#if STRATA_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>)
    return ::sinf(x);
  else
    return ::sin(x);
#else
  return std::sin(x);
#endif
}

template <real T>
STRATA_FN T cos(T x) {
#if STRATA_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>)
    return ::cosf(x);
  else
    return ::cos(x);
#else
  return std::cos(x);
#endif
}

/// s = sin(x), c = cos(x) in one call (one range reduction on CUDA).
template <real T>
STRATA_FN void sincos(T x, T& s, T& c) {
#if STRATA_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>)
    ::sincosf(x, &s, &c);
  else
    ::sincos(x, &s, &c);
#else
  s = std::sin(x);
  c = std::cos(x);
#endif
}

template <real T>
STRATA_FN T pow(T x, std::type_identity_t<T> y) {
#if STRATA_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>)
    return ::powf(x, y);
  else
    return ::pow(x, y);
#else
  return std::pow(x, y);
#endif
}

/// x * y + z rounded once.
template <real T>
STRATA_FN T fma(T x, std::type_identity_t<T> y, std::type_identity_t<T> z) {
#if STRATA_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>)
    return ::fmaf(x, y, z);
  else
    return ::fma(x, y, z);
#else
  return std::fma(x, y, z);
#endif
}

template <real T>
STRATA_FN T floor(T x) {
#if STRATA_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>)
    return ::floorf(x);
  else
    return ::floor(x);
#else
  return std::floor(x);
#endif
}

template <real T>
STRATA_FN T ceil(T x) {
#if STRATA_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>)
    return ::ceilf(x);
  else
    return ::ceil(x);
#else
  return std::ceil(x);
#endif
}

/// |x| of a real or a signed integer (the most negative integer has no absolute value,
/// as with std::abs).
template <class T>
requires real<T> || std::signed_integral<T> STRATA_FN T abs(T x) {
  if constexpr (std::is_integral_v<T>) {
    return x < 0 ? static_cast<T>(-x) : x;
  } else {
#if STRATA_DEVICE_CODE
    if constexpr (std::is_same_v<T, float>)
      return ::fabsf(x);
    else
      return ::fabs(x);
#else
    return std::fabs(x);
#endif
  }
}

/// The smaller of two values; for reals a NaN loses to a number (C's fmin, on both host
/// and CUDA), so min(NaN, 1) == 1.
template <class T>
requires real<T> || std::integral<T> STRATA_FN T min(T a, std::type_identity_t<T> b) {
  if constexpr (std::is_integral_v<T>) {
    return b < a ? b : a;
  } else {
#if STRATA_DEVICE_CODE
    if constexpr (std::is_same_v<T, float>)
      return ::fminf(a, b);
    else
      return ::fmin(a, b);
#else
    return std::fmin(a, b);
#endif
  }
}

/// The larger of two values; for reals a NaN loses to a number (C's fmax).
template <class T>
requires real<T> || std::integral<T> STRATA_FN T max(T a, std::type_identity_t<T> b) {
  if constexpr (std::is_integral_v<T>) {
    return a < b ? b : a;
  } else {
#if STRATA_DEVICE_CODE
    if constexpr (std::is_same_v<T, float>)
      return ::fmaxf(a, b);
    else
      return ::fmax(a, b);
#else
    return std::fmax(a, b);
#endif
  }
}

}  // namespace strata::math
