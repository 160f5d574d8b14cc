// Issue 13's CUDA paths that only a real GPU exercises: foreign device memory as kernel
// arguments (item 1), grids of more than 65535 rows (2), cudaMemset (3), the caller's
// current device kept (5), pageable host copies staged without blocking the caller (6),
// grid-stride elements (10) and the default architectures (8); and the hybrid stencil's
// strip kernel on a GPU.
// Without a GPU every test but the architecture check reports skipped with the
// runtime's reason.
#include <strata/strata.hpp>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

namespace strata {
namespace {

class CudaReal : public testing::Test {
 protected:
  runtime rt;
  std::vector<place> gpus = rt.machine().slice(isa::cuda).descendants(place_type::device);
  void SetUp() override {
    if (gpus.empty()) {
      std::string why = "no CUDA device";
      for (auto const& n : rt.notes())
        if (n.find("CUDA") != std::string::npos) why = n;
      GTEST_SKIP() << why;
    }
  }
  place gpu() const { return gpus.front(); }
};

struct iota_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, int* v, index_t n) const {
    for (auto i : self.elements(n)) v[i] = static_cast<int>(i);
  }
};

// Writes, for every element, the linear index of the thread that handled it.
struct owner_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, index_t* v, index_t n) const {
    for (auto i : self.elements(n)) v[i] = self.global_linear_index();
  }
};

