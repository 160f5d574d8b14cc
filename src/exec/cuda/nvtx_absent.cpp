// Builds without CUDA have no NVTX: the trace's spans are not profiler ranges.
#include "exec/cuda/nvtx.hpp"

namespace strata::detail {

bool nvtx_available() noexcept {
  return false;
}
void nvtx_push(std::string_view) noexcept {}
void nvtx_pop() noexcept {}

}  // namespace strata::detail
