// Atomics and fences with one meaning on every backend (Alpaka §3.2.3: atomics serialize
// the threads' access to global memory): each atomic is a relaxed read-modify-write that
// returns the old value (CUDA's semantics); ordering comes from fences or barriers.
//
// Scopes. Alpaka's atomics take the hierarchy level whose members may race on the
// address (Threads, Blocks, Grids; the paper's levels of §3.2). Strata's `scope` names
// the same, as an optional first argument (`atomic_add(scope::block, p, v)`):
//
//   scope::block   only threads of one block race       (Alpaka Threads; CUDA *_block)
//   scope::device  any thread of the device (default)   (Alpaka Blocks, Grids; CUDA plain)
//   scope::system  the host and every device            (CUDA *_system, e.g. managed memory)
//
// A narrower scope is a promise that lets a GPU use a cheaper atomic. The host backends
// (serial, threads, openmp, sim) run every thread on one coherent memory, so every scope
// is the same std::atomic_ref operation there.
//
// Types. Integers of 4 or 8 bytes (not bool) everywhere; add, sub, min, max, exchange and
// cas also take float and double; and/or/xor take integers only; inc/dec unsigned
// integers only (CUDA's atomicInc/atomicDec are unsigned); exchange, cas and load any
// 4- or 8-byte trivially copyable type (enums, pointers, a pair of floats), load any
// scalar too. The host accepts exactly what the device does, so a kernel that compiles
// for one backend compiles for all (tests/cuda/atomic_types_check.cu compiles every
// operation for every kind of type under nvcc). Integer types CUDA has no overload for
// (long, std::size_t, index_t, wchar_t...) go through the unsigned word of their size.
#pragma once

#include <strata/config.hpp>

#include <concepts>
#include <type_traits>

#if !STRATA_DEVICE_CODE
#include <atomic>
#endif

