// Shapes, work division, vec arithmetic: the host-side checks of the execution layer.
#include <gtest/gtest.h>

#include <limits>

#include "exec/backends.hpp"

namespace strata {
namespace {

TEST(Vec, LinearizeRoundTrips) {
  vec<3> ext{3, 4, 5};
  for (index_t i = 0; i < ext.product(); ++i) EXPECT_EQ(linearize(delinearize(i, ext), ext), i);
  EXPECT_EQ(linearize(vec<3>{1, 2, 3}, ext), 1 * 20 + 2 * 5 + 3);
  vec<1> one{41};
  index_t as_int = one;
  EXPECT_EQ(as_int, 41);
  EXPECT_EQ((vec<2>{2, 3} * vec<2>{4, 5}), (vec<2>{8, 15}));
}

TEST(Shape, BuildsLevels) {
  auto s = grid(10, 20).block(2, 4).elements(1, 8);
  EXPECT_EQ(s.blocks(), 200);
  EXPECT_EQ(s.threads_per_block(), 8);
  EXPECT_EQ(s.global_element_extent(), (vec<2>{20, 640}));
  auto p = grid(4).block(parallel, 64).scratchpad(1024);
  static_assert(std::is_same_v<decltype(p)::block_policy, parallel_group>);
  static_assert(std::is_same_v<decltype(s)::block_policy, streaming_group>);
  EXPECT_EQ(p.scratchpad_bytes(), 1024u);
}

void expect_error(auto&& make, std::string const& mentions) {
  try {
    make();
    FAIL() << "no error, expected one mentioning " << mentions;
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find(mentions), std::string::npos) << e.what();
  }
}

TEST(Shape, BadExtentsNameLevelValueAndLimit) {
  expect_error([] { grid(0); }, "grid extent 0 in dimension 0");
  expect_error([] { grid(4, -2); }, "grid extent -2 in dimension 1");
  expect_error([] { grid(4).block(0); }, "block extent 0");
  expect_error([] { grid(4).block(parallel, -1); }, "block extent -1");
  expect_error([] { grid(4).elements(0); }, "elements extent 0");
  expect_error([] { grid(std::numeric_limits<std::uint64_t>::max()); },
               "exceeds the index type's limit");
  expect_error([] { grid(1ll << 40).block(1 << 20).elements(1 << 10); },
               "grid x block x elements overflows");
  expect_error([] { grid(1ll << 40, 1ll << 40); }, "overflows");
}

class WorkDivision : public test::on_every_backend {};

TEST_P(WorkDivision, CoversTheProblemWithSimdRanges) {
  for (index_t n : {1, 15, 16, 1000, 1 << 20, 12345678}) {
    auto s = divide_work(here(), n);
    EXPECT_GE(s.global_element_extent()[0], n);
    EXPECT_LT(s.global_element_extent()[0] - n, s.element_extent()[0])
        << "at most one partial block";
    EXPECT_EQ(s.threads_per_block(), 1) << "CPU streaming: one thread per block";
    EXPECT_EQ(s.element_extent()[0] % 16, 0) << "SIMD-sized element ranges";
  }
  auto big = divide_work(here(), 1 << 24);
  EXPECT_GE(big.blocks(), 16) << "enough blocks for dynamic balance";
  auto two = divide_work(here(), vec<2>{300, 1000});
  EXPECT_GE(two.global_element_extent()[0], 300);
  EXPECT_GE(two.global_element_extent()[1], 1000);
  // 2-D and 3-D problems get about the same number of blocks as 1-D ones of the same size
  // (whole rows, several per block), not one block per 16 cells of a row.
  for (auto p : {vec<2>{1000, 1000}, vec<2>{37, 5000}, vec<2>{5000, 3}}) {
    auto s = divide_work(here(), p);
    EXPECT_GE(s.global_element_extent()[0], p[0]);
    EXPECT_GE(s.global_element_extent()[1], p[1]);
    EXPECT_LT(s.global_element_extent()[0] - p[0], s.element_extent()[0]);
    EXPECT_LE(s.blocks(), 4 * divide_work(here(), p.product()).blocks()) << p[0] << "x" << p[1];
  }
  auto three = divide_work(here(), vec<3>{64, 64, 64});
  EXPECT_GE(three.global_element_extent()[1], 64);
  EXPECT_LE(three.blocks(), 4 * divide_work(here(), 64 * 64 * 64).blocks());
  auto par = divide_work<parallel_group>(here(), 1000);
  EXPECT_EQ(par.threads_per_block(), 64);
  EXPECT_GE(par.global_element_extent()[0], 1000);
  EXPECT_THROW(divide_work(here(), 0), invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Cpu, WorkDivision, testing::ValuesIn(test::cpu_backends()),
                         test::backend_name);

}  // namespace
}  // namespace strata
