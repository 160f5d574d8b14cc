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

// The staged and pitched device paths against the naive loop, in k order (so a destination
// that repeats offsets keeps the last k's element, PARRAY §3.2), with every element the
// destination does not own left as it was: host -> sim, sim -> host, sim -> sim.
TEST(LayoutProperties, DeviceCopiesMatchANaiveLoopAndTouchOnlyTheirElements) {
  runtime rt{runtime_options{.sim_devices = "2:bw=50GB/s,lat=1us"}};
  auto devs = rt.machine().slice(isa::sim).descendants(place_type::device);
  test::rng_chooser c(91);
  int ran = 0;
  for (int i = 0; i < 80; ++i) {
    test::type_generator<test::rng_chooser> gen(c);
    try {
      auto p = gen.base();
      auto dst = gen.derive(p), src = gen.derive(p);
      auto [slo, shi] = src.offset_range();
      auto [dlo, dhi] = dst.offset_range();
      auto const ns = static_cast<std::size_t>(shi + 1), nd = static_cast<std::size_t>(dhi + 1);
      std::vector<int> s(ns);
      std::iota(s.begin(), s.end(), 3);
      std::vector<int> naive(nd, -1);
      for (index_t k = 0; k < src.size(); ++k)
        naive[static_cast<std::size_t>(dst(k))] = s[static_cast<std::size_t>(src(k))];
      array_type<int, sim_space> const ddst(dst), dsrc(src);
      auto sd = allocate<int, sim_space>(devs[0], static_cast<index_t>(ns));
      auto dd = allocate<int, sim_space>(devs[1], static_cast<index_t>(nd));
      copy(sd, ptr<int const>(s.data(), 0), ns).wait();
      std::vector<int> const minus(nd, -1);
      for (int way = 0; way < 3; ++way) {
        std::vector<int> got(nd, -1);
        copy(dd, ptr<int const>(minus.data(), 0), nd).wait();
        if (way == 0) {  // host -> sim
          copy(ddst.on(dd), src.on(std::as_const(s).data())).wait();
        } else if (way == 1) {  // sim -> host
          copy(dst.on(got.data()), dsrc.on(ptr<int const, sim_space>(sd))).wait();
        } else {  // sim -> sim
          copy(ddst.on(dd), dsrc.on(ptr<int const, sim_space>(sd))).wait();
        }
        if (way != 1) copy(ptr<int>(got.data(), 0), ptr<int const, sim_space>(dd), nd).wait();
        ASSERT_EQ(got, naive) << "way " << way << ": " << to_string(src.root()) << " -> "
                              << to_string(dst.root());
      }
      deallocate(sd);
      deallocate(dd);
      ++ran;
    } catch (invalid_argument const& e) {
      ASSERT_NE(std::string(e.what()).find("dimension nodes"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(ran, 60);
}

// is_strided()/stride() describe the whole mapping of random types.
TEST(LayoutProperties, StridesReproduceEveryOffset) {
  test::rng_chooser c(5);
  int strided = 0;
  for (int i = 0; i < 300; ++i) {
    test::type_generator<test::rng_chooser> gen(c);
    try {
      auto p = gen.base();
      auto t = gen.derive(p);
      // The step of each rank from the mapping, then every offset from those steps.
      std::vector<index_t> step(static_cast<std::size_t>(t.rank()));
      index_t const m0 = t(index_t{0});
      for (index_t r = t.rank() - 1, w = 1; r >= 0; w *= t.extent(static_cast<int>(r)), --r)
        step[static_cast<std::size_t>(r)] = t.extent(static_cast<int>(r)) > 1 ? t(w) - m0 : 0;
      bool expect = true;
      for (index_t k = 0; k < t.size() && expect; ++k) {
        index_t rest = k, o = m0;
        for (int r = t.rank() - 1; r >= 0; --r) {
          o += rest % t.extent(r) * step[static_cast<std::size_t>(r)];
          rest /= t.extent(r);
        }
        expect = o == t(k);
      }
      ASSERT_EQ(t.is_strided(), expect) << to_string(t.root());
      if (!expect) continue;
      ++strided;
      for (int r = 0; r < t.rank(); ++r) {
        if (t.extent(r) < 2) continue;
        ASSERT_EQ(t.stride(r), step[static_cast<std::size_t>(r)]) << to_string(t.root());
      }
    } catch (invalid_argument const& e) {
      ASSERT_NE(std::string(e.what()).find("dimension nodes"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(strided, 10);
}

}  // namespace
}  // namespace strata
