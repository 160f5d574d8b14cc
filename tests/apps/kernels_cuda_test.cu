// The applications' kernels (apps/common/spmv.hpp, bfs_kernels.hpp, gemm_kernel.hpp)
// compiled by nvcc and,
// on a machine with a GPU, run there on device memory against the host's results. Without
// a GPU the tests report skipped with the runtime's reason (the compile is the check).
#include "bfs_kernels.hpp"
#include "gemm.hpp"
#include "sparse.hpp"
#include "spmv.hpp"

#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

class AppsCuda : public testing::Test {
 protected:
  strata::runtime rt;
  std::vector<strata::place> gpus =
      rt.machine().slice(strata::isa::cuda).descendants(strata::place_type::device);
  void SetUp() override {
    if (gpus.empty()) {
      std::string why = "no CUDA device";
      for (auto const& n : rt.notes())
        if (n.find("CUDA") != std::string::npos) why = n;
      GTEST_SKIP() << why;
    }
  }
  template <class T>
  strata::ptr<T, strata::cuda_space> to_device(std::vector<T> const& h) {
    auto d = strata::allocate<T, strata::cuda_space>(gpus.front(), h.size());
    strata::copy(d, strata::ptr<T const>(h.data(), 0), h.size()).wait();
    return d;
  }
  template <class T>
  std::vector<T> to_host(strata::ptr<T, strata::cuda_space> d, std::size_t n) {
    std::vector<T> h(n);
    strata::copy(strata::ptr<T>(h.data(), 0), d, n).wait();
    return h;
  }
};

TEST_F(AppsCuda, SpmvKernelMatchesTheReference) {
  auto a = apps::laplacian_2d(37, 29);
  std::vector<double> x(static_cast<std::size_t>(a.cols)), want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 5);
  apps::reference_spmv(a, x.data(), want.data());
  // One row per chunk: a GPU thread per row.
  std::vector<apps::csr_index> split(static_cast<std::size_t>(a.rows) + 1);
  for (std::size_t r = 0; r < split.size(); ++r) split[r] = static_cast<apps::csr_index>(r);
  auto ds = to_device(split), dr = to_device(a.row_ptr), dc = to_device(a.col);
  auto dv = to_device(a.val), dx = to_device(x), dy = to_device(std::vector<double>(want.size()));
  strata::launch(gpus.front(), strata::divide_work(gpus.front(), a.rows), apps::csr_spmv_kernel{},
                 strata::index_t{a.rows}, ds, dr, dc, dv, dx, dy)
      .wait();
  EXPECT_LE(apps::max_relative_difference(to_host(dy, want.size()), want), 1e-13);
  for (auto p : {ds, dr, dc}) strata::deallocate(p);
  for (auto p : {dv, dx, dy}) strata::deallocate(p);
}

// The encoded kernels (value-indexed, with and without column offsets) on a GPU, over
// rows [first, rows) of the matrix as partitioned_spmv's device parts run them: row_ptr
// rebased, the encoded arrays of those rows only.
TEST_F(AppsCuda, EncodedSpmvKernelsMatchTheReference) {
  auto a = apps::laplacian_2d(37, 29);
  std::vector<double> x(static_cast<std::size_t>(a.cols)), want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 5);
  apps::reference_spmv(a, x.data(), want.data());
  apps::csr_index const first = 100, rows = a.rows - first;
  auto e = apps::encode_rows(a, first, a.rows);
  ASSERT_EQ(e.encoding, apps::spmv_encoding::value_indexed_offsets);
  auto const k0 = a.row_ptr[static_cast<std::size_t>(first)];
  std::vector<apps::csr_index> split(static_cast<std::size_t>(rows) + 1), row_ptr(split.size());
  for (std::size_t r = 0; r < split.size(); ++r) {
    split[r] = static_cast<apps::csr_index>(r);
    row_ptr[r] = a.row_ptr[static_cast<std::size_t>(first) + r] - k0;
  }
  std::vector<apps::csr_index> col(a.col.begin() + k0, a.col.end());
  auto ds = to_device(split), dr = to_device(row_ptr), dc = to_device(col);
  auto di = to_device(e.value_index);
  auto doff = to_device(e.offset);
  auto dt = to_device(e.values), dx = to_device(x);
  for (bool offsets : {false, true}) {
    auto dy = to_device(std::vector<double>(static_cast<std::size_t>(rows)));
    auto work = strata::divide_work(gpus.front(), rows);
    if (offsets)
      strata::launch(gpus.front(), work, apps::csr_vi_offsets_spmv_kernel{}, strata::index_t{rows},
                     ds, dr, doff, di, dt, first, dx, dy)
          .wait();
    else
      strata::launch(gpus.front(), work, apps::csr_vi_spmv_kernel{}, strata::index_t{rows}, ds, dr,
                     dc, di, dt, dx, dy)
          .wait();
    auto y = to_host(dy, static_cast<std::size_t>(rows));
    std::vector<double> tail(want.begin() + first, want.end());
    EXPECT_LE(apps::max_relative_difference(y, tail), 1e-13) << "offsets " << offsets;
    strata::deallocate(dy);
  }
  for (auto p : {ds, dr, dc}) strata::deallocate(p);
  strata::deallocate(di);
  strata::deallocate(doff);
  for (auto p : {dt, dx}) strata::deallocate(p);
}

