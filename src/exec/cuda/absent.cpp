// Builds without CUDA: no CUDA memory can be allocated, so a copy that names some was
// handed a forged pointer; and no event carries a CUDA marker.
//
// The rest of the backend's host side is defined too, throwing: a user's file compiled
// by nvcc instantiates strata::cuda::backend (include/strata/exec/cuda/backend.hpp) even
// against a libstrata without CUDA, and must link. It never gets here at run time, since
// resolving a CUDA target already throws not_supported in such builds.
#include <strata/error.hpp>
#include <strata/exec/cuda/backend.hpp>

#include "exec/cuda/copy.hpp"
#include "exec/cuda/pointers.hpp"

namespace strata::detail::cuda {
namespace {

[[noreturn]] void absent(char const* what) {
  throw not_supported(std::string(what) +
                      ": this libstrata was built without CUDA (-DSTRATA_ENABLE_CUDA=ON)");
}

}  // namespace

event copy(copy_desc const&, after const*) {
  throw not_supported(
      "copy: CUDA memory needs a libstrata built with CUDA (-DSTRATA_ENABLE_CUDA=ON)");
}

event memset(copy_desc const&, unsigned char, after const*) {
  throw not_supported(
      "memset: CUDA memory needs a libstrata built with CUDA (-DSTRATA_ENABLE_CUDA=ON)");
}

bool chainable(after const&) noexcept {
  return false;
}

[[noreturn]] void fail(char const* call, int, std::string const&) {
  absent(call);
}
device_limits const& limits(int) {
  absent("CUDA device limits");
}
void* stream_for(int, after const*) {
  absent("CUDA stream");
}
event finish(int, void*, std::string) {
  absent("CUDA event");
}
std::vector<int> devices_of(std::uint64_t) {
  absent("CUDA devices");
}

std::optional<foreign_memory> foreign_memory_of(void const*) noexcept {
  return std::nullopt;  // no CUDA runtime to ask, and no CUDA memory can exist
}

// Without CUDA no call changes a current device, so there is nothing to restore.
device_guard::device_guard() noexcept = default;
device_guard::~device_guard() = default;

}  // namespace strata::detail::cuda
