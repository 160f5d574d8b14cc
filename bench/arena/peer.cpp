#include <cstdlib>
#include <new>

#include "arena/peer.hpp"

namespace strata::bench::heap {

std::uint64_t malloc_free(long first, long iterations, std::uint16_t const* sizes,
                          std::size_t mask) {
  std::uint64_t sum = 0;
  for (long i = first; i < first + iterations; ++i) {
    unsigned char* blocks[4];
    for (int k = 0; k < 4; ++k) {
      auto j = static_cast<std::size_t>(i) * 4 + static_cast<std::size_t>(k);
      std::size_t size = sizes[j & mask];
      auto* p = static_cast<unsigned char*>(std::malloc(size));
      if (!p) throw std::bad_alloc();
      p[size - 1] = static_cast<unsigned char>(j);
      asm volatile("" : : "r"(p) : "memory");  // the block escapes: malloc must happen
      sum += p[size - 1] + size;
      blocks[k] = p;
    }
    for (auto* p : blocks) std::free(p);
  }
  return sum;
}

}  // namespace strata::bench::heap