namespace strata {

/// Who races on an atomic's address, or must observe writes before a fence: threads of
/// one block, of the device, or the whole system (host and devices).
enum class scope { block, device, system };

/// Integers the atomics take: 4 or 8 bytes (what CUDA's atomics take), not bool.
template <class T>
concept atomic_integer =
    std::integral<T> && !std::same_as<T, bool> && (sizeof(T) == 4 || sizeof(T) == 8);

/// What atomic_add/sub/min/max take: atomic integers, float and double.
template <class T>
concept atomic_arithmetic = atomic_integer<T> || std::same_as<T, float> || std::same_as<T, double>;

/// What atomic_exchange/cas take: any 4- or 8-byte trivially copyable type (compared and
/// swapped as its bytes).
template <class T>
concept atomic_word = std::is_trivially_copyable_v<T> &&(sizeof(T) == 4 || sizeof(T) == 8);

/// What atomic_inc/dec take: unsigned atomic integers.
template <class T>
concept atomic_counter = atomic_integer<T> && std::unsigned_integral<T>;

#if STRATA_DEVICE_CODE
namespace detail::cuda_atomic {

// CUDA's atomics come in overloads for int, unsigned, (unsigned) long long, float and
// double; `long` and friends have none. An integer of 4/8 bytes goes through the unsigned
// word of its size (two's complement: add, sub and the bitwise ops give the same bits), a
// signed one through the signed type of its size where order matters (min, max).
template <class T>
using word_t = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
template <class T>
using ordered_t = std::conditional_t<std::is_signed_v<T>,
                                     std::conditional_t<sizeof(T) == 4, int, long long>, word_t<T>>;

template <class W, class T>
__device__ W* as(T* p) {
  return reinterpret_cast<W*>(p);
}
template <class T>
__device__ word_t<T> to_word(T v) {
  if constexpr (std::is_same_v<T, float>)
    return __float_as_uint(v);
  else if constexpr (std::is_same_v<T, double>)
    return static_cast<unsigned long long>(__double_as_longlong(v));
  else if constexpr (std::is_integral_v<T>)
    return static_cast<word_t<T>>(v);
  else {
    word_t<T> w;
    memcpy(&w, &v, sizeof(T));
    return w;
  }
}
template <class T>
__device__ T from_word(word_t<T> w) {
  if constexpr (std::is_same_v<T, float>)
    return __uint_as_float(w);
  else if constexpr (std::is_same_v<T, double>)
    return __longlong_as_double(static_cast<long long>(w));
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(w);
  else {
    T v;
    memcpy(&v, &w, sizeof(T));
    return v;
  }
}

// One function per CUDA atomic, picking its _block / plain / _system form (sm_60+).
template <class W>
__device__ W add(scope s, W* p, W v) {
  if (s == scope::block) return atomicAdd_block(p, v);
  if (s == scope::system) return atomicAdd_system(p, v);
  return atomicAdd(p, v);
}
template <class W>
__device__ W sub(scope s, W* p, W v) {
  if (s == scope::block) return atomicSub_block(p, v);
  if (s == scope::system) return atomicSub_system(p, v);
  return atomicSub(p, v);
}
template <class W>
__device__ W exch(scope s, W* p, W v) {
  if (s == scope::block) return atomicExch_block(p, v);
  if (s == scope::system) return atomicExch_system(p, v);
  return atomicExch(p, v);
}
template <class W>
__device__ W cas(scope s, W* p, W expected, W desired) {
  if (s == scope::block) return atomicCAS_block(p, expected, desired);
  if (s == scope::system) return atomicCAS_system(p, expected, desired);
  return atomicCAS(p, expected, desired);
}
template <class W>
__device__ W min(scope s, W* p, W v) {
  if (s == scope::block) return atomicMin_block(p, v);
  if (s == scope::system) return atomicMin_system(p, v);
  return atomicMin(p, v);
}
template <class W>
__device__ W max(scope s, W* p, W v) {
  if (s == scope::block) return atomicMax_block(p, v);
  if (s == scope::system) return atomicMax_system(p, v);
  return atomicMax(p, v);
}
template <class W>
__device__ W bit_and(scope s, W* p, W v) {
  if (s == scope::block) return atomicAnd_block(p, v);
  if (s == scope::system) return atomicAnd_system(p, v);
  return atomicAnd(p, v);
}
template <class W>
__device__ W bit_or(scope s, W* p, W v) {
  if (s == scope::block) return atomicOr_block(p, v);
  if (s == scope::system) return atomicOr_system(p, v);
  return atomicOr(p, v);
}
template <class W>
__device__ W bit_xor(scope s, W* p, W v) {
  if (s == scope::block) return atomicXor_block(p, v);
  if (s == scope::system) return atomicXor_system(p, v);
  return atomicXor(p, v);
}
__device__ inline unsigned int inc(scope s, unsigned int* p, unsigned int limit) {
  if (s == scope::block) return atomicInc_block(p, limit);
  if (s == scope::system) return atomicInc_system(p, limit);
  return atomicInc(p, limit);
}
__device__ inline unsigned int dec(scope s, unsigned int* p, unsigned int limit) {
  if (s == scope::block) return atomicDec_block(p, limit);
  if (s == scope::system) return atomicDec_system(p, limit);
  return atomicDec(p, limit);
}

/// What CUDA lacks (float min/max, 64-bit inc/dec) as a compare-and-swap loop on the
/// value's word: `next(old)` is the value to store, and the old value is returned.
template <class T, class Next>
__device__ T cas_loop(scope s, T* p, Next next) {
  auto* w = as<word_t<T>>(p);
  word_t<T> seen = *reinterpret_cast<word_t<T> volatile*>(w), old;
  do {
    old = seen;
    seen = cas(s, w, old, to_word(next(from_word<T>(old))));
  } while (seen != old);
  return from_word<T>(old);
}

}  // namespace detail::cuda_atomic
#else
namespace detail {

/// The host's compare-and-swap loop for operations std::atomic_ref lacks.
template <class T, class Next>
T host_cas_loop(T* p, Next next) {
  std::atomic_ref<T> a(*p);
  T old = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(old, next(old), std::memory_order_relaxed)) {
  }
  return old;
}

}  // namespace detail
#endif

/// What atomic_load takes: what the other atomics store (atomic_word) and any scalar.
template <class T>
concept atomic_loadable = atomic_word<T> || std::is_scalar_v<T>;

/// A relaxed atomic read (for values other threads update with the atomics below).
template <atomic_loadable T>
STRATA_FN T atomic_load(T const* p) {
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  // A class (a pair of floats swapped as one word) has no volatile copy constructor, so a
  // word-sized value is read as its word.
  if constexpr (atomic_word<T>)
    return ca::from_word<T>(*reinterpret_cast<ca::word_t<T> const volatile*>(p));
  else
    return *static_cast<T const volatile*>(p);
#else
  return std::atomic_ref<T>(*const_cast<T*>(p)).load(std::memory_order_relaxed);
#endif
}

