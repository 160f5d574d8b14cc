// Compiled by nvcc: every public header, device code through STRATA_FN, and a run of a
// kernel when a GPU is present (exit 77 = skipped, with the reason, when not).
#include "all_headers.inc"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <cstring>

static_assert(STRATA_DEVICE_COMPILER == 1, "nvcc must see STRATA_FN as __host__ __device__");

namespace {

STRATA_FN int square_plus(int x, int y) {
  return x * x + y;
}

__global__ void fill(int* out, int n) {
  int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = square_plus(i, 1);
}

// A device context for the domain handle, reading CUDA's builtins: the shape the CUDA
// backend's context takes (issue 7). It instantiates strata::domain for device code.
struct device_ctx {
  strata::vec<1> grid, block, elements;
  std::byte* scratch = nullptr;
  std::size_t scratch_bytes = 0;
  mutable std::size_t scratchpad_used = 0;

  STRATA_FN strata::vec<1> grid_extent() const { return grid; }
  STRATA_FN strata::vec<1> block_extent() const { return block; }
  STRATA_FN strata::vec<1> element_extent() const { return elements; }
  STRATA_FN strata::vec<1> block_index() const {
#if STRATA_DEVICE_CODE
    return {static_cast<strata::index_t>(blockIdx.x)};
#else
    return {0};
#endif
  }
  STRATA_FN strata::vec<1> thread_index() const {
#if STRATA_DEVICE_CODE
    return {static_cast<strata::index_t>(threadIdx.x)};
#else
    return {0};
#endif
  }
  STRATA_FN void barrier() const {
#if STRATA_DEVICE_CODE
    __syncthreads();
#endif
  }
  STRATA_FN std::byte* scratchpad_base() const {
    return scratch;
  }
  STRATA_FN std::size_t scratchpad_size() const {
    return scratch_bytes;
  }
};

// The same kernel sources the CPU tests run.
struct saxpy_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, float a, strata::index_t n, float const* x,
                            float* y) const {
    for (auto i : self.elements(n)) y[i] = a * x[i] + y[i];
  }
};

struct block_sum_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, int const* in, int* total) const {
    auto block = self.block();
    int* partial = block.template scratchpad<int>(static_cast<std::size_t>(block.linear_size()));
    partial[block.linear_index()] = in[self.global_linear_index()];
    block.barrier();
    if (block.linear_index() == 0) {
      int s = 0;
      for (strata::index_t i = 0; i < block.linear_size(); ++i) s += partial[i];
      strata::atomic_add(total, s);
      strata::atomic_max(total + 1, s);
      strata::fence(strata::scope::device);
    }
  }
};

// Record layouts in device code (Ripple §4.2): one push for SoA and AoSoA proxies.
struct body {
  struct position : strata::field<float, 3> {};
  struct velocity : strata::field<float, 3> {};
  struct id : strata::field<int> {};
  using fields = strata::fields<position, velocity, id>;
  template <class R>
  struct access : strata::accessors<R> {
    STRATA_FN auto& x(std::size_t d) { return strata::get<position>(*this, d); }
    STRATA_FN auto& v(std::size_t d) { return strata::get<velocity>(*this, d); }
  };
};

struct push_k {
  template <class Self, class P>
  STRATA_FN void operator()(Self const& self, P p, float dt) const {
    strata::for_each_record(p, self.elements(p.size()), [dt](auto r) {
      for (std::size_t d = 0; d < 3; ++d) r.x(d) += r.v(d) * dt;
      r[body::id{}] += 1;
    });
  }
};

// An array type in device code (PARRAY §2): offsets of a transposed type. The type is
// read through a pointer: taken by value it is 8 KiB of dimension tree, over CUDA's
// classic 4 KiB kernel-parameter limit. (Its offset walk is recursive; it compiles in
// seconds since the recursive functions are not inlined on the device: STRATA_RECURSIVE_FN.)
struct layout_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::array_type<int> const* t, int* out) const {
    for (auto i : self.elements(t->size())) out[(*t)(i)] = static_cast<int>(i);
  }
};

// The same offsets through the compact strided form, taken by value (40 bytes).
struct strided_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::strided_type<int, strata::host_space, 2> t,
                            int* out) const {
    for (auto i : self.elements(t.size())) out[t(i) + 128] = static_cast<int>(i);
  }
};

template <class Policy, class Kernel, class... Args>
__global__ void run_domain(Kernel k, strata::vec<1> grid, strata::vec<1> block,
                           strata::vec<1> elements, std::size_t scratch_bytes, Args... args) {
  extern __shared__ std::byte shared[];
  device_ctx ctx{grid, block, elements, shared, scratch_bytes};
  k(strata::domain<1, Policy, device_ctx>(ctx), args...);
}

