// Array types inside kernels on every CPU backend and on a sim device; copies to and
// from sim memory; mdspan vocabulary; errors.
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "exec/backends.hpp"

namespace strata {
namespace {

using test::on_every_backend;

// A kernel that writes its element's multi-index through the type's offsets.
struct write_indices {
  template <class Self>
  STRATA_FN void operator()(Self const& self, array_type<int> t, int* data) const {
    for (auto e : self.elements(t.size())) {
      index_t i = e / t[1].size(), j = e % t[1].size();
      data[t(i, j)] = static_cast<int>(100 * i + j);
    }
  }
};

class LayoutKernels : public on_every_backend {};

TEST_P(LayoutKernels, OffsetsOfATransposedTypeInAKernel) {
  array_type<int> const a{5, 7};
  array_type<int> const t{a[1], a[0]};  // the transpose, by type
  // t(i, j) with i over a's columns: a's element (j, i).
  array_type<int> const tt{t[1], t[0]};
  std::vector<int> data(35, -1);
  launch(here(), grid(5).block(7), write_indices{}, tt, data.data()).wait();
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 7; ++j) ASSERT_EQ(data[static_cast<std::size_t>(a(i, j))], 100 * i + j);
  std::fill(data.begin(), data.end(), -1);
  launch(here(), grid(7).block(5), write_indices{}, t, data.data()).wait();
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 5; ++j) ASSERT_EQ(data[static_cast<std::size_t>(a(j, i))], 100 * i + j);
}

// The compact strided form a kernel takes by value (issue 14): the same offsets as the
// array type it comes from, for a transpose, a window and a displaced type.
struct write_strided {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strided_type<int, host_space, 2> t, int* data) const {
    for (auto e : self.elements(t.size())) {
      index_t i = e / t.extent(1), j = e % t.extent(1);
      data[t(i, j)] = static_cast<int>(100 * i + j);
      data[t(e) + 1000] = static_cast<int>(e);  // the flat form, in a second copy
    }
  }
};

TEST_P(LayoutKernels, CompactStridedTypesInAKernel) {
  static_assert(sizeof(strided_type<int, host_space, 2>) == 5 * sizeof(index_t));
  static_assert(std::is_trivially_copyable_v<strided_type<int, host_space, 3>>);
  array_type<int> const big{20, 30};
  array_type<int> const t{big[1], big[0]};                               // transpose
  array_type<int> const w{7 | disp(3) | big[0], 11 | disp(5) | big[1]};  // window
  array_type<int> const d{dims{4, 6} | disp(13)};                        // displaced
  for (auto const* type : {&t, &w, &d}) {
    SCOPED_TRACE(to_string(type->root()));
    strided_type<int, host_space, 2> const s(*type);
    ASSERT_EQ(s.size(), type->size());
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(s.extent(r), type->extent(r));
      EXPECT_EQ(s.stride(r), type->stride(r));
    }
    std::vector<int> via_type(2000, -1), via_strided(2000, -1);
    for (index_t e = 0; e < type->size(); ++e) {
      index_t i = e / type->extent(1), j = e % type->extent(1);
      ASSERT_EQ(s(i, j), (*type)(i, j));
      ASSERT_EQ(s(e), (*type)(e));
      via_type[static_cast<std::size_t>((*type)(i, j))] = static_cast<int>(100 * i + j);
      via_type[static_cast<std::size_t>((*type)(e)) + 1000] = static_cast<int>(e);
    }
    launch(here(), divide_work(here(), s.size()), write_strided{}, s, via_strided.data()).wait();
    EXPECT_EQ(via_strided, via_type);
  }
  // Rank 1 and 3.
  array_type<int> const line{dims{12} | disp(2)};
  EXPECT_EQ((strided_type<int, host_space, 1>(line)(5)), line(5));
  array_type<int> const cube{3, 4, 5};
  array_type<int> const turned{cube[2], cube[0], cube[1]};
  strided_type<int, host_space, 3> const c(turned);
  for (index_t k = 0; k < turned.size(); ++k) ASSERT_EQ(c(k), turned(k));
  EXPECT_EQ(c(4, 2, 3), turned(4, 2, 3));
}

