// Copies that touch CUDA memory (src/exec/cuda/copy.cpp; src/exec/cuda/absent.cpp in
// builds without CUDA, where no CUDA memory can exist).
#pragma once

#include <strata/exec/event.hpp>

#include "exec/copy_desc.hpp"

namespace strata::detail::cuda {

/// Whether `d` touches CUDA memory (device or managed), so it runs on a GPU's stream.
inline bool involved(copy_desc const& d) noexcept {
  auto gpu = [](space_id s) { return s == space_id::cuda || s == space_id::managed; };
  return gpu(d.dst.space) || gpu(d.src.space);
}

/// Starts `d` on a stream of the device that holds its CUDA side (the source's for a
/// copy between two GPUs), after the CUDA markers of `deps` (null: no dependencies).
event copy(copy_desc const& d, after const* deps);

/// Sets the rows of `d.dst` (device or managed memory) to `byte` with cudaMemsetAsync, or
/// cudaMemset2DAsync for pitched rows, on a stream of its GPU after the CUDA markers of
/// `deps` (null: none). `d.src` is not used.
event memset(copy_desc const& d, unsigned char byte, after const* deps);

/// Below this many bytes per row, a pitched copy between two memories of one GPU runs as
/// a kernel: the copy engines move short rows at a fraction of their bandwidth.
inline constexpr std::size_t short_row_bytes = 64;

/// Queues the strided copy kernel for `d` (both sides on the current device) on `stream`
/// (src/exec/cuda/copy_kernel.cu, compiled by nvcc).
void strided_copy(copy_desc const& d, void* stream);

}  // namespace strata::detail::cuda
