// Property tests: random trees, references, windows, cyclic displacements and user
// offset functions (tests/layout/random_types.hpp), each checked against a naive
// element-by-element loop, through the kernel and through strata::copy.
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "layout/random_types.hpp"

namespace strata {
namespace {

TEST(LayoutProperties, RandomTypesAndCopiesMatchANaiveLoop) {
  test::rng_chooser c(20261122);
  int checked = 0, strided = 0;
  for (int i = 0; i < 400; ++i) {
    test::type_generator<test::rng_chooser> gen(c);
    try {
      auto p = gen.base();
      auto dst = gen.derive(p), src = gen.derive(p);
      auto err = test::check_pair(dst, src);
      ASSERT_FALSE(err) << "case " << i << ": " << *err;
      ++checked;
      strided += plan_copy(linear(dst.root()), linear(src.root())).ok;
    } catch (invalid_argument const& e) {
      // Only the node budget may stop a generated type.
      ASSERT_NE(std::string(e.what()).find("dimension nodes"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(checked, 300);
  EXPECT_GT(strided, 100);  // both paths are exercised
  EXPECT_LT(strided, checked);
}

TEST(LayoutProperties, StrataCopyMatchesANaiveLoopOnEveryBackend) {
  runtime rt;
  test::rng_chooser c(77);
  for (int i = 0; i < 60; ++i) {
    test::type_generator<test::rng_chooser> gen(c);
    try {
      auto p = gen.base();
      auto dst = gen.derive(p), src = gen.derive(p);
      if (!dst.is_unique()) continue;
      auto [slo, shi] = src.offset_range();
      auto [dlo, dhi] = dst.offset_range();
      std::vector<int> s(static_cast<std::size_t>(shi + 1));
      std::iota(s.begin(), s.end(), 3);
      std::vector<int> naive(static_cast<std::size_t>(dhi + 1), -1), got = naive;
      for (index_t k = 0; k < src.size(); ++k)
        naive[static_cast<std::size_t>(dst(k))] = s[static_cast<std::size_t>(src(k))];
      copy(dst.on(got.data()), src.on(std::as_const(s).data())).wait();
      ASSERT_EQ(got, naive) << to_string(src.root()) << " -> " << to_string(dst.root());
    } catch (invalid_argument const& e) {
      ASSERT_NE(std::string(e.what()).find("dimension nodes"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace strata
