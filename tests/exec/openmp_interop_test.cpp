// The openmp backend shares the user's OpenMP runtime (Phalanx §IV-B): Strata launches
// from inside the user's parallel regions, and user regions inside Strata kernels.
#include <gtest/gtest.h>

#include <vector>

#include "exec/backends.hpp"

#if defined(_OPENMP)
#include <omp.h>

namespace strata {
namespace {

TEST(OpenMPInterop, LaunchFromInsideAUserParallelRegion) {
  runtime rt;
  auto where = on(rt.machine(), backend_id::openmp);
  std::vector<int> out(4 * 100, 0);
#pragma omp parallel num_threads(4)
  {
    int const me = omp_get_thread_num();
    // Nested in the user's region: OpenMP runs it with the team it allows (one thread
    // unless nesting is enabled), and it completes before the launch returns.
    auto e = launch(
        where, grid(100), [](auto const& self, int* o) { o[self.block_index()[0]] = 1; },
        out.data() + me * 100);
    EXPECT_TRUE(e.ready());
    e.wait();
  }
  for (int v : out) EXPECT_EQ(v, 1);
}

TEST(OpenMPInterop, UserOpenMPInsideAKernel) {
  runtime rt;
  std::vector<long> sums(8, 0);
  for (auto b : test::cpu_backends())
    launch(
        on(rt.machine(), b), grid(8),
        [](auto const& self, long* s) {
          long local = 0;
#pragma omp parallel for reduction(+ : local) num_threads(2)
          for (int i = 1; i <= 1000; ++i) local += i;
          s[self.block_index()[0]] = local;
        },
        sums.data())
        .wait();
  for (long s : sums) EXPECT_EQ(s, 500500);
}

TEST(OpenMPInterop, ThreadCountFollowsThePlace) {
  runtime rt;
  int const pus = static_cast<int>(rt.machine().slice(isa::host).processors().size());
  std::vector<int> seen(static_cast<std::size_t>(pus) + 1, 0);
  launch(
      on(rt.machine(), backend_id::openmp), grid(64),
      [](auto const&, int* s) { s[omp_get_num_threads()] = 1; }, seen.data())
      .wait();
  EXPECT_EQ(seen[static_cast<std::size_t>(pus)], 1);
  std::vector<int> one(2, 0);
  launch(
      on(rt.machine().processors().front(), backend_id::openmp), grid(8),
      [](auto const&, int* s) { s[omp_get_num_threads()] = 1; }, one.data())
      .wait();
  EXPECT_EQ(one[1], 1);
}

}  // namespace
}  // namespace strata
#endif
