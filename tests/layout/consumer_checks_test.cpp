// A consumer's debug build (compiled without NDEBUG, tests/layout/CMakeLists.txt) against
// the library as shipped (built with NDEBUG): the range checks of array copies are the
// consumer's, so they run here (issue 14).
#if defined(NDEBUG)
#error "consumer_checks_test.cpp must be compiled without NDEBUG"
#endif
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

TEST(ConsumerDebugBuild, ArrayCopiesCheckTheirRanges) {
  runtime rt;
  place machine = rt.machine();
  auto p = allocate<int>(machine, 1000);
  array_type<int> const small{1000};
  array_type<int> const large{1010};
  std::vector<int> out(1010);
  // The source runs 10 elements past its allocation.
  EXPECT_THROW(copy(large.on(out.data()), large.on(ptr<int const>(p))).wait(), invalid_argument);
  // The destination does.
  EXPECT_THROW(copy(large.on(p), large.on(std::as_const(out).data())).wait(), invalid_argument);
  // In range: fine.
  EXPECT_NO_THROW(copy(small.on(p), small.on(std::as_const(out).data())).wait());
  deallocate(p);
}

struct body {
  struct position : field<float, 3> {};
  struct mass : field<double> {};
  using fields = strata::fields<position, mass>;
};

// A component index past its field reaches another field's bytes in a release build;
// debug builds say so (issue 14), in every layout and through every access form.
template <class L>
void component_checks() {
  runtime rt;
  record_array<body, L> a(rt.machine(), 20);
  auto r = a[3];
  EXPECT_NO_THROW(r.template get<body::position>(2) = 1.0f);
  EXPECT_THROW((void)r.template get<body::position>(3), invalid_argument);
  EXPECT_THROW((void)r.template get<body::mass>(1), invalid_argument);
  auto v = r.template get<body::position>();  // a vector_ref
  EXPECT_NO_THROW(v[2] = 2.0f);
  EXPECT_THROW((void)v[3], invalid_argument);
  record_value<body> value = r;
  EXPECT_THROW((void)value.template get<body::position>(5), invalid_argument);
  // Element indices and windows likewise.
  EXPECT_THROW((void)a.span()[20], invalid_argument);
  EXPECT_THROW((void)a.subview(5, 10).span()[10], invalid_argument);
}

TEST(ConsumerDebugBuild, RecordComponentIndicesAreChecked) {
  component_checks<aos>();
  component_checks<soa>();
  component_checks<aosoa<8>>();
  component_checks<grouped<aosoa<8>, fields<body::mass>>>();
}

// strided_type, the compact form of an array type, checks its indices as array_type does
// (it returned offsets outside the array: 28 for (7, 0) and -4 for (-1, 0) on a 4 x 4).
TEST(ConsumerDebugBuild, StridedTypeIndicesAreChecked) {
  array_type<int> const t{4, 4};
  strided_type<int, host_space, 2> const s(t);
  EXPECT_THROW((void)s(7, 0), invalid_argument);
  EXPECT_THROW((void)s(index_t{-1}, index_t{0}), invalid_argument);
  EXPECT_THROW((void)s(0, 4), invalid_argument);
  EXPECT_THROW((void)s(index_t{16}), invalid_argument);
  EXPECT_THROW((void)s(index_t{-1}), invalid_argument);
  EXPECT_EQ(s(3, 2), 14);
  EXPECT_EQ(s(index_t{15}), 15);
  strided_type<int, host_space, 1> const one(array_type<int>{5});
  EXPECT_THROW((void)one(index_t{5}), invalid_argument);
  EXPECT_EQ(one(index_t{4}), 4);
}

}  // namespace
}  // namespace strata
