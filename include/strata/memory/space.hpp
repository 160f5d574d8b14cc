// Memory spaces as types (Phalanx §III-C; PARRAY §2.1 memory types paged, pinned, dmem,
// mmap). A space says where bytes live and who may touch them; `ptr<T, Space>` carries it
// in its type, so code that mixes spaces by mistake does not compile.
#pragma once

#include <strata/machine/place.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata {

/// The spaces at run time (allocation records, messages).
enum class space_id : std::uint8_t { host, pinned, mapped, sim, cuda, managed };

std::string_view to_string(space_id s) noexcept;

/// Pageable host memory (PARRAY `paged`).
struct host_space {
  static constexpr space_id id = space_id::host;
  static constexpr bool host_accessible = true;
  static constexpr strata::isa isa = strata::isa::host;
  static constexpr place_type memory_type = place_type::host_memory;
  static constexpr std::size_t row_alignment = 64;  // a cache line, one AVX-512 register
};

/// Page-locked host memory (PARRAY `pinned`): cudaHostAlloc when a CUDA device exists,
/// otherwise page-aligned memory locked with mlock where the system allows it.
struct pinned_space {
  static constexpr space_id id = space_id::pinned;
  static constexpr bool host_accessible = true;
  static constexpr strata::isa isa = strata::isa::host;
  static constexpr place_type memory_type = place_type::host_memory;
  static constexpr std::size_t row_alignment = 64;
};

/// A file mapped into host memory (PARRAY `mmap`), written back when released.
struct mapped_space {
  static constexpr space_id id = space_id::mapped;
  static constexpr bool host_accessible = true;
  static constexpr strata::isa isa = strata::isa::host;
  static constexpr place_type memory_type = place_type::host_memory;
  static constexpr std::size_t row_alignment = 64;
};

/// The memory of an emulated sim device: host bytes that only the device's kernels and
/// copies may touch, as if across a link.
struct sim_space {
  static constexpr space_id id = space_id::sim;
  static constexpr bool host_accessible = false;
  static constexpr strata::isa isa = strata::isa::sim;
  static constexpr place_type memory_type = place_type::device_memory;
  static constexpr std::size_t row_alignment = 256;  // as a GPU's pitched allocations
};

/// CUDA device memory (PARRAY `dmem`).
struct cuda_space {
  static constexpr space_id id = space_id::cuda;
  static constexpr bool host_accessible = false;
  static constexpr strata::isa isa = strata::isa::cuda;
  static constexpr place_type memory_type = place_type::device_memory;
  static constexpr std::size_t row_alignment = 512;  // cudaMallocPitch's usual pitch unit
};

/// CUDA managed (unified) memory of one GPU (cudaMallocManaged): host code and that GPU's
/// kernels both dereference it; the driver migrates pages on demand. Allocated at a GPU's
/// memory place, and counted against its capacity.
struct managed_space {
  static constexpr space_id id = space_id::managed;
  static constexpr bool host_accessible = true;
  static constexpr strata::isa isa = strata::isa::cuda;
  static constexpr place_type memory_type = place_type::device_memory;
  static constexpr std::size_t row_alignment = 512;
};

template <class S>
concept memory_space = requires {
  { S::id } -> std::convertible_to<space_id>;
  { S::host_accessible } -> std::convertible_to<bool>;
  { S::row_alignment } -> std::convertible_to<std::size_t>;
};

/// Whether the calling code may dereference memory of space S: host code the
/// host-accessible spaces, device code of a CUDA kernel the CUDA space too.
template <memory_space S>
inline constexpr bool accessible_here_v =
#if defined(__CUDA_ARCH__)
    S::host_accessible || S::id == space_id::cuda;
#else
    S::host_accessible;
#endif

}  // namespace strata