TEST_F(CudaReal, KernelTakesMemoryFromCudaMalloc) {
  int* raw = nullptr;
  ASSERT_EQ(cudaSetDevice(gpu().os_index()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&raw, 1000 * sizeof(int)), cudaSuccess);
  // The debug builds' check of raw pointers, called directly so that release builds
  // (which skip it in launch) test it too.
  auto where = detail::resolve(gpu());
  EXPECT_NO_THROW(detail::check_kernel_pointer(where, raw, space_id::host, false, 0, 0));
  int on_host = 0;
  EXPECT_THROW(detail::check_kernel_pointer(where, &on_host, space_id::host, false, 0, 0),
               invalid_argument);
  launch(gpu(), divide_work(gpu(), index_t{1000}), iota_k{}, raw, index_t{1000}).wait();
  std::vector<int> h(1000);
  ASSERT_EQ(cudaMemcpy(h.data(), raw, h.size() * sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(h[static_cast<std::size_t>(i)], i);
  cudaFree(raw);
}

TEST_F(CudaReal, FillAndMemsetOfMoreThan65535Rows) {
  index_t const rows = 200000, cols = 3;
  auto d = allocate<float, cuda_space>(gpu(), static_cast<std::size_t>(rows * cols));
  view<float, 2, cuda_space> v(d, vec<2>{rows, cols});
  fill(v, 2.5f).wait();
  std::vector<float> h(static_cast<std::size_t>(rows * cols));
  copy(view<float, 2>(ptr<float>(h.data(), 0), vec<2>{rows, cols}), v).wait();
  for (float x : h) ASSERT_EQ(x, 2.5f);
  memset(v, 0).wait();
  copy(view<float, 2>(ptr<float>(h.data(), 0), vec<2>{rows, cols}), v).wait();
  for (float x : h) ASSERT_EQ(x, 0.0f);
  deallocate(d);
}

TEST_F(CudaReal, MemsetOfPitchedRowsLeavesThePadding) {
  // 3 slices of 4 rows of 5 ints, rows 8 ints apart: only the 5 ints of each row change.
  std::size_t const pitch = 8 * sizeof(int), total = 3 * 4 * 8;
  auto d = allocate<int, cuda_space>(gpu(), total);
  std::vector<int> h(total, -1);
  copy(d, ptr<int const>(h.data(), 0), total).wait();
  view<int, 3, cuda_space> v(d, vec<3>{3, 4, 5}, pitch);
  memset(v, 0).wait();
  copy(ptr<int>(h.data(), 0), d, total).wait();
  for (std::size_t i = 0; i < total; ++i) ASSERT_EQ(h[i], i % 8 < 5 ? 0 : -1) << i;
  deallocate(d);
}

TEST_F(CudaReal, LaunchesKeepTheCallersDevice) {
  if (gpus.size() < 2) GTEST_SKIP() << "needs two GPUs to see a device change";
  int const other = gpus.back().os_index();
  ASSERT_EQ(cudaSetDevice(other), cudaSuccess);
  auto d = allocate<int, cuda_space>(gpu(), 64);  // on GPU 0
  int now = -1;
  cudaGetDevice(&now);
  EXPECT_EQ(now, other) << "allocate";
  launch(gpu(), divide_work(gpu(), index_t{64}), iota_k{}, d, index_t{64}).wait();
  cudaGetDevice(&now);
  EXPECT_EQ(now, other) << "launch";
  deallocate(d);
  cudaGetDevice(&now);
  EXPECT_EQ(now, other) << "deallocate";
}

// Spins one thread for about `cycles` GPU clocks.
struct spin_k {
  template <class Self>
  STRATA_FN void operator()(Self const&, long long cycles) const {
#if STRATA_DEVICE_CODE
    long long const start = clock64();
    while (clock64() - start < cycles) {
    }
#else
    (void)cycles;
#endif
  }
};

TEST_F(CudaReal, PageableCopiesAreStagedAndDoNotBlockTheCaller) {
  // 3 slices of 700 rows of 3000 bytes (pitched on both sides, several bounce chunks).
  std::size_t const rows = 700, cols = 3000, slices = 3;
  std::vector<unsigned char> in(slices * rows * 3072), out(in.size(), 0);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 13 + 5);
  auto d = allocate<unsigned char, cuda_space>(gpu(), slices * rows * 4096);
  view<unsigned char, 3, cuda_space> dv(d, vec<3>{3, 700, 3000}, 4096);
  view<unsigned char, 3> hin(ptr<unsigned char>(in.data(), 0), vec<3>{3, 700, 3000}, 3072);
  view<unsigned char, 3> hout(ptr<unsigned char>(out.data(), 0), vec<3>{3, 700, 3000}, 3072);
  copy(dv, hin).wait();
  // A GPU busy for about a second: the copy back is queued after it, and must return to
  // its caller at once (cudaMemcpyAsync to pageable memory would wait for the kernel).
  auto busy = launch(gpu(), grid(1), spin_k{}, 2'000'000'000LL);
  auto const t0 = std::chrono::steady_clock::now();
  auto back = copy(after(busy), hout, dv);
  auto const issued = std::chrono::steady_clock::now() - t0;
  back.wait();
  EXPECT_LT(issued, std::chrono::milliseconds(200));
  for (std::size_t k = 0; k < slices; ++k)
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) {
        std::size_t const i = (k * rows + r) * 3072 + c;
        ASSERT_EQ(out[i], in[i]) << k << " " << r << " " << c;
      }
  deallocate(d);
}

// Helpers that took a thread's elements as one contiguous chunk take the grid-strided
// ranges too: these kernels are compiled for the CUDA backend whether or not a GPU runs
// them (for_each_record, the tensor kernels' for_each_point).
struct body {
  struct position : field<float, 3> {};
  using fields = strata::fields<position>;
  template <class R>
  struct access : accessors<R> {
    STRATA_FN auto& x(std::size_t d) { return get<position>(*this, d); }
  };
};
struct push_k {
  template <class Self, class P>
  STRATA_FN void operator()(Self const& self, P p) const {
    for_each_record(p, self.elements(p.size()), [](auto r) { r.x(1) += 1.0f; });
  }
};
struct points_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, int* v, vec<2> extent) const {
    tensor_detail::for_each_point<2>(self.elements(extent),
                                     [&](vec<2> p) { v[p[0] * extent[1] + p[1]] += 1; });
  }
};

