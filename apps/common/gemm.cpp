#include "gemm.hpp"

#include "places.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace apps {

namespace {

index_t round_up(index_t x, index_t m) {
  return (x + m - 1) / m * m;
}

}  // namespace

template <class T>
strata::array_type<T> row_major(index_t m, index_t n, index_t ld) {
  if (m < 1 || n < 1 || ld < n)
    throw strata::invalid_argument("row_major: " + std::to_string(m) + " x " + std::to_string(n) +
                                   " with leading dimension " + std::to_string(ld) +
                                   "; expected positive extents and ld >= columns");
  if (ld == n) return strata::array_type<T>{m, n};
  strata::array_type<T> whole{m, ld};
  return strata::array_type<T>{m | whole[0], n | whole[1]};
}

template <class T>
gemm_operand<T> gemm_operand_of(strata::array_type<std::remove_const_t<T>> const& type, T* data,
                                char const* name) {
  if (type.rank() != 2)
    throw strata::invalid_argument(std::string("gemm: ") + name + " has rank " +
                                   std::to_string(type.rank()) +
                                   "; expected a matrix (two top-level dimensions)");
  auto const w = type.whole_strides();
  if (!w.ok)
    throw strata::invalid_argument(
        std::string("gemm: ") + name + "'s type (" + std::to_string(type.extent(0)) + " x " +
        std::to_string(type.extent(1)) + ") is not strided; expected offsets i * rs + j * cs");
  return {data + w.form.base, type.extent(0), type.extent(1), w.form.axes[0].stride,
          w.form.axes[1].stride};
}

std::string gemm_plan::describe() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + " tiles, " + std::to_string(threads) +
         "x" + std::to_string(threads) +
         (device ? " threads (device tiling)" : " thread (CPU tiling)");
}

template <class T>
gemm_plan plan_gemm(strata::target const& where, index_t m, index_t n) {
  gemm_plan p;
  if (is_device(where.where)) return device_gemm_plan<T>();
  using tiling = gemm_cpu_tiling<T>;
  // Host processors only: a machine-wide place also holds sim devices' units.
  auto const threads = where.backend == strata::backend_id::serial
                           ? std::size_t{1}
                           : where.where.slice(strata::isa::host).processors().size();
  // C is cut into blocks of equal size (to a register tile): as few as the largest tile
  // allows, then the longer side into twice as many parts until there are two blocks per
  // thread (one for one thread). Equal blocks: a 1032-row C in tiles of 1024 rows would leave an
  // 8-row block next to a 1024-row one.
  //
  // Two blocks per thread, though each block packs its own slices of A and B (one block
  // per thread packs less: n = 256 dgemm ran at 109-110 GFLOP/s by CPU time on one core
  // in 128 x 256 blocks, 102-104 in 128 x 128): on the shared VM the pool's worker often
  // shares its PU with another process and runs at half speed, and then its one block of
  // two ends last (n = 256 on 2 threads: 306-358 us with 128 x 256 blocks, 220-238 us with
  // 128 x 128, where the waiting thread takes three of the four). Splitting the longer
  // side, not the rows first: 64 x 256 blocks took 271-310 us there.
  index_t row_parts = (m + tiling::max_bm - 1) / tiling::max_bm;
  index_t col_parts = (n + tiling::max_bn - 1) / tiling::max_bn;
  auto tile = [](index_t extent, index_t parts, index_t r) {
    return round_up((extent + parts - 1) / parts, r);
  };
  p.bm = tile(m, row_parts, tiling::rm);
  p.bn = tile(n, col_parts, tiling::rn);
  index_t const wanted = threads > 1 ? 2 * static_cast<index_t>(threads) : 1;
  while (((m + p.bm - 1) / p.bm) * ((n + p.bn - 1) / p.bn) < wanted) {
    if (p.bn >= p.bm && p.bn > tiling::rn * 4)
      p.bn = tile(n, col_parts *= 2, tiling::rn);
    else if (p.bm > tiling::rm * 2)
      p.bm = tile(m, row_parts *= 2, tiling::rm);
    else
      break;
  }
  return p;
}

