#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::bench::heap {

/// `iterations` rounds of: malloc 4 blocks whose sizes are the next entries of `sizes`
/// (cycled; `mask` + 1 entries, a power of two), write and read back the last byte of
/// each, free the 4. Returns the sum over blocks of the byte read and the block's size.
/// Compiled apart from the Strata side, and each block escapes to an asm statement, so
/// that the compiler can neither fuse the two nor elide the malloc/free pairs.
std::uint64_t malloc_free(long first, long iterations, std::uint16_t const* sizes,
                          std::size_t mask);

}  // namespace strata::bench::heap
