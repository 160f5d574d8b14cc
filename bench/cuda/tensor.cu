// Tensors on a CUDA GPU (Ripple §4.1, §5.2, Listing 7; issue 15's tensor-saxpy and
// tensor-stencil, on the GPU backend): the iterator kernels over a tensor's blocks against
// the raw-pointer kernels a CUDA user would launch on plain device buffers.
// - cuda-tensor-saxpy: y = a x + y over 2^26 floats, the tensor in 1 and in 4 partitions
//   on one GPU (one launch per block), vs one raw launch.
// - cuda-tensor-stencil: one 5-point Jacobi sweep over 4096^2 doubles with padding 1:
//   load_padding (constant edges) + the iterator kernel, vs a raw kernel over a padded
//   array whose edge never changes (so the Strata side does the padding's work on top).
// Without a GPU each one reports "skipped: no CUDA device ...".
#include <strata/strata.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.hpp"
#include "tensor/kernels.hpp"

namespace strata::bench {
namespace {

// Interior cells of an (n + 2)^2 padded array, row-major, one cell per element.
struct jacobi_raw {
  template <class S>
  STRATA_FN void operator()(S const& self, index_t n, double const* in, double* out) const {
    index_t const w = n + 2;
    for (auto k : self.elements(n * n)) {
      index_t const i = k / n + 1, j = k % n + 1;
      out[i * w + j] = 0.25 * (in[(i - 1) * w + j] + in[(i + 1) * w + j] + in[i * w + j - 1] +
                               in[i * w + j + 1]);
    }
  }
};

bool gpu_or_skip(context& ctx, char const* name, place& gpu) {
  auto gpus = ctx.rt().machine().slice(isa::cuda).descendants(place_type::device);
  if (!gpus.empty()) {
    gpu = gpus.front();
    return true;
  }
  std::string reason = "no CUDA device";
  for (auto const& n : ctx.rt().notes())
    if (n.find("CUDA") != std::string::npos) reason = n;
  ctx.skip(name, reason);
  return false;
}

void run_saxpy(context& ctx) {
  place gpu;
  if (!gpu_or_skip(ctx, "cuda-tensor-saxpy", gpu)) return;
  index_t const n = ctx.opts().quick ? index_t{1} << 22 : index_t{1} << 26;
  float const a = 0.5f;
  auto rx = allocate<float, cuda_space>(gpu, static_cast<std::size_t>(n));
  auto ry = allocate<float, cuda_space>(gpu, static_cast<std::size_t>(n));
  fill(view<float, 1, cuda_space>(rx, vec<1>{n}), 1.0f).wait();
  fill(view<float, 1, cuda_space>(ry, vec<1>{n}), 1.0f).wait();
  auto shape = divide_work(gpu, n);
  for (std::size_t parts : {1, 4}) {
    tensor_spec<1> spec{.extent = {n}, .partitions = {parts}};
    tensor<float, 1> x(std::vector<place>{gpu}, spec), y(std::vector<place>{gpu}, spec);
    fill(x, 1.0f).wait();
    fill(y, 1.0f).wait();
    auto [ts, tp] = compare(
        ctx.opts().repeats, [&] { for_each_cell(saxpy_cell{}, x, y, a).wait(); },
        [&] { launch(gpu, shape, saxpy_raw{}, a, n, rx, ry).wait(); });
    std::vector<float> out(static_cast<std::size_t>(n));
    copy(view<float, 1>(ptr<float, host_space>(out.data(), 0), vec<1>{n}), y).wait();
    for (std::size_t i = 0; i < out.size(); i += 4099)
      if (!(out[i] > 1.0f) || !std::isfinite(out[i]))
        throw std::runtime_error("cuda-tensor-saxpy: computed " + std::to_string(out[i]));
    result r{"cuda-tensor-saxpy", "cuda/" + gpu.name() + "/partitions" + std::to_string(parts),
             double(n),           ts,
             "raw-launch",        tp};
    r.extra = {{"strata_gbps", 12.0 * double(n) / ts / 1e9},
               {"peer_gbps", 12.0 * double(n) / tp / 1e9}};
    ctx.report(r);
  }
  deallocate(rx);
  deallocate(ry);
}

void run_stencil(context& ctx) {
  place gpu;
  if (!gpu_or_skip(ctx, "cuda-tensor-stencil", gpu)) return;
  index_t const n = ctx.opts().quick ? 1024 : 4096;
  auto const padded = static_cast<std::size_t>((n + 2) * (n + 2));
  auto rin = allocate<double, cuda_space>(gpu, padded);
  auto rout = allocate<double, cuda_space>(gpu, padded);
  fill(view<double, 1, cuda_space>(rin, vec<1>{index_t(padded)}), 1.0).wait();
  fill(view<double, 1, cuda_space>(rout, vec<1>{index_t(padded)}), 1.0).wait();
  tensor_spec<2> spec{.extent = {n, n}, .padding = 1};
  tensor<double, 2> a(std::vector<place>{gpu}, spec), b(std::vector<place>{gpu}, spec);
  set_boundary(a, boundary::constant<double>{1.0});
  fill(a, 1.0).wait();
  fill(b, 0.0).wait();
  auto shape = divide_work(gpu, n * n);
  auto [ts, tp] = compare(
      ctx.opts().repeats,
      [&] { for_each_cell(jacobi_cell{}, concurrent_padded_access(a), b).wait(); },
      [&] { launch(gpu, shape, jacobi_raw{}, n, rin, rout).wait(); });
  // Every input is 1, so every output is 1 on both sides.
  std::vector<double> out(static_cast<std::size_t>(n * n));
  copy(view<double, 2>(ptr<double, host_space>(out.data(), 0), vec<2>{n, n}), b).wait();
  std::vector<double> raw(padded);
  copy(ptr<double>(raw.data(), 0), rout, padded).wait();
  for (std::size_t i = 0; i < out.size(); i += 4097)
    if (out[i] != 1.0 || raw[i + static_cast<std::size_t>(n) + 3] != 1.0)
      throw std::runtime_error("cuda-tensor-stencil: wrong result at cell " + std::to_string(i));
  deallocate(rin);
  deallocate(rout);
  result r{"cuda-tensor-stencil", "cuda/" + gpu.name() + "/n" + std::to_string(n),
           double(n) * double(n), ts,
           "raw-launch",          tp};
  r.extra = {{"strata_gcells", double(n) * double(n) / ts / 1e9},
             {"peer_gcells", double(n) * double(n) / tp / 1e9}};
  ctx.report(r);
}

registrar saxpy_r("cuda-tensor-saxpy",
                  "tensor saxpy (iterator kernel per block) on a CUDA GPU vs a raw launch",
                  run_saxpy);
registrar stencil_r("cuda-tensor-stencil",
                    "tensor Jacobi sweep with its padding load on a CUDA GPU vs a raw kernel",
                    run_stencil);

}  // namespace
}  // namespace strata::bench
