// BabelStream copy and triad, and axpy, as the Strata kernels of bench/stream compiled for
// CUDA, against what a CUDA user would call: cudaMemcpyAsync for copy, cuBLAS for axpy
// (cublasDaxpy) and triad (cublasDgeam on n x 1 matrices: a = 1 * b + s * c in one pass,
// reading b and c and writing a, the 3n words the Strata kernel moves; cublasDcopy +
// cublasDaxpy would move 5n). Without a GPU each one reports "skipped: no CUDA
// device ...".
#include <strata/strata.hpp>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"

namespace strata::bench {
namespace {

struct copy_k {
  template <class S>
  STRATA_FN void operator()(S const& self, index_t n, double const* a, double* c) const {
    for (auto i : self.elements(n)) c[i] = a[i];
  }
};
struct triad_k {
  template <class S>
  STRATA_FN void operator()(S const& self, index_t n, double s, double* a, double const* b,
                            double const* c) const {
    for (auto i : self.elements(n)) a[i] = b[i] + s * c[i];
  }
};
struct axpy_k {
  template <class S>
  STRATA_FN void operator()(S const& self, index_t n, double s, double const* x, double* y) const {
    for (auto i : self.elements(n)) y[i] = s * x[i] + y[i];
  }
};

void cuda_ok(cudaError_t e, char const* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void blas_ok(cublasStatus_t s, char const* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed with cuBLAS status " +
                             std::to_string(static_cast<int>(s)));
}

void run_cuda(context& ctx, std::string const& which) {
  auto gpus = ctx.rt().machine().slice(isa::cuda).descendants(place_type::device);
  if (gpus.empty()) {
    std::string reason = "no CUDA device";
    for (auto const& n : ctx.rt().notes())
      if (n.find("CUDA") != std::string::npos) reason = n;
    ctx.skip("cuda-" + which, reason);
    return;
  }
  place gpu = gpus.front();
  index_t const n = ctx.opts().quick ? index_t{1} << 22 : index_t{1} << 26;
  auto const count = static_cast<std::size_t>(n);
  auto a = allocate<double, cuda_space>(gpu, count);
  auto b = allocate<double, cuda_space>(gpu, count);
  auto c = allocate<double, cuda_space>(gpu, count);
  auto whole = [n](ptr<double, cuda_space> p) { return view<double, 1, cuda_space>(p, vec<1>{n}); };
  fill(whole(a), 1.0).wait();
  fill(whole(b), 2.0).wait();
  fill(whole(c), 0.5).wait();
  cuda_ok(cudaSetDevice(gpu.os_index()), "cudaSetDevice");
  cublasHandle_t blas = nullptr;
  blas_ok(cublasCreate(&blas), "cublasCreate");
  auto s = divide_work(gpu, n);
  double const scalar = 0.4, w = sizeof(double);
  double bytes = 0;
  std::function<void()> strata_side, peer_side;
  int const in = static_cast<int>(n);
  if (which == "copy") {
    bytes = 2 * w * static_cast<double>(n);
    strata_side = [&] { launch(gpu, s, copy_k{}, n, a, c).wait(); };
    peer_side = [&] {
      cuda_ok(cudaMemcpy(c.get(), a.get(), count * sizeof(double), cudaMemcpyDeviceToDevice),
              "cudaMemcpy");
      // A device-to-device cudaMemcpy may return before the copy ends; the Strata side
      // waits for its kernel, so this side must wait for its copy too.
      cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    };
  } else if (which == "triad") {
    bytes = 3 * w * static_cast<double>(n);
    strata_side = [&] { launch(gpu, s, triad_k{}, n, scalar, a, b, c).wait(); };
    peer_side = [&] {
      double const one = 1.0;
      blas_ok(cublasDgeam(blas, CUBLAS_OP_N, CUBLAS_OP_N, in, 1, &one, b.get(), in, &scalar,
                          c.get(), in, a.get(), in),
              "cublasDgeam");
      cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    };
  } else {
    bytes = 3 * w * static_cast<double>(n);
    strata_side = [&] { launch(gpu, s, axpy_k{}, n, scalar, c, b).wait(); };
    peer_side = [&] {
      blas_ok(cublasDaxpy(blas, in, &scalar, c.get(), 1, b.get(), 1), "cublasDaxpy");
      cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    };
  }
  auto [ts, tp] = compare(ctx.opts().repeats, strata_side, peer_side);
  cublasDestroy(blas);
  std::vector<double> check(1);
  copy(ptr<double>(check.data(), 0), (which == "axpy" ? b : a) + n / 3, 1).wait();
  deallocate(a);
  deallocate(b);
  deallocate(c);
  if (which == "triad" && std::abs(check[0] - (2.0 + scalar * 0.5)) > 1e-12)
    throw std::runtime_error("cuda-triad: wrong result");
  result r{"cuda-" + which,
           "cuda/" + gpu.name(),
           bytes,
           ts,
           which == "copy" ? "cudaMemcpy" : "cublas",
           tp};
  r.extra = {{"strata_gbps", bytes / ts / 1e9}, {"peer_gbps", bytes / tp / 1e9}};
  ctx.report(r);
}

registrar copy_r("cuda-copy", "BabelStream copy on a CUDA GPU vs cudaMemcpy",
                 [](context& c) { run_cuda(c, "copy"); });
registrar triad_r("cuda-triad", "BabelStream triad on a CUDA GPU vs cublasDgeam (a = b + s*c)",
                  [](context& c) { run_cuda(c, "triad"); });
registrar axpy_r("cuda-axpy", "y = s*x + y on a CUDA GPU vs cublasDaxpy",
                 [](context& c) { run_cuda(c, "axpy"); });

}  // namespace
}  // namespace strata::bench
