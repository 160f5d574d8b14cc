// Layout-changing copies (PARRAY §3.2, §5.2):
// - transpose: 4096^2 doubles copied between a type and its transposed type
//   ({A[1], A[0]}), against the textbook loop and a hand-written 64 x 64 blocked loop,
//   at 1 and every host thread.
// - layout-copy: a copy between two identical contiguous types (one maximal run) against
//   std::memcpy at 1 thread and std::memcpy in one chunk per OpenMP thread above that.
// - layout-kernel: a kernel reading a 2048^2 window of a larger array through its type,
//   out[i][j] = 2 * in[W(i, j)], with the compact strided_type (taken by value, affine
//   offsets) and with the array_type (the dimension tree walked per offset), against the
//   same loop with the window's index arithmetic written by hand (OpenMP).
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "layout/peer.hpp"

namespace strata::bench {
namespace {

void run_transpose(context& ctx) {
  index_t const n = ctx.opts().quick ? 1024 : 4096;
  array_type<double> const a{n, n};
  array_type<double> const t{a[1], a[0]};
  std::vector<double> src(static_cast<std::size_t>(n * n)), dst(src.size()), ref(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<double>(i);
  double const bytes = 2.0 * static_cast<double>(src.size()) * sizeof(double);
  for (int threads : ctx.thread_counts()) {
    auto where = on(ctx.cpus(threads), backend_id::threads);
    auto strata_side = [&] {
      copy(after{}, where, t.on(dst.data()), a.on(std::as_const(src).data())).wait();
    };
    auto check = [&] {
      layout_peer::transpose_naive(n, src.data(), ref.data(), threads);
      if (dst != ref) throw std::runtime_error("transpose benchmark: wrong result");
    };
    for (auto const& [peer, fn] :
         std::vector<std::pair<std::string, void (*)(std::ptrdiff_t, double const*, double*, int)>>{
             {"naive", layout_peer::transpose_naive},
             {"blocked", layout_peer::transpose_blocked}}) {
      auto [ts, tp] = compare(ctx.opts().repeats, strata_side,
                              [&, f = fn] { f(n, src.data(), ref.data(), threads); });
      check();
      result r{"transpose", "threads/" + std::to_string(threads), bytes,
               ts,          peer + "/" + std::to_string(threads), tp};
      r.extra = {{"threads", threads},
                 {"n", static_cast<double>(n)},
                 {"strata_gbps", bytes / ts / 1e9},
                 {"peer_gbps", bytes / tp / 1e9}};
      ctx.report(r);
    }
  }
}

void run_layout_copy(context& ctx) {
  index_t const n = ctx.opts().quick ? index_t{1} << 21 : index_t{1} << 25;  // doubles
  array_type<double> const a{dims{n / 1024, 32}, 32};
  array_type<double> const b{dims{n / 1024, 32}, 32};
  std::vector<double> src(static_cast<std::size_t>(n), 1.5), dst(src.size(), 0.0);
  double const bytes = static_cast<double>(n) * sizeof(double);
  for (int threads : ctx.thread_counts()) {
    auto where = on(ctx.cpus(threads), backend_id::threads);
    auto [ts, tp] = compare(
        ctx.opts().repeats,
        [&] { copy(after{}, where, b.on(dst.data()), a.on(std::as_const(src).data())).wait(); },
        [&] {
          if (threads == 1)
            layout_peer::copy_bytes(dst.data(), src.data(), static_cast<std::size_t>(bytes));
          else
            layout_peer::copy_bytes_parallel(dst.data(), src.data(),
                                             static_cast<std::size_t>(bytes), threads);
        });
    if (dst.front() != 1.5 || dst.back() != 1.5)
      throw std::runtime_error("layout-copy benchmark: wrong result");
    std::string const peer =
        threads == 1 ? "std::memcpy/1" : "omp-memcpy/" + std::to_string(threads);
    result r{"layout-copy", "threads/" + std::to_string(threads), bytes, ts, peer, tp};
    r.extra = {
        {"threads", threads}, {"strata_gbps", bytes / ts / 1e9}, {"peer_gbps", bytes / tp / 1e9}};
    ctx.report(r);
  }
}

// out[i][j] = 2 * in[w(i, j)] for the rows i of this thread, through any offset mapping.
struct window_kernel {
  template <class Self, class W>
  STRATA_FN void operator()(Self const& self, W w, double* out, double const* in) const {
    index_t const cols = w.extent(1);
    for (auto i : self.elements(w.extent(0))) {
      double* row = out + i * cols;
      for (index_t j = 0; j < cols; ++j) row[j] = 2.0 * in[w(i, j)];
    }
  }
};

void run_layout_kernel(context& ctx) {
  index_t const n = ctx.opts().quick ? 512 : 2048, big = n + 52, r0 = 3, c0 = 5;
  array_type<double> const whole{big, big};
  array_type<double> const win{n | disp(r0) | whole[0], n | disp(c0) | whole[1]};
  strided_type<double, host_space, 2> const compact(win);
  std::vector<double> in(static_cast<std::size_t>(big * big)), out(static_cast<std::size_t>(n * n));
  for (std::size_t k = 0; k < in.size(); ++k) in[k] = static_cast<double>(k % 1000);
  double const bytes = 2.0 * static_cast<double>(n * n) * sizeof(double);
  auto check = [&] {
    for (index_t i : {index_t{0}, n / 2, n - 1})
      for (index_t j : {index_t{0}, n - 1})
        if (out[static_cast<std::size_t>(i * n + j)] !=
            2.0 * in[static_cast<std::size_t>((i + r0) * big + j + c0)])
          throw std::runtime_error("layout-kernel benchmark: wrong result");
  };
  for (int threads : ctx.thread_counts()) {
    auto where = on(ctx.cpus(threads), backend_id::threads);
    auto shape = divide_work(where, n);
    auto peer = [&] { layout_peer::window_double(n, big, r0, c0, in.data(), out.data(), threads); };
    auto report = [&](std::string const& form, double ts, double tp) {
      check();
      result r{"layout-kernel",
               form + "/threads/" + std::to_string(threads),
               bytes,
               ts,
               "omp-index-arithmetic/" + std::to_string(threads),
               tp};
      r.extra = {{"threads", threads},
                 {"n", static_cast<double>(n)},
                 {"strata_gbps", bytes / ts / 1e9},
                 {"peer_gbps", bytes / tp / 1e9}};
      ctx.report(r);
    };
    auto [ts, tp] = compare(
        ctx.opts().repeats,
        [&] { launch(where, shape, window_kernel{}, compact, out.data(), in.data()).wait(); },
        peer);
    report("strided_type", ts, tp);
    auto [tt, tp2] = compare(
        ctx.opts().repeats,
        [&] { launch(where, shape, window_kernel{}, win, out.data(), in.data()).wait(); }, peer);
    report("array_type", tt, tp2);
  }
}

registrar transpose_bench("transpose",
                          "copy 4096^2 doubles to the transposed array type vs naive and "
                          "blocked loops",
                          run_transpose);
registrar layout_copy_bench("layout-copy",
                            "copy between two identical contiguous array types vs std::memcpy",
                            run_layout_copy);
registrar layout_kernel_bench("layout-kernel",
                              "a kernel reading a window through its compact strided_type and "
                              "through its array_type vs hand-written index arithmetic",
                              run_layout_kernel);

}  // namespace
}  // namespace strata::bench
