// NVTX 3 ranges (CUDA builds). NVTX 3 is header-only: it loads the profiler's collector
// named by NVTX_INJECTION64_PATH on first use (hence the link to libdl), and each call is
// a no-op without one.
#include "exec/cuda/nvtx.hpp"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstring>

namespace strata::detail {
namespace {

nvtxDomainHandle_t domain() noexcept {
  static nvtxDomainHandle_t const d = nvtxDomainCreateA("strata");
  return d;
}

}  // namespace

bool nvtx_available() noexcept {
  return true;
}

void nvtx_push(std::string_view name) noexcept {
  // NVTX takes NUL-terminated text; a fixed buffer keeps this call free of allocation
  // (it runs in noexcept span bookkeeping). Longer names are cut.
  char text[128];
  auto const n = std::min(name.size(), sizeof text - 1);
  std::memcpy(text, name.data(), n);
  text[n] = '\0';
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = text;
  nvtxDomainRangePushEx(domain(), &a);
}

void nvtx_pop() noexcept {
  nvtxDomainRangePop(domain());
}

}  // namespace strata::detail
