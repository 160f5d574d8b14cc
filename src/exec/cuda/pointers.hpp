// Memory Strata did not allocate, as the CUDA runtime sees it (cudaPointerGetAttributes):
// device memory from cudaMalloc, cuBLAS or Thrust, managed memory, page-locked host
// memory. Kernel argument checks and copies accept it where the registry knows nothing.
#pragma once

#include <strata/memory/space.hpp>

#include <optional>

namespace strata::detail::cuda {

struct foreign_memory {
  space_id space;  // cuda, managed or pinned
  int device;      // the CUDA ordinal holding it; -1 for host memory
};

/// cudaMemoryType's values (checked against cuda_runtime_api.h in streams.cpp).
enum class memory_type : int { unregistered = 0, host = 1, device = 2, managed = 3 };

/// The Strata space of memory CUDA reports as `type` on device `device`; nullopt for
/// memory CUDA does not know (pageable host memory, a stack address).
constexpr std::optional<foreign_memory> classify(memory_type type, int device) noexcept {
  switch (type) {
    case memory_type::device:
      return foreign_memory{space_id::cuda, device};
    case memory_type::managed:
      return foreign_memory{space_id::managed, device};
    case memory_type::host:
      return foreign_memory{space_id::pinned, -1};
    case memory_type::unregistered:
      break;
  }
  return std::nullopt;
}

/// What CUDA knows of `address` (classify); nullopt when nothing, or without CUDA.
std::optional<foreign_memory> foreign_memory_of(void const* address) noexcept;

}  // namespace strata::detail::cuda