TEST_F(AppsCuda, BottomUpLevelMatchesTheHost) {
  // A ring of 300 vertices, frontier {0}: the next level is {1, 299}.
  apps::vertex_id const n = 300;
  std::vector<std::int64_t> row_ptr(n + 1);
  std::vector<apps::vertex_id> adj;
  for (apps::vertex_id v = 0; v < n; ++v) {
    adj.push_back((v + n - 1) % n);
    adj.push_back((v + 1) % n);
    row_ptr[static_cast<std::size_t>(v) + 1] = static_cast<std::int64_t>(adj.size());
  }
  strata::index_t const words = (n + 63) / 64;
  std::vector<apps::bfs_word> frontier(words, 0), visited(words, 0);
  frontier[0] = visited[0] = 1;
  auto dr = to_device(row_ptr);
  auto da = to_device(adj);
  auto df = to_device(frontier), dvis = to_device(visited),
       dnext = to_device(std::vector<apps::bfs_word>(words, 0));
  auto dp = to_device(std::vector<apps::vertex_id>(n, -1));
  auto dl = to_device(std::vector<std::int32_t>(n, -1));
  auto dcount = to_device(std::vector<std::int64_t>(2, 0));
  strata::launch(gpus.front(), strata::divide_work(gpus.front(), words),
                 apps::bfs_bottom_up_kernel{}, strata::index_t{0}, words, n, dr, da, df, dvis,
                 dnext, dp, dl, std::int32_t{0}, dcount)
      .wait();
  auto parent = to_host(dp, n);
  auto counts = to_host(dcount, 2);
  EXPECT_EQ(parent[1], 0);
  EXPECT_EQ(parent[299], 0);
  EXPECT_EQ(parent[2], -1);
  EXPECT_EQ(counts[0], 2);
  EXPECT_EQ(counts[1], 4);
  strata::deallocate(dr);
  strata::deallocate(da);
  for (auto p : {df, dvis, dnext}) strata::deallocate(p);
  strata::deallocate(dp);
  strata::deallocate(dl);
  strata::deallocate(dcount);
}

template <class T>
strata::ptr<T, strata::cuda_space> to_device_of(strata::place const& gpu, std::vector<T> const& h) {
  auto d = strata::allocate<T, strata::cuda_space>(gpu, h.size());
  strata::copy(d, strata::ptr<T const>(h.data(), 0), h.size()).wait();
  return d;
}

// The one GEMM kernel source with the device tiling (16 x 16 threads, 4 x 4 register
// tiles, shared-memory panels) against the host's CPU tiling of the same kernel.
template <class T>
void gemm_matches_the_host(strata::place const& gpu, strata::place const& host) {
  strata::index_t const m = 130, n = 67, k = 301;  // edges of every tile level
  std::vector<T> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)),
      c(static_cast<std::size_t>(m * n));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<T>(static_cast<int>(i % 7) - 3);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<T>(static_cast<int>(i % 5) - 2);
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = static_cast<T>(i % 3);
  std::vector<T> want = c;
  apps::gemm<T>(strata::on(host, strata::backend_id::serial), m, n, k, T(2), a.data(), k, b.data(),
                n, T(0.5), want.data(), n);
  auto da = to_device_of(gpu, a), db = to_device_of(gpu, b), dc = to_device_of(gpu, c);
  using tiling = apps::gemm_device_tiling<T>;
  apps::gemm_problem<T> g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = T(2);
  g.beta = T(0.5);
  g.a = {da.get(), m, k, k, 1};
  g.b = {db.get(), k, n, n, 1};
  g.c = {dc.get(), m, n, n, 1};
  strata::launch(gpu, apps::gemm_shape<tiling>(apps::device_gemm_plan<T>(), m, n),
                 apps::gemm_kernel<tiling>{}, g)
      .wait();
  std::vector<T> got(c.size());
  strata::copy(strata::ptr<T>(got.data(), 0), dc, got.size()).wait();
  // Small integers: every partial sum is exact in both precisions.
  EXPECT_EQ(got, want);
  strata::deallocate(da);
  strata::deallocate(db);
  strata::deallocate(dc);
}

TEST_F(AppsCuda, GemmKernelMatchesTheHost) {
  auto host = rt.machine().slice(strata::isa::host);
  gemm_matches_the_host<double>(gpus.front(), host);
  gemm_matches_the_host<float>(gpus.front(), host);
}

}  // namespace
