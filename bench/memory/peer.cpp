#include "memory/peer.hpp"

#include <cstring>

namespace strata::bench::plain {
void copy_bytes(void* dst, void const* src, std::size_t bytes) {
  std::memcpy(dst, src, bytes);
}
}  // namespace strata::bench::plain
