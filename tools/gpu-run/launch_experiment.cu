// Where a Strata CUDA launch loses against raw CUDA, on a GPU machine (tools/gpu-run/run.sh;
// docs/cuda.md): the copy kernel against a raw kernel (timed by the host and by events) and
// cudaMemcpyAsync, the copy at 2-8 elements per thread, an empty launch + wait, and the
// tensor Jacobi sweep's padding load and kernel apart. Prints one line per measurement.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>
#include <strata/strata.hpp>
using namespace strata;
struct copy_k {
  template <class S>
  STRATA_FN void operator()(S const& self, index_t n, double const* a, double* c) const {
    for (auto i : self.elements(n)) c[i] = a[i];
  }
};
struct empty_k {
  template <class S>
  STRATA_FN void operator()(S const&, double* c) const {}
};
struct jacobi_cell {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    *out = 0.25 * (*in.offset(0, -1) + *in.offset(0, 1) + *in.offset(1, -1) + *in.offset(1, 1));
  }
};
__global__ void raw_copy(double const* a, double* c, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i];
}
__global__ void raw_empty() {}
double best(int reps, std::function<void()> f) {
  f();
  double b = 1e9;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    b = s < b ? s : b;
  }
  return b;
}
int main() {
  runtime rt;
  auto gpus = rt.machine().slice(isa::cuda).descendants(place_type::device);
  if (gpus.empty()) {
    std::puts("no gpu");
    return 0;
  }
  place gpu = gpus.front();
  index_t n = index_t{1} << 26;
  auto a = allocate<double, cuda_space>(gpu, n), c = allocate<double, cuda_space>(gpu, n);
  cudaSetDevice(gpu.os_index());
  cudaStream_t st;
  cudaStreamCreate(&st);
  auto s = divide_work(gpu, n);
  double t_strata = best(20, [&] { launch(gpu, s, copy_k{}, n, a, c).wait(); });
  // The same launch, finished by this thread's cudaDeviceSynchronize (it spins on a machine
  // with cores to spare) before the strata wait: the kernel and the launch path without the
  // completion worker's hand-off.
  double t_strata_sync = best(20, [&] {
    auto done = launch(gpu, s, copy_k{}, n, a, c);
    cudaDeviceSynchronize();
    done.wait();
  });
  double t_raw = best(20, [&] {
    raw_copy<<<(n + 255) / 256, 256, 0, st>>>(a.get(), c.get(), n);
    cudaStreamSynchronize(st);
  });
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  float ms = 1e9;
  for (int r = 0; r < 10; ++r) {
    float m;
    cudaEventRecord(e0, st);
    raw_copy<<<(n + 255) / 256, 256, 0, st>>>(a.get(), c.get(), n);
    cudaEventRecord(e1, st);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&m, e0, e1);
    ms = m < ms ? m : ms;
  }
  double t_memcpy = best(20, [&] {
    cudaMemcpyAsync(c.get(), a.get(), n * 8, cudaMemcpyDeviceToDevice, st);
    cudaStreamSynchronize(st);
  });
  std::printf(
      "copy 2^26 doubles: strata %.1f us  strata+cudaDeviceSynchronize %.1f us  raw(host-timed) "
      "%.1f us  raw(event) %.1f us  memcpy %.1f us\n",
      t_strata * 1e6, t_strata_sync * 1e6, t_raw * 1e6, ms * 1e3, t_memcpy * 1e6);
  for (index_t e : {2, 4, 8}) {
    auto s2 = shape<1>(vec<1>{(n + 256 * e - 1) / (256 * e)}, vec<1>{256}, vec<1>{e});
    double t = best(20, [&] { launch(gpu, s2, copy_k{}, n, a, c).wait(); });
    std::printf("  strata copy, %ld elements/thread: %.1f us\n", (long)e, t * 1e6);
  }
  auto one = divide_work(gpu, 1);
  double t_empty = best(200, [&] { launch(gpu, one, empty_k{}, c).wait(); });
  double t_rempty = best(200, [&] {
    raw_empty<<<1, 1, 0, st>>>();
    cudaStreamSynchronize(st);
  });
  // The issue alone (the launch call's return), the wait after it apart.
  double t_issue = 1e9, t_rissue = 1e9;
  for (int r = 0; r < 200; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto done = launch(gpu, one, empty_k{}, c);
    double d = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t_issue = d < t_issue ? d : t_issue;
    done.wait();
    t0 = std::chrono::steady_clock::now();
    raw_empty<<<1, 1, 0, st>>>();
    d = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t_rissue = d < t_rissue ? d : t_rissue;
    cudaStreamSynchronize(st);
  }
  std::printf("empty launch+wait: strata %.1f us  raw %.1f us; issue alone: strata %.1f us  raw %.1f us\n",
              t_empty * 1e6, t_rempty * 1e6, t_issue * 1e6, t_rissue * 1e6);
  // The pieces of Strata's completion path, raw: recording a blocking-sync marker (as
  // finish() does), querying a completed one, and an empty kernel waited for by polling its
  // marker with cudaEventQuery and a yield (the completion worker's poll) against
  // cudaStreamSynchronize. Session 52 left 13 us of wait against raw CUDA's 4.5 unexplained.
  cudaEvent_t marker;
  cudaEventCreateWithFlags(&marker, cudaEventDisableTiming | cudaEventBlockingSync);
  double t_record = 1e9, t_query = 1e9, t_polled = 1e9;
  for (int r = 0; r < 200; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    cudaEventRecord(marker, st);
    double d = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t_record = d < t_record ? d : t_record;
    cudaEventSynchronize(marker);
    t0 = std::chrono::steady_clock::now();
    (void)cudaEventQuery(marker);
    d = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t_query = d < t_query ? d : t_query;
    t0 = std::chrono::steady_clock::now();
    raw_empty<<<1, 1, 0, st>>>();
    cudaEventRecord(marker, st);
    while (cudaEventQuery(marker) == cudaErrorNotReady) std::this_thread::yield();
    d = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    t_polled = d < t_polled ? d : t_polled;
  }
  (void)cudaGetLastError();
  std::printf("raw pieces: cudaEventRecord %.2f us  cudaEventQuery (done) %.2f us  empty kernel "
              "+ record + query/yield poll %.1f us\n",
              t_record * 1e6, t_query * 1e6, t_polled * 1e6);
  index_t m = 4096;
  tensor_spec<2> spec{.extent = {m, m}, .padding = 1};
  tensor<double, 2> ta(std::vector<place>{gpu}, spec), tb(std::vector<place>{gpu}, spec);
  set_boundary(ta, boundary::constant<double>{1.0});
  fill(ta, 1.0).wait();
  fill(tb, 0.0).wait();
  double t_pad = best(20, [&] { load_padding(ta).wait(); });
  double t_kernel = best(20, [&] { for_each_cell(jacobi_cell{}, ta, tb).wait(); });
  double t_both =
      best(20, [&] { for_each_cell(jacobi_cell{}, concurrent_padded_access(ta), tb).wait(); });
  std::printf("stencil 4096^2: load_padding %.1f us  kernel %.1f us  padded access %.1f us\n",
              t_pad * 1e6, t_kernel * 1e6, t_both * 1e6);
  return 0;
}
