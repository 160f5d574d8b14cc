// Compiled by nvcc: every public header, device code through STRATA_FN, and a run of a
// kernel when a GPU is present (exit 77 = skipped, with the reason, when not).
#include "all_headers.inc"

#include <cuda_runtime.h>

#include <cstdio>

static_assert(STRATA_DEVICE_COMPILER == 1, "nvcc must see STRATA_FN as __host__ __device__");

namespace {

STRATA_FN int square_plus(int x, int y) {
  return x * x + y;
}

__global__ void fill(int* out, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = square_plus(i, 1);
}

}  // namespace

int main() {
  strata::runtime rt;
  auto gpus = rt.machine().slice(strata::isa::cuda).descendants(strata::place_type::device);
  if (gpus.empty()) {
    std::printf("skipped: %s\n", rt.notes().empty() ? "no CUDA device" : rt.notes()[0].c_str());
    return 77;
  }
  constexpr int n = 1000;
  int* d = nullptr;
  if (cudaMalloc(&d, n * sizeof(int)) != cudaSuccess) return 1;
  fill<<<(n + 255) / 256, 256>>>(d, n);
  int h[n];
  auto err = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (err != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  for (int i = 0; i < n; ++i)
    if (h[i] != square_plus(i, 1)) return 1;
  std::printf("ran on %s (%s)\n", gpus[0].name().c_str(),
              gpus[0].info().attributes[0].second.c_str());
  return 0;
}
