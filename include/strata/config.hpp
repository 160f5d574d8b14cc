// Strata's one configuration header: feature flags and the macros every layer uses.
#pragma once

#include <strata/detail/features.hpp>

// Device-callable code carries STRATA_FN: host+device under nvcc (or clang CUDA), nothing
// for a host compiler. Public headers must compile under nvcc (DESIGN.md, "Layers").
#if defined(__CUDACC__)
#define STRATA_FN __host__ __device__
#define STRATA_DEVICE_COMPILER 1
// Recursive device functions stay calls: nvcc otherwise inlines recursion level after
// level (the array type's offset walk made ptxas spend minutes and gigabytes per kernel).
#if defined(__CUDA_ARCH__)  // the device pass only: a host compiler warns on inline+noinline
#define STRATA_RECURSIVE_FN __host__ __device__ __noinline__
#else
#define STRATA_RECURSIVE_FN __host__ __device__
#endif
#else
#define STRATA_FN
#define STRATA_DEVICE_COMPILER 0
#define STRATA_RECURSIVE_FN
#endif

// True while compiling the device side of a CUDA translation unit.
#if defined(__CUDA_ARCH__)
#define STRATA_DEVICE_CODE 1
#else
#define STRATA_DEVICE_CODE 0
#endif

namespace strata {

/// The version of the headers in use; `strata::version()` gives the library's.
inline constexpr char const* header_version = STRATA_VERSION_STRING;

/// The version libstrata was built as (may differ from the headers when mixing installs).
char const* version() noexcept;

}  // namespace strata