TEST(LayoutTypes, CompactFormsOfTypesThatAreNotStridedAreErrors) {
  array_type<int> const wrap{dims{3, 2} | cyclic(5)};
  EXPECT_THROW((strided_type<int, host_space, 2>(wrap)), invalid_argument);
  array_type<int> const a{dims{3, 3}, 2};
  array_type<int> const b{dims{a[0][1], a[0][0]}, a[1]};  // B_0 has no constant stride
  EXPECT_THROW((strided_type<int, host_space, 2>(b)), invalid_argument);
  EXPECT_THROW((strided_type<int, host_space, 3>(a)), invalid_argument);  // rank 2
  try {
    (void)strided_type<int, host_space, 2>(wrap);
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("not strided"), std::string::npos) << e.what();
  }
}

TEST_P(LayoutKernels, ParallelTransposingCopyOnThisBackend) {
  // Large enough to be launched (not run inline): 512 x 384 doubles through tiles.
  array_type<double> const a{512, 384};
  array_type<double> const t{a[1], a[0]};
  std::vector<double> src(512 * 384), dst(512 * 384, -1.0), back(512 * 384, -1.0);
  std::iota(src.begin(), src.end(), 0.0);
  copy(after{}, here(), t.on(dst.data()), a.on(std::as_const(src).data())).wait();
  // PARRAY §3.2: dst[T(k)] = src[A(k)]; T(k) for k = (p, q) is A_1(p) + A_0(q).
  for (index_t k = 0; k < a.size(); ++k)
    ASSERT_EQ(dst[static_cast<std::size_t>(t(k))], src[static_cast<std::size_t>(k)]) << k;
  copy(after{}, here(), a.on(back.data()), t.on(std::as_const(dst).data())).wait();
  EXPECT_EQ(back, src);
}

// Transposing copies through the micro-tiled kernel: every element size it specializes,
// extents that are not multiples of a tile or a micro-tile, a destination not aligned to
// a cache line (the peeled columns), and one copy large enough for streaming stores.
template <class T>
void check_transpose(index_t rows, index_t cols, std::size_t shift) {
  array_type<T> const a{rows, cols};
  array_type<T> const t{a[1], a[0]};
  auto const n = static_cast<std::size_t>(rows * cols);
  std::vector<T> src(n), dst(n + shift + 1);
  for (std::size_t k = 0; k < n; ++k) std::memset(&src[k], static_cast<int>(k * 7 + 1), sizeof(T));
  T guard;
  std::memset(&guard, 0x5a, sizeof(T));
  std::fill(dst.begin(), dst.end(), guard);
  copy(t.on(dst.data() + shift), a.on(std::as_const(src).data())).wait();
  for (std::size_t k = 0; k < shift; ++k) ASSERT_EQ(std::memcmp(&dst[k], &guard, sizeof(T)), 0);
  ASSERT_EQ(std::memcmp(&dst[n + shift], &guard, sizeof(T)), 0);
  for (index_t k = 0; k < a.size(); ++k)
    ASSERT_EQ(std::memcmp(&dst[static_cast<std::size_t>(t(k)) + shift],
                          &src[static_cast<std::size_t>(a(k))], sizeof(T)),
              0)
        << sizeof(T) << "-byte elements, " << rows << " x " << cols << ", k = " << k;
}

struct bytes16 {
  std::uint64_t lo, hi;
};
struct bytes12 {
  std::uint32_t v[3];
};

