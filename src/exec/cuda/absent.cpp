// Builds without CUDA: no CUDA memory can be allocated, so a copy that names some was
// handed a forged pointer; and no event carries a CUDA marker.
#include <strata/error.hpp>
#include <strata/exec/cuda/backend.hpp>

#include "exec/cuda/copy.hpp"

namespace strata::detail::cuda {

event copy(copy_desc const&, after const*) {
  throw not_supported(
      "copy: CUDA memory needs a libstrata built with CUDA (-DSTRATA_ENABLE_CUDA=ON)");
}

bool chainable(after const&) noexcept {
  return false;
}

}  // namespace strata::detail::cuda
