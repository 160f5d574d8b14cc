// CUDA allocations. Compiled (and linked against cudart) in CUDA builds; run only where a
// device exists — on machines without one, pinned memory falls back to mlock.
#include <strata/error.hpp>

#include "memory/backends.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace strata::detail {

void* cuda_pinned_alloc(std::size_t bytes) noexcept {
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
    (void)cudaGetLastError();  // no device or no driver: not an error for the caller
    return nullptr;
  }
  return p;
}

void cuda_pinned_free(void* p) noexcept {
  cudaFreeHost(p);
}

void* cuda_device_alloc(place const& memory, std::size_t bytes) {
  void* p = nullptr;
  if (auto e = cudaSetDevice(memory.os_index()); e != cudaSuccess)
    throw backend_error(
        fmt::format("cudaSetDevice({}): {}", memory.os_index(), cudaGetErrorString(e)));
  if (auto e = cudaMalloc(&p, bytes); e != cudaSuccess) {
    if (e == cudaErrorMemoryAllocation)
      throw out_of_memory(fmt::format("allocate: cudaMalloc of {} bytes on '{}' failed: {}", bytes,
                                      memory.path(), cudaGetErrorString(e)));
    throw backend_error(fmt::format("cudaMalloc: {}", cudaGetErrorString(e)));
  }
  return p;
}

void cuda_device_free(void* p) noexcept {
  cudaFree(p);
}

}  // namespace strata::detail