TEST(LayoutCopyKernel, TransposesEveryElementSizeShapeAndAlignment) {
  runtime rt;
  for (std::size_t shift : {0, 1, 3}) {
    check_transpose<std::uint8_t>(131, 77, shift);
    check_transpose<std::uint16_t>(77, 131, shift);
    check_transpose<float>(200, 45, shift);
    check_transpose<double>(67, 150, shift);
    check_transpose<bytes16>(70, 33, shift);
    check_transpose<bytes12>(33, 70, shift);
  }
  // 2.2 M doubles (17.6 MB): streaming stores, from an odd element of a line.
  check_transpose<double>(1100, 2003, 1);
  check_transpose<float>(2051, 2049, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, LayoutKernels, testing::ValuesIn(test::cpu_backends()),
                         test::backend_name);

class LayoutSim : public testing::Test {
 protected:
  runtime rt{runtime_options{.sim_devices = "2:bw=50GB/s,lat=1us"}};
  place machine = rt.machine();
  place sim0 = machine.slice(isa::sim).descendants(place_type::device)[0];
  place sim1 = machine.slice(isa::sim).descendants(place_type::device)[1];
};

TEST_F(LayoutSim, KernelOnASimDeviceUsesTheType) {
  array_type<int, sim_space> const a{6, 4};
  array_type<int> const host_t{4, 6};
  auto d = allocate<int, sim_space>(sim0, 24);
  launch(sim0, grid(4).block(6), write_indices{}, array_type<int>(a), d).wait();
  std::vector<int> back(24, -1);
  copy(host_t.on(back.data()), array_type<int, sim_space>(host_t).on(d)).wait();
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(back[static_cast<std::size_t>(a(i, j))], 100 * i + j);
  deallocate(d);
}

TEST_F(LayoutSim, CopiesToAndFromSimMemoryInRunsAndStaged) {
  array_type<float> const host{64, 160};
  array_type<float, sim_space> const dev{64, 160};
  // A window with rows of 640 bytes (pitched row copies on the copy engine) and a
  // transpose between two devices (staged through host memory).
  array_type<float, sim_space> const big{80, 180};
  array_type<float, sim_space> const win{64 | disp(9) | big[0], 160 | disp(11) | big[1]};
  array_type<float, sim_space> const tr{dev[1], dev[0]};
  array_type<float> const host_tr{host[1], host[0]};
  std::vector<float> src(64 * 160), out(64 * 160, -1.f);
  std::iota(src.begin(), src.end(), 1.f);
  auto w = allocate<float, sim_space>(sim0, 80 * 180);
  auto t = allocate<float, sim_space>(sim1, 64 * 160);
  fill(view<float, 1, sim_space>(w, vec<1>{80 * 180}), -2.f).wait();
  auto e1 = copy(win.on(w), host.on(std::as_const(src).data()));                // host -> sim rows
  auto e2 = copy(after(e1), tr.on(t), win.on(ptr<float const, sim_space>(w)));  // sim -> sim staged
  auto e3 = copy(after(e2), host_tr.on(out.data()), array_type<float, sim_space>(host_tr).on(t));
  e3.wait();
  for (index_t k = 0; k < host.size(); ++k)
    ASSERT_EQ(out[static_cast<std::size_t>(host_tr(k))], src[static_cast<std::size_t>(k)]) << k;
  // The window's neighbours kept their values.
  std::vector<float> whole(80 * 180);
  copy(ptr<float>(whole.data(), 0), w, 80 * 180).wait();
  EXPECT_EQ(whole[0], -2.f);
  EXPECT_EQ(whole[static_cast<std::size_t>(big(9, 10))], -2.f);
  EXPECT_EQ(whole[static_cast<std::size_t>(big(9, 11))], src[0]);
  deallocate(w);
  deallocate(t);
}

TEST(LayoutCopyKernel, NonUniqueDestinationKeepsTheLastIndex) {
  // PARRAY §3.2: y[B(k)] = x[A(k)] for every k, in order, so where several k share an
  // offset the last one stays. Large enough to run on threads (not inline): the copy
  // must not race on the shared elements.
  runtime rt;
  index_t const n = 1 << 16;
  array_type<double> const src_t{n};
  array_type<double> const folded{n | cyclic(16)};  // k -> k mod 16
  std::vector<double> src(static_cast<std::size_t>(n));
  std::iota(src.begin(), src.end(), 0.0);
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<double> dst(16, -1.0);
    copy(folded.on(dst.data()), src_t.on(std::as_const(src).data())).wait();
    for (index_t j = 0; j < 16; ++j)
      ASSERT_EQ(dst[static_cast<std::size_t>(j)], static_cast<double>(n - 16 + j)) << j;
  }
}

