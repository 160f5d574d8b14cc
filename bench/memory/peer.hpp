#pragma once

#include <cstddef>

namespace strata::bench::plain {
/// std::memcpy, compiled apart so the compiler cannot see through the benchmark.
void copy_bytes(void* dst, void const* src, std::size_t bytes);
}  // namespace strata::bench::plain
