// The strided copy kernel: pitched copies whose rows are short (a PARRAY layout's
// column, a halo) move one row per thread instead of one copy-engine request per row.
#include "exec/cuda/copy.hpp"

#include <cuda_runtime.h>

#include <cstdint>

namespace strata::detail::cuda {
namespace {

template <class Word>
__global__ void strided(std::byte* dst, std::size_t dst_pitch, std::size_t dst_slice,
                        std::byte const* src, std::size_t src_pitch, std::size_t src_slice,
                        std::size_t words, std::size_t rows, std::size_t total_rows) {
  for (std::size_t r = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; r < total_rows;
       r += std::size_t{gridDim.x} * blockDim.x) {
    std::size_t const slice = r / rows, row = r % rows;
    auto* out = reinterpret_cast<Word*>(dst + slice * dst_slice + row * dst_pitch);
    auto const* in = reinterpret_cast<Word const*>(src + slice * src_slice + row * src_pitch);
    for (std::size_t w = 0; w < words; ++w) out[w] = in[w];
  }
}

template <class Word>
void queue(copy_desc const& d, cudaStream_t stream) {
  std::size_t const total = d.total_rows();
  if (total == 0) return;  // a grid of 0 blocks is an invalid launch configuration
  unsigned const threads = 256;
  std::size_t blocks = (total + threads - 1) / threads;
  if (blocks > 65535) blocks = 65535;  // grid-stride beyond
  strided<Word><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
      d.dst.base, d.dst.pitch, d.dst.slice_pitch, d.src.base, d.src.pitch, d.src.slice_pitch,
      d.row_bytes / sizeof(Word), d.rows, total);
}

}  // namespace

void strided_copy(copy_desc const& d, void* stream) {
  auto aligned = [&](std::size_t a) {
    auto ok = [a](std::uintptr_t v) { return v % a == 0; };
    return ok(reinterpret_cast<std::uintptr_t>(d.dst.base)) &&
           ok(reinterpret_cast<std::uintptr_t>(d.src.base)) && ok(d.dst.pitch) &&
           ok(d.src.pitch) && ok(d.dst.slice_pitch) && ok(d.src.slice_pitch) && ok(d.row_bytes);
  };
  auto s = static_cast<cudaStream_t>(stream);
  if (aligned(8))
    queue<std::uint64_t>(d, s);
  else if (aligned(4))
    queue<std::uint32_t>(d, s);
  else
    queue<unsigned char>(d, s);
}

}  // namespace strata::detail::cuda
