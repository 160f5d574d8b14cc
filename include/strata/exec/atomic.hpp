// Atomics and fences with one meaning on every backend: each atomic is a relaxed
// read-modify-write that returns the old value (CUDA's atomicAdd semantics); ordering
// comes from fences or barriers.
#pragma once

#include <strata/config.hpp>

#if !STRATA_DEVICE_CODE
#include <atomic>
#endif

namespace strata {

/// Who must observe writes before the fence: the block, the device, or the whole system
/// (host and devices).
enum class scope { block, device, system };

/// A relaxed atomic read (for values other threads update with the atomics below).
template <class T>
STRATA_FN T atomic_load(T const* p) {
#if STRATA_DEVICE_CODE
  return *static_cast<T const volatile*>(p);
#else
  return std::atomic_ref<T>(*const_cast<T*>(p)).load(std::memory_order_relaxed);
#endif
}

template <class T>
STRATA_FN T atomic_add(T* p, T v) {
#if STRATA_DEVICE_CODE
  return atomicAdd(p, v);
#else
  return std::atomic_ref<T>(*p).fetch_add(v, std::memory_order_relaxed);
#endif
}

template <class T>
STRATA_FN T atomic_exchange(T* p, T v) {
#if STRATA_DEVICE_CODE
  return atomicExch(p, v);
#else
  return std::atomic_ref<T>(*p).exchange(v, std::memory_order_relaxed);
#endif
}

/// Compare-and-swap: stores `desired` if *p == expected; returns the old value either way.
template <class T>
STRATA_FN T atomic_cas(T* p, T expected, T desired) {
#if STRATA_DEVICE_CODE
  return atomicCAS(p, expected, desired);
#else
  std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired, std::memory_order_relaxed);
  return expected;
#endif
}

template <class T>
STRATA_FN T atomic_min(T* p, T v) {
#if STRATA_DEVICE_CODE
  return atomicMin(p, v);
#else
  std::atomic_ref<T> a(*p);
  T old = a.load(std::memory_order_relaxed);
  while (v < old && !a.compare_exchange_weak(old, v, std::memory_order_relaxed)) {
  }
  return old;
#endif
}

template <class T>
STRATA_FN T atomic_max(T* p, T v) {
#if STRATA_DEVICE_CODE
  return atomicMax(p, v);
#else
  std::atomic_ref<T> a(*p);
  T old = a.load(std::memory_order_relaxed);
  while (old < v && !a.compare_exchange_weak(old, v, std::memory_order_relaxed)) {
  }
  return old;
#endif
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