/// *p += v; returns the old value.
template <atomic_arithmetic T>
STRATA_FN T atomic_add(scope s, T* p, std::type_identity_t<T> v) {
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  if constexpr (std::is_floating_point_v<T>)
    return ca::add(s, p, v);
  else
    return ca::from_word<T>(ca::add(s, ca::as<ca::word_t<T>>(p), ca::to_word(v)));
#else
  (void)s;
  return std::atomic_ref<T>(*p).fetch_add(v, std::memory_order_relaxed);
#endif
}

/// *p -= v; returns the old value.
template <atomic_arithmetic T>
STRATA_FN T atomic_sub(scope s, T* p, std::type_identity_t<T> v) {
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  if constexpr (std::is_floating_point_v<T>)
    return ca::add(s, p, -v);  // CUDA has no floating atomicSub
  else if constexpr (sizeof(T) == 4)
    return ca::from_word<T>(ca::sub(s, ca::as<unsigned int>(p), ca::to_word(v)));
  else  // nor a 64-bit one: add the two's complement
    return ca::from_word<T>(ca::add(s, ca::as<unsigned long long>(p), 0ull - ca::to_word(v)));
#else
  (void)s;
  return std::atomic_ref<T>(*p).fetch_sub(v, std::memory_order_relaxed);
#endif
}

/// *p = v; returns the old value.
template <atomic_word T>
STRATA_FN T atomic_exchange(scope s, T* p, std::type_identity_t<T> v) {
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  return ca::from_word<T>(ca::exch(s, ca::as<ca::word_t<T>>(p), ca::to_word(v)));
#else
  (void)s;
  return std::atomic_ref<T>(*p).exchange(v, std::memory_order_relaxed);
#endif
}

/// Compare-and-swap: stores `desired` if *p == expected (bytewise); returns the old value
/// either way.
template <atomic_word T>
STRATA_FN T atomic_cas(scope s, T* p, std::type_identity_t<T> expected,
                       std::type_identity_t<T> desired) {
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  return ca::from_word<T>(
      ca::cas(s, ca::as<ca::word_t<T>>(p), ca::to_word(expected), ca::to_word(desired)));
#else
  (void)s;
  std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired, std::memory_order_relaxed);
  return expected;
#endif
}

/// *p = min(*p, v); returns the old value.
template <atomic_arithmetic T>
STRATA_FN T atomic_min(scope s, T* p, std::type_identity_t<T> v) {
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  if constexpr (std::is_floating_point_v<T>)  // CUDA has no floating atomicMin
    return ca::cas_loop(s, p, [v](T old) { return v < old ? v : old; });
  else
    return static_cast<T>(
        ca::min(s, ca::as<ca::ordered_t<T>>(p), static_cast<ca::ordered_t<T>>(v)));
#else
  (void)s;
  std::atomic_ref<T> a(*p);
  T old = a.load(std::memory_order_relaxed);
  while (v < old && !a.compare_exchange_weak(old, v, std::memory_order_relaxed)) {
  }
  return old;
#endif
}

/// *p = max(*p, v); returns the old value.
template <atomic_arithmetic T>
STRATA_FN T atomic_max(scope s, T* p, std::type_identity_t<T> v) {
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  if constexpr (std::is_floating_point_v<T>)
    return ca::cas_loop(s, p, [v](T old) { return old < v ? v : old; });
  else
    return static_cast<T>(
        ca::max(s, ca::as<ca::ordered_t<T>>(p), static_cast<ca::ordered_t<T>>(v)));
#else
  (void)s;
  std::atomic_ref<T> a(*p);
  T old = a.load(std::memory_order_relaxed);
  while (old < v && !a.compare_exchange_weak(old, v, std::memory_order_relaxed)) {
  }
  return old;
#endif
}

/// *p &= v; returns the old value.
template <atomic_integer T>
STRATA_FN T atomic_and(scope s, T* p, std::type_identity_t<T> v) {
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  return ca::from_word<T>(ca::bit_and(s, ca::as<ca::word_t<T>>(p), ca::to_word(v)));
#else
  (void)s;
  return std::atomic_ref<T>(*p).fetch_and(v, std::memory_order_relaxed);
#endif
}

/// *p |= v; returns the old value.
template <atomic_integer T>
STRATA_FN T atomic_or(scope s, T* p, std::type_identity_t<T> v) {
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  return ca::from_word<T>(ca::bit_or(s, ca::as<ca::word_t<T>>(p), ca::to_word(v)));
#else
  (void)s;
  return std::atomic_ref<T>(*p).fetch_or(v, std::memory_order_relaxed);
#endif
}

