#include <strata/error.hpp>

#include "memory/backends.hpp"

namespace strata::detail {

void* cuda_pinned_alloc(std::size_t) noexcept {
  return nullptr;
}
void cuda_pinned_free(void*) noexcept {}
void* cuda_device_alloc(place const& memory, std::size_t) {
  throw not_supported("allocate: '" + memory.path() +
                      "' is CUDA memory, and this libstrata was "
                      "built without CUDA");
}
void cuda_device_free(void*) noexcept {}
void* cuda_managed_alloc(place const& memory, std::size_t) {
  throw not_supported("allocate: '" + memory.path() +
                      "' is CUDA memory, and this libstrata was "
                      "built without CUDA");
}
void cuda_managed_free(void*) noexcept {}

}  // namespace strata::detail