TEST(LayoutTypes, MdspanVocabulary) {
  array_type<double> const a{dims{3, 3}, 2};
  EXPECT_EQ(a.rank(), 2);
  EXPECT_EQ(a.extent(0), 9);
  EXPECT_EQ(a.stride(0), 2);
  EXPECT_EQ(a.required_span_size(), 18);
  EXPECT_TRUE(a.is_unique());
  EXPECT_TRUE(a.is_exhaustive());
  EXPECT_TRUE(a.is_strided());
  array_type<double> const big{10, 10};
  array_type<double> const w{4 | disp(3) | big[0], 5 | disp(2) | big[1]};
  EXPECT_EQ(w.required_span_size(), 6 * 10 + 6 + 1);
  EXPECT_TRUE(w.is_unique());
  EXPECT_FALSE(w.is_exhaustive());
  EXPECT_TRUE(w.is_strided());
  array_type<double> const b{dims{a[0][1], a[0][0]}, a[1]};
  EXPECT_FALSE(b.is_strided());  // B_0 has no constant stride
  EXPECT_TRUE(b.is_exhaustive());
  array_type<double> const twice{dims{2, 9} | a[0]};  // [[2][9] # A_0]: wraps A_0 twice
  EXPECT_FALSE(twice.is_unique());
}

TEST(LayoutTypes, ConstexprOffsetsFoldAtCompileTime) {
  constexpr array_type<float> a(static_dims(4, 3));
  static_assert(a.size() == 12);
  static_assert(a(2, 1) == 7);
  static_assert(a[0](3) == 9);
  static_assert(stp(a[0]) == 3);
  static_assert(cnt(a.root()));
  SUCCEED();
}

TEST(LayoutTypes, ClearErrors) {
  runtime rt;
  EXPECT_THROW((array_type<int>{0, 3}), invalid_argument);
  EXPECT_THROW((array_type<int>{3 | cyclic(0)}), invalid_argument);
  EXPECT_THROW((array_type<int>{3 | func{nullptr}}), invalid_argument);
  array_type<int> const a{4, 4};
  EXPECT_THROW(a[2], invalid_argument);
  EXPECT_THROW(a[0][0], invalid_argument);
#if !defined(NDEBUG)
  EXPECT_THROW(a(4, 0), invalid_argument);
  EXPECT_THROW(a(16), invalid_argument);
  EXPECT_THROW(a(1, 1, 1), invalid_argument);
  std::vector<int> z(16);
  auto v = a.on(z.data());
  v(3, 3) = 7;  // in range
  EXPECT_EQ(z[15], 7);
  EXPECT_THROW(v(0, 4), invalid_argument);  // views are checked in debug builds
#endif
  array_type<int> const b{3, 5};
  std::vector<int> x(16), y(15);
  try {
    copy(b.on(y.data()), a.on(std::as_const(x).data())).wait();
    FAIL() << "copy of unequal sizes did not throw";
  } catch (invalid_argument const& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[3][5]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4][4]"), std::string::npos) << msg;
  }
  EXPECT_THROW(copy(a.on(static_cast<int*>(nullptr)), a.on(std::as_const(x).data())),
               invalid_argument);
}

}  // namespace
}  // namespace strata