template <class L>
bool push_records(strata::index_t n) {
  using map = strata::detail::record_map<L, body>;
  std::byte* bytes = nullptr;
  cudaMallocManaged(&bytes, map::bytes_for(n));
  strata::record_span<body, L> p(bytes, n, map::pitch_for(n));
  for (strata::index_t i = 0; i < n; ++i)
    for (std::size_t d = 0; d < 3; ++d) {
      p[i].x(d) = static_cast<float>(i);
      p[i].v(d) = 2.0f;
      p[i].template get<body::id>() = 0;
    }
  run_domain<strata::streaming_group>
      <<<4, 32>>>(push_k{}, strata::vec<1>{4}, strata::vec<1>{32}, strata::vec<1>{8}, 0, p, 0.5f);
  bool ok = cudaDeviceSynchronize() == cudaSuccess;
  for (strata::index_t i = 0; ok && i < n; ++i)
    ok = p[i].x(2) == static_cast<float>(i) + 1.0f && p[i].template get<body::id>() == 1;
  cudaFree(bytes);
  return ok;
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

  // Strata domains in device code: a streaming saxpy with element ranges, a parallel
  // block reduction with scratchpad, barrier and atomics, and a device lambda.
  float *x = nullptr, *y = nullptr;
  int *in = nullptr, *total = nullptr;
  cudaMallocManaged(&x, n * sizeof(float));
  cudaMallocManaged(&y, n * sizeof(float));
  cudaMallocManaged(&in, 256 * 4 * sizeof(int));
  cudaMallocManaged(&total, 2 * sizeof(int));
  for (int i = 0; i < n; ++i) x[i] = 1.0f, y[i] = 2.0f;
  for (int i = 0; i < 1024; ++i) in[i] = 1;
  total[0] = total[1] = 0;
  run_domain<strata::streaming_group><<<8, 32>>>(saxpy_k{}, strata::vec<1>{8}, strata::vec<1>{32},
                                                 strata::vec<1>{4}, 0, 3.0f, strata::index_t{n}, x,
                                                 y);
  run_domain<strata::parallel_group><<<4, 256, 256 * sizeof(int)>>>(
      block_sum_k{}, strata::vec<1>{4}, strata::vec<1>{256}, strata::vec<1>{1}, 256 * sizeof(int),
      static_cast<int const*>(in), total);
  auto lambda = [] __device__(auto const& self, float* v) {
    for (auto i : self.elements()) v[i] += 1.0f;
  };
  run_domain<strata::streaming_group>
      <<<1, 10>>>(lambda, strata::vec<1>{1}, strata::vec<1>{10}, strata::vec<1>{1}, 0, y);
  strata::array_type<int> const a{16, 8};
  strata::array_type<int> const t{a[1], a[0]};
  int* lay = nullptr;
  strata::array_type<int>* tm = nullptr;
  cudaMallocManaged(&lay, 256 * sizeof(int));
  cudaMallocManaged(&tm, sizeof t);
  std::memcpy(static_cast<void*>(tm), &t, sizeof t);
  run_domain<strata::streaming_group>
      <<<1, 128>>>(layout_k{}, strata::vec<1>{1}, strata::vec<1>{128}, strata::vec<1>{1}, 0,
                   static_cast<strata::array_type<int> const*>(tm), lay);
  run_domain<strata::streaming_group>
      <<<1, 128>>>(strided_k{}, strata::vec<1>{1}, strata::vec<1>{128}, strata::vec<1>{1}, 0,
                   strata::strided_type<int, strata::host_space, 2>(t), lay);
  if (auto e = cudaDeviceSynchronize(); e != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(e));
    return 1;
  }
  bool ok = total[0] == 1024 && total[1] == 256 && y[0] == 6.0f && y[n - 1] == 5.0f;
  for (int i = 0; i < 128; ++i) ok = ok && lay[t(i)] == i && lay[t(i) + 128] == i;
  cudaFree(lay);
  cudaFree(tm);
  cudaFree(x);
  cudaFree(y);
  cudaFree(in);
  cudaFree(total);
  ok = ok && push_records<strata::soa>(1000) && push_records<strata::aosoa<8>>(1000) &&
       push_records<strata::grouped<strata::aosoa<8>, strata::fields<body::id>>>(1000);
  if (!ok) {
    std::printf("wrong results from Strata domains on the GPU\n");
    return 1;
  }
  std::printf("ran on %s (%s)\n", gpus[0].name().c_str(),
              gpus[0].info().attributes[0].second.c_str());
  return 0;
}
