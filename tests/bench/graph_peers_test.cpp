// The graph benchmarks' peers (bench/graph/peers.cpp) run every task of their workload
// exactly once, so their timings compare like with like.
#include "graph/peers.hpp"

#include <gtest/gtest.h>

namespace gp = strata::bench::graph_peers;

namespace {

struct peer_case {
  gp::shape shape;
  std::size_t size;
};

void check(std::unique_ptr<gp::peer> p, peer_case c) {
  ASSERT_TRUE(p);
  for (int round = 0; round < 2; ++round) {  // built once, run twice
    gp::reset_checksum();
    p->run();
    EXPECT_EQ(gp::checksum(), gp::expected_checksum(gp::task_count(c.shape, c.size)))
        << p->name() << " round " << round;
  }
}

std::vector<peer_case> const cases{{gp::shape::chain, 500},
                                   {gp::shape::tree, 10},
                                   {gp::shape::wavefront, 24},
                                   {gp::shape::fanout, 1000}};

}  // namespace

TEST(GraphPeers, OmpRunsEveryTaskOnce) {
  for (auto c : cases)
    for (int t : {1, 2}) check(gp::make_omp(c.shape, c.size, t), c);
}

TEST(GraphPeers, OmpDependRunsEveryTaskOnce) {
  for (auto c : cases)
    for (int t : {1, 2}) {
      auto p = gp::make_omp_depend(c.shape, c.size, t);
      bool const fork_join = c.shape == gp::shape::tree || c.shape == gp::shape::fanout;
      ASSERT_EQ(bool(p), fork_join);  // chain and wavefront: make_omp uses depend already
      if (p) check(std::move(p), c);
    }
}

TEST(GraphPeers, TbbRunsEveryTaskOnce) {
  if (!gp::make_tbb(gp::shape::chain, 1, 1)) GTEST_SKIP() << "built without oneTBB";
  for (auto c : cases)
    for (int t : {1, 2}) check(gp::make_tbb(c.shape, c.size, t), c);
}

TEST(GraphPeers, TaskCounts) {
  EXPECT_EQ(gp::task_count(gp::shape::chain, 7), 7u);
  EXPECT_EQ(gp::task_count(gp::shape::tree, 3), 7u);
  EXPECT_EQ(gp::task_count(gp::shape::wavefront, 5), 25u);
  EXPECT_EQ(gp::task_count(gp::shape::fanout, 5), 7u);
}
