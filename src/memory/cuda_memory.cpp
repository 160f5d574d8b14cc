// CUDA allocations. Compiled (and linked against cudart) in CUDA builds; run only where a
// device exists — on machines without one, pinned memory falls back to mlock.
#include <strata/error.hpp>
#include <strata/exec/cuda/backend.hpp>

#include "memory/backends.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdint>
#include <mutex>

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

namespace {

// Stream-ordered pools (cudaMallocAsync): freed memory stays in the device's pool for the
// next allocation instead of going back to the driver, which makes allocation in a loop
// cheap. Devices without pool support get cudaMalloc.
bool pools_supported(int device) {
  int pools = 0;
  if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess)
    return false;
  if (pools) {
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
      std::uint64_t keep = UINT64_MAX;  // keep freed memory in the pool
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
  }
  return pools != 0;
}

}  // namespace

void* cuda_device_alloc(place const& memory, std::size_t bytes) {
  void* p = nullptr;
  int const device = memory.os_index();
  cuda::device_guard const keep_device;  // the caller's own CUDA calls stay on its device
  if (auto e = cudaSetDevice(device); e != cudaSuccess)
    throw backend_error(fmt::format("cudaSetDevice({}): {}", device, cudaGetErrorString(e)));
  static std::once_flag once[64];
  static bool pools[64] = {};
  if (device >= 0 && device < 64)
    std::call_once(once[device], [device] { pools[device] = pools_supported(device); });
  bool const pooled = device >= 0 && device < 64 && pools[device];
  cudaError_t e = cudaSuccess;
  if (pooled) {
    // Allocated in stream order on the legacy stream and synchronized, so the memory is
    // usable from every stream once allocate returns.
    e = cudaMallocAsync(&p, bytes, cudaStreamLegacy);
    if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamLegacy);
  } else {
    e = cudaMalloc(&p, bytes);
  }
  if (e != cudaSuccess) {
    if (e == cudaErrorMemoryAllocation)
      throw out_of_memory(fmt::format("allocate: {} of {} bytes on '{}' failed: {}",
                                      pooled ? "cudaMallocAsync" : "cudaMalloc", bytes,
                                      memory.path(), cudaGetErrorString(e)));
    throw backend_error(
        fmt::format("{}: {}", pooled ? "cudaMallocAsync" : "cudaMalloc", cudaGetErrorString(e)));
  }
  return p;
}

void cuda_device_free(void* p) noexcept {
  // Like cudaFree, freeing waits for the device's queued work (which may still use the
  // memory), then hands the memory back to its pool (cudaFree would return it to the
  // driver). cudaFreeAsync accepts either kind of allocation.
  cuda::device_guard const keep_device;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) == cudaSuccess && attr.device >= 0)
    cudaSetDevice(attr.device);
  cudaDeviceSynchronize();
  if (cudaFreeAsync(p, cudaStreamLegacy) != cudaSuccess) {
    (void)cudaGetLastError();
    cudaFree(p);
  }
  cudaStreamSynchronize(cudaStreamLegacy);
  // A free reports nothing, so it must not leave a (non-sticky) error behind for the
  // thread's next launch, whose cudaGetLastError would blame it.
  (void)cudaGetLastError();
}

void* cuda_managed_alloc(place const& memory, std::size_t bytes) {
  void* p = nullptr;
  int const device = memory.os_index();
  cuda::device_guard const keep_device;
  if (auto e = cudaSetDevice(device); e != cudaSuccess)
    throw backend_error(fmt::format("cudaSetDevice({}): {}", device, cudaGetErrorString(e)));
  if (auto e = cudaMallocManaged(&p, bytes, cudaMemAttachGlobal); e != cudaSuccess) {
    if (e == cudaErrorMemoryAllocation)
      throw out_of_memory(fmt::format("allocate: cudaMallocManaged of {} bytes on '{}' failed: {}",
                                      bytes, memory.path(), cudaGetErrorString(e)));
    throw backend_error(fmt::format("cudaMallocManaged: {}", cudaGetErrorString(e)));
  }
  // Pages live on this GPU until touched elsewhere.
  cudaMemLocation where{};
  where.type = cudaMemLocationTypeDevice;
  where.id = device;
  (void)cudaMemAdvise(p, bytes, cudaMemAdviseSetPreferredLocation, where);
  (void)cudaGetLastError();  // the advice is optional (not every system supports it)
  return p;
}

void cuda_managed_free(void* p) noexcept {
  cudaFree(p);               // waits for the device, like every free of device memory
  (void)cudaGetLastError();  // see cuda_device_free
}

}  // namespace strata::detail