/// *p ^= v; returns the old value.
template <atomic_integer T>
STRATA_FN T atomic_xor(scope s, T* p, std::type_identity_t<T> v) {
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  return ca::from_word<T>(ca::bit_xor(s, ca::as<ca::word_t<T>>(p), ca::to_word(v)));
#else
  (void)s;
  return std::atomic_ref<T>(*p).fetch_xor(v, std::memory_order_relaxed);
#endif
}

/// A wrapping counter (CUDA's atomicInc): *p = (old >= limit) ? 0 : old + 1; returns the
/// old value. Counts 0, 1, ..., limit, 0, ...
template <atomic_counter T>
STRATA_FN T atomic_inc(scope s, T* p, std::type_identity_t<T> limit) {
  auto next = [limit](T old) -> T { return old >= limit ? T{0} : static_cast<T>(old + 1); };
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  if constexpr (sizeof(T) == 4)
    return static_cast<T>(ca::inc(s, ca::as<unsigned int>(p), limit));
  else  // CUDA's atomicInc is 32-bit only
    return ca::cas_loop(s, p, next);
#else
  (void)s;
  return detail::host_cas_loop(p, next);
#endif
}

/// A wrapping down-counter (CUDA's atomicDec): *p = (old == 0 || old > limit) ? limit :
/// old - 1; returns the old value. Counts limit, ..., 1, 0, limit, ...
template <atomic_counter T>
STRATA_FN T atomic_dec(scope s, T* p, std::type_identity_t<T> limit) {
  auto next = [limit](T old) -> T {
    return (old == 0 || old > limit) ? limit : static_cast<T>(old - 1);
  };
#if STRATA_DEVICE_CODE
  namespace ca = detail::cuda_atomic;
  if constexpr (sizeof(T) == 4)
    return static_cast<T>(ca::dec(s, ca::as<unsigned int>(p), limit));
  else
    return ca::cas_loop(s, p, next);
#else
  (void)s;
  return detail::host_cas_loop(p, next);
#endif
}

// Without a scope: the device scope, CUDA's plain atomics (and Alpaka's default, Grids).

template <atomic_arithmetic T>
STRATA_FN T atomic_add(T* p, std::type_identity_t<T> v) {
  return atomic_add(scope::device, p, v);
}
template <atomic_arithmetic T>
STRATA_FN T atomic_sub(T* p, std::type_identity_t<T> v) {
  return atomic_sub(scope::device, p, v);
}
template <atomic_word T>
STRATA_FN T atomic_exchange(T* p, std::type_identity_t<T> v) {
  return atomic_exchange(scope::device, p, v);
}
template <atomic_word T>
STRATA_FN T atomic_cas(T* p, std::type_identity_t<T> expected, std::type_identity_t<T> desired) {
  return atomic_cas(scope::device, p, expected, desired);
}
template <atomic_arithmetic T>
STRATA_FN T atomic_min(T* p, std::type_identity_t<T> v) {
  return atomic_min(scope::device, p, v);
}
template <atomic_arithmetic T>
STRATA_FN T atomic_max(T* p, std::type_identity_t<T> v) {
  return atomic_max(scope::device, p, v);
}
template <atomic_integer T>
STRATA_FN T atomic_and(T* p, std::type_identity_t<T> v) {
  return atomic_and(scope::device, p, v);
}
template <atomic_integer T>
STRATA_FN T atomic_or(T* p, std::type_identity_t<T> v) {
  return atomic_or(scope::device, p, v);
}
template <atomic_integer T>
STRATA_FN T atomic_xor(T* p, std::type_identity_t<T> v) {
  return atomic_xor(scope::device, p, v);
}
template <atomic_counter T>
STRATA_FN T atomic_inc(T* p, std::type_identity_t<T> limit) {
  return atomic_inc(scope::device, p, limit);
}
template <atomic_counter T>
STRATA_FN T atomic_dec(T* p, std::type_identity_t<T> limit) {
  return atomic_dec(scope::device, p, limit);
}

STRATA_FN inline void fence(scope s) {
#if STRATA_DEVICE_CODE
  if (s == scope::block)
    __threadfence_block();
  else if (s == scope::device)
    __threadfence();
  else
    __threadfence_system();
#else
  // Host threads share one coherent memory; a sequentially consistent fence orders
  // writes for every scope, including fibers of one block.
  (void)s;
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace strata