template <class T>
void gemm(strata::target const& where, T alpha, strata::array_view<T const, strata::host_space> a,
          strata::array_view<T const, strata::host_space> b, T beta,
          strata::array_view<T, strata::host_space> c) {
  gemm_problem<T> g;
  g.alpha = alpha;
  g.beta = beta;
  g.a = gemm_operand_of<T const>(a.layout(), a.data().get(), "A");
  g.b = gemm_operand_of<T const>(b.layout(), b.data().get(), "B");
  g.c = gemm_operand_of<T>(c.layout(), c.data().get(), "C");
  g.m = g.c.rows;
  g.n = g.c.cols;
  g.k = g.a.cols;
  if (g.a.rows != g.m || g.b.rows != g.k || g.b.cols != g.n)
    throw strata::invalid_argument(
        "gemm: A is " + std::to_string(g.a.rows) + " x " + std::to_string(g.a.cols) + ", B " +
        std::to_string(g.b.rows) + " x " + std::to_string(g.b.cols) + ", C " + std::to_string(g.m) +
        " x " + std::to_string(g.n) + "; expected A m x k, B k x n, C m x n");
  gemm_plan const p = plan_gemm<T>(where, g.m, g.n);
  if (!p.device) {
    using tiling = gemm_cpu_tiling<T>;
    // The caller waits anyway: it takes the first PU's share (at one thread on the first
    // PU, the whole product) instead of waking a worker for it.
    strata::launch_and_wait(where, gemm_shape<tiling>(p, g.m, g.n), gemm_kernel<tiling>{}, g);
    return;
  }
  // A device: the operands go to its memory as tight row-major arrays (the layout copy
  // turns any strided type into that), C comes back into C's own type.
  using tiling = gemm_device_tiling<T>;
  auto const& d = where.where;
  using dev_type = strata::array_type<T, strata::sim_space>;
  dev_type const at{g.m, g.k}, bt{g.k, g.n}, ct{g.m, g.n};
  strata::buffer<T, 1, strata::sim_space> da(d, static_cast<std::size_t>(g.m * g.k)),
      db(d, static_cast<std::size_t>(g.k * g.n)), dc(d, static_cast<std::size_t>(g.m * g.n));
  strata::event copies[] = {
      strata::copy(at.on(da.data()), a), strata::copy(bt.on(db.data()), b),
      strata::copy(ct.on(dc.data()),
                   strata::array_view<T const, strata::host_space>(c.data(), c.layout()))};
  strata::wait_all({copies[0], copies[1], copies[2]});
  gemm_problem<T> dg = g;
  dg.a = {da.data().get(), g.m, g.k, g.k, 1};
  dg.b = {db.data().get(), g.k, g.n, g.n, 1};
  dg.c = {dc.data().get(), g.m, g.n, g.n, 1};
  strata::launch(where, gemm_shape<tiling>(p, g.m, g.n), gemm_kernel<tiling>{}, dg).wait();
  strata::copy(c, ct.on(strata::ptr<T const, strata::sim_space>(dc.data()))).wait();
}

template <class T>
void gemm(strata::target const& where, index_t m, index_t n, index_t k, T alpha, T const* a,
          index_t lda, T const* b, index_t ldb, T beta, T* c, index_t ldc) {
  if (m < 0 || n < 0 || k < 0)
    throw strata::invalid_argument("gemm: extents " + std::to_string(m) + " x " +
                                   std::to_string(n) + " x " + std::to_string(k) +
                                   "; expected m, n, k >= 0");
  if (m == 0 || n == 0) return;
  if (k == 0) {
    // No product (an array type has no empty dimension): C = beta C, as BLAS does,
    // without reading C when beta is 0.
    if (ldc < n) row_major<T>(m, n, ldc);  // the error for a short leading dimension
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    return;
  }
  gemm<T>(where, alpha, row_major<T>(m, k, lda).on(a), row_major<T>(k, n, ldb).on(b), beta,
          row_major<T>(m, n, ldc).on(c));
}