TEST_F(CudaReal, RecordAndPointHelpersTakeGridStridedElements) {
  using map = detail::record_map<soa, body>;
  index_t const n = 1000;
  std::byte* bytes = nullptr;
  ASSERT_EQ(cudaSetDevice(gpu().os_index()), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&bytes, map::bytes_for(n)), cudaSuccess);
  record_span<body, soa> p(bytes, n, map::pitch_for(n));
  for (index_t i = 0; i < n; ++i) p[i].x(1) = static_cast<float>(i);
  // 2 x 64 x 8 = 1024 elements cover the 1000 records (elements(bound) clips, it does not
  // stretch the launch).
  launch(gpu(), grid(2).block(64).elements(8), push_k{}, p).wait();
  for (index_t i = 0; i < n; ++i) ASSERT_EQ(p[i].x(1), static_cast<float>(i) + 1.0f) << i;
  cudaFree(bytes);
  vec<2> const extent{33, 70};
  auto d = allocate<int, cuda_space>(gpu(), 33 * 70);
  memset(view<int, 1, cuda_space>(d, vec<1>{33 * 70}), 0).wait();
  launch(gpu(), grid(2, 2).block(4, 8).elements(5, 5), points_k{}, d, extent).wait();
  std::vector<int> h(33 * 70);
  copy(ptr<int>(h.data(), 0), d, h.size()).wait();
  for (int x : h) ASSERT_EQ(x, 1);
  deallocate(d);
}

TEST_F(CudaReal, ElementsAreGridStrided) {
  // 2 blocks of 32 threads, 4 elements each: element i belongs to thread i % 64.
  index_t const n = 256;
  auto d = allocate<index_t, cuda_space>(gpu(), static_cast<std::size_t>(n));
  launch(gpu(), grid(2).block(32).elements(4), owner_k{}, d, n).wait();
  std::vector<index_t> h(static_cast<std::size_t>(n));
  copy(ptr<index_t>(h.data(), 0), d, h.size()).wait();
  for (index_t i = 0; i < n; ++i) ASSERT_EQ(h[static_cast<std::size_t>(i)], i % 64) << i;
  deallocate(d);
}

// The hybrid stencil's strip kernel (tensor/hybrid.hpp: the change reduced over bit
// patterns, atomic flags) compiled for CUDA: Jacobi on the GPU alone and on GPU + host
// equals the host alone bit for bit; a NaN change is kept to max_change.
struct jacobi_k {
  template <class It>
  STRATA_FN double operator()(It& in) const {
    return 0.25 * (*in.offset(0, -1) + *in.offset(0, 1) + *in.offset(1, -1) + *in.offset(1, 1));
  }
};

TEST_F(CudaReal, HybridJacobiOnTheGpuEqualsTheHost) {
  index_t const rows = 37, cols = 29;
  std::vector<double> init(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < init.size(); ++i) init[i] = static_cast<double>((i * 37) % 11);
  auto solve = [&](std::vector<place> devices, std::vector<double> start, hybrid_result& r) {
    hybrid_stencil<double> h(
        {rows, cols}, {.devices = std::move(devices), .boundary = 1.5, .max_iterations = 20});
    h.set(view<double, 2>(ptr<double, host_space>(start.data(), 0), vec<2>{rows, cols}));
    r = h.solve(jacobi_k{});
    std::vector<double> out(start.size());
    h.get(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{rows, cols}));
    return out;
  };
  hybrid_result rh, rg, rm;
  auto host = solve({rt.machine()}, init, rh);
  EXPECT_EQ(solve({gpu()}, init, rg), host);
  EXPECT_EQ(solve({gpu(), rt.machine()}, init, rm), host);
  EXPECT_EQ(rg.max_change, rh.max_change);
  EXPECT_EQ(rm.max_change, rh.max_change);
  init[static_cast<std::size_t>(5 * cols + 7)] = std::nan("");
  solve({gpu()}, init, rg);
  EXPECT_TRUE(std::isnan(rg.max_change));
}

// Item 8: with the default CMAKE_CUDA_ARCHITECTURES (75-real 80-real 90), nvcc compiled
// this file for sm_75 too (T4s); CMake passes STRATA_TEST_DEFAULT_ARCHITECTURES then.
TEST(CudaArchitectures, DefaultBuildIncludesSm75AndSm90) {
#if defined(STRATA_TEST_DEFAULT_ARCHITECTURES) && defined(__CUDA_ARCH_LIST__)
  std::vector<int> const list{__CUDA_ARCH_LIST__};
  auto has = [&](int a) { return std::find(list.begin(), list.end(), a) != list.end(); };
  EXPECT_TRUE(has(750));
  EXPECT_TRUE(has(800));
  EXPECT_TRUE(has(900));
#else
  GTEST_SKIP() << "CMAKE_CUDA_ARCHITECTURES was set by hand";
#endif
}

}  // namespace
}  // namespace strata
