// A libstrata built without OpenMP (STRATA_ENABLE_OPENMP=OFF, e.g. the ThreadSanitizer
// build): the openmp backend exists in every translation unit's launch, and says here,
// at run time, that this library cannot run it.
#include <strata/error.hpp>
#include <strata/exec/openmp/backend.hpp>

namespace strata::detail {

void openmp_parallel(int, openmp_body, void*) {
  throw not_supported(
      "launch: the openmp backend is not built into this libstrata (configured with "
      "STRATA_ENABLE_OPENMP=OFF); expected the serial or threads backend, or a Strata built "
      "with OpenMP");
}

bool openmp_built() noexcept {
  return false;
}

bool openmp_in_parallel() noexcept {
  return false;
}

}  // namespace strata::detail
