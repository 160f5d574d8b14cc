// Layout-changing copies (PARRAY §3.2, §5.2):
// - transpose: 4096^2 doubles copied between a type and its transposed type
//   ({A[1], A[0]}), against the textbook loop and a hand-written 64 x 64 blocked loop,
//   at 1 and every host thread.
// - layout-copy: a copy between two identical contiguous types (one maximal run) against
//   std::memcpy at 1 thread and std::memcpy in one chunk per OpenMP thread above that.
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

registrar transpose_bench("transpose",
                          "copy 4096^2 doubles to the transposed array type vs naive and "
                          "blocked loops",
                          run_transpose);
registrar layout_copy_bench("layout-copy",
                            "copy between two identical contiguous array types vs std::memcpy",
                            run_layout_copy);

}  // namespace
}  // namespace strata::bench