std::vector<index_t> rows_to_check(index_t m, index_t samples) {
  std::vector<index_t> rows;
  if (m <= samples) {
    for (index_t i = 0; i < m; ++i) rows.push_back(i);
    return rows;
  }
  for (index_t s = 0; s < samples; ++s) rows.push_back(s * (m - 1) / (samples - 1));
  return rows;
}

template <class T>
double gemm_error(index_t m, index_t n, index_t k, T alpha, std::vector<T> const& a,
                  std::vector<T> const& b, T beta, std::vector<T> const& c0,
                  std::vector<T> const& c, std::vector<index_t> const& rows) {
  (void)m;
  double worst = 0;
  std::vector<long double> sum(static_cast<std::size_t>(n)), mag(sum.size());
  for (index_t i : rows) {
    std::fill(sum.begin(), sum.end(), 0.0L);
    std::fill(mag.begin(), mag.end(), 0.0L);
    for (index_t p = 0; p < k; ++p) {
      long double const x = a[static_cast<std::size_t>(i * k + p)];
      T const* brow = b.data() + p * n;
      for (index_t j = 0; j < n; ++j) {
        sum[static_cast<std::size_t>(j)] += x * brow[j];
        mag[static_cast<std::size_t>(j)] += std::fabs(x * brow[j]);
      }
    }
    for (index_t j = 0; j < n; ++j) {
      auto const ij = static_cast<std::size_t>(i * n + j);
      long double const ref = static_cast<long double>(alpha) * sum[static_cast<std::size_t>(j)] +
                              static_cast<long double>(beta) * c0[ij];
      long double const scale =
          std::fabs(static_cast<long double>(alpha)) * mag[static_cast<std::size_t>(j)] +
          std::fabs(static_cast<long double>(beta) * c0[ij]);
      long double const diff = std::fabs(static_cast<long double>(c[ij]) - ref);
      if (!(diff <= 0)) {
        // NaN or a difference: relative to the scale (a zero scale with a difference is
        // an infinite error).
        double const e = scale > 0 ? static_cast<double>(diff / scale) : HUGE_VAL;
        worst = std::isnan(e) ? HUGE_VAL : std::max(worst, e);
      }
    }
  }
  return worst;
}

#define APPS_GEMM_INSTANTIATE(T)                                                                   \
  template strata::array_type<T> row_major<T>(index_t, index_t, index_t);                          \
  template gemm_operand<T> gemm_operand_of<T>(strata::array_type<T> const&, T*, char const*);      \
  template gemm_operand<T const> gemm_operand_of<T const>(strata::array_type<T> const&, T const*,  \
                                                          char const*);                            \
  template gemm_plan plan_gemm<T>(strata::target const&, index_t, index_t);                        \
  template void gemm<T>(strata::target const&, T, strata::array_view<T const, strata::host_space>, \
                        strata::array_view<T const, strata::host_space>, T,                        \
                        strata::array_view<T, strata::host_space>);                                \
  template void gemm<T>(strata::target const&, index_t, index_t, index_t, T, T const*, index_t,    \
                        T const*, index_t, T, T*, index_t);                                        \
  template double gemm_error<T>(index_t, index_t, index_t, T, std::vector<T> const&,               \
                                std::vector<T> const&, T, std::vector<T> const&,                   \
                                std::vector<T> const&, std::vector<index_t> const&);
APPS_GEMM_INSTANTIATE(float)
APPS_GEMM_INSTANTIATE(double)
#undef APPS_GEMM_INSTANTIATE

}  // namespace apps
