// The applications' kernels (apps/common/spmv.hpp, bfs_kernels.hpp) compiled by nvcc and,
// on a machine with a GPU, run there on device memory against the host's results. Without
// a GPU the tests report skipped with the runtime's reason (the compile is the check).
#include "bfs_kernels.hpp"
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

}  // namespace
