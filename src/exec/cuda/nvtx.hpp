// NVTX ranges for the trace's spans, so Nsight Systems shows Strata's kernels, jobs and
// tasks on its timeline. Defined in nvtx.cpp in CUDA builds (NVTX 3, header-only, from
// the CUDA toolkit) and as no-ops in nvtx_absent.cpp otherwise.
#pragma once

#include <string_view>

namespace strata::detail {
/// Whether this libstrata was built with NVTX (a CUDA build).
bool nvtx_available() noexcept;
/// Opens a range named `name` in the "strata" NVTX domain on the calling thread.
void nvtx_push(std::string_view name) noexcept;
/// Closes the calling thread's innermost range of that domain.
void nvtx_pop() noexcept;
}  // namespace strata::detail
