// Device allocators: CUDA's when built with CUDA (cuda_memory.cpp), else answers that
// there is no CUDA memory (cuda_memory_absent.cpp).
#pragma once

#include <strata/machine/place.hpp>

#include <cstddef>

namespace strata::detail {

/// Page-locked host memory from the CUDA driver, or nullptr when no device can give it.
void* cuda_pinned_alloc(std::size_t bytes) noexcept;
void cuda_pinned_free(void* p) noexcept;
/// Device memory on the CUDA device of memory place `memory`; throws on CUDA errors.
void* cuda_device_alloc(place const& memory, std::size_t bytes);
void cuda_device_free(void* p) noexcept;
/// Managed memory attached to the CUDA device of memory place `memory`.
void* cuda_managed_alloc(place const& memory, std::size_t bytes);
void cuda_managed_free(void* p) noexcept;

}  // namespace strata::detail
