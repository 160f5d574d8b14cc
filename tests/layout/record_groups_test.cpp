// Hot/cold field groups (grouped<L, ...>) and record sub-views (issue 14): where the
// groups put each field, the same kernels and copies as the plain layouts, windows of a
// record array that touch only their own records, in every layout and memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "exec/backends.hpp"
#include "layout/record_fixtures.hpp"

namespace strata {
namespace {

using test::expect_filled;
using test::fill_host;
using test::particle;
using test::pos_of;
using test::Records;

using hot16 = grouped<aosoa<16>, fields<particle::position, particle::velocity>>;
using hot_soa = grouped<soa, fields<particle::velocity>, fields<particle::id, particle::alive>>;
using hot_aos = grouped<aos, fields<particle::charge, particle::position>>;

using m16 = detail::record_map<hot16, particle>;
static_assert(m16::group_count == 2);
static_assert(m16::group_of<0> == 0 && m16::group_of<1> == 0 && m16::group_of<2> == 1);
static_assert(m16::index_in_group<3> == 1);  // charge: the rest's second field
// The hot group's blocks: 16 x 3 floats x 2 fields = 384 bytes, six whole lines.
static_assert(m16::group_map<0>::block_bytes == 384);
using ms = detail::record_map<hot_soa, particle>;
static_assert(ms::group_count == 3);
static_assert(ms::group_of<4> == 1 && ms::index_in_group<4> == 0);  // id leads its group
static_assert(ms::group_of<2> == 1 && ms::index_in_group<2> == 1);  // then alive

TEST_F(Records, GroupsPlaceHotFieldsTogether) {
  index_t const n = 40;  // three blocks of 16
  record_array<particle, hot16> a(machine, n);
  std::byte* const base = a.data().get();
  // Element 21 is lane 5 of block 1; x(1) follows the block's 16 x(0) values.
  EXPECT_EQ(reinterpret_cast<std::byte*>(&a[21].x(1)), base + 384 + (16 + 5) * sizeof(float));
  EXPECT_EQ(reinterpret_cast<std::byte*>(&a[21].v(2)), base + 384 + (5 * 16 + 5) * sizeof(float));
  // The rest (alive, charge, id) starts after all hot blocks, 3 x 384 bytes; its blocks
  // are 16 + 128 + 64 = 208 bytes, padded to 256.
  static_assert(m16::group_map<1>::block_bytes == 256);
  EXPECT_EQ(reinterpret_cast<std::byte*>(&a[21].q()), base + 3 * 384 + 256 + 16 + 5 * 8);
  EXPECT_EQ(a.bytes(), 3 * 384 + 3 * 256);

  // SoA groups share one pitch; every group starts on a line.
  record_array<particle, hot_soa> s(machine, 100);
  EXPECT_EQ(s.pitch(), 128);
  std::byte* const sb = s.data().get();
  EXPECT_EQ(reinterpret_cast<std::byte*>(&s[7].v(2)), sb + (2 * 128 + 7) * sizeof(float));
  std::size_t const g1 = 3 * 128 * sizeof(float);  // velocity's three arrays
  EXPECT_EQ(reinterpret_cast<std::byte*>(&s[7].ident()), sb + g1 + 7 * sizeof(std::int32_t));
  EXPECT_EQ(reinterpret_cast<std::byte*>(&s[7].template get<particle::alive>()),
            sb + g1 + 128 * sizeof(std::int32_t) + 7);
  // AoS groups: records of {charge, position} (8 + 12, padded to 24), then the rest.
  record_array<particle, hot_aos> r(machine, 10);
  std::byte* const rb = r.data().get();
  EXPECT_EQ(reinterpret_cast<std::byte*>(&r[3].q()), rb + 3 * 24);
  EXPECT_EQ(reinterpret_cast<std::byte*>(&r[3].x(2)), rb + 3 * 24 + 8 + 2 * sizeof(float));
  // The rest {velocity, alive, id}: 12 + 1 (+3) + 4 = 20 bytes; region 1 at 240 -> 256.
  EXPECT_EQ(reinterpret_cast<std::byte*>(&r[3].v(0)), rb + 256 + 3 * 20);
}

TEST_F(Records, GroupsReadAndCopyLikeEveryLayout) {
  for (index_t n : {1, 15, 16, 17, 100, 1025}) {
    SCOPED_TRACE(n);
    record_array<particle, hot16> g(machine, n);
    record_array<particle, hot_soa> s(machine, n);
    record_array<particle, hot_aos> r(machine, n);
    record_array<particle, aosoa<4>> b(machine, n);
    fill_host(g);
    expect_filled(g, "grouped aosoa16");
    copy(s, g).wait();  // host conversions between groups and layouts
    expect_filled(s, "grouped soa");
    copy(r, s).wait();
    expect_filled(r, "grouped aos");
    copy(b, r).wait();
    expect_filled(b, "aosoa4");

    // Through sim devices: per-field runs with a block size per group.
    record_array<particle, hot16, sim_space> d0(sim0, n);
    record_array<particle, hot_soa, sim_space> d1(sim1, n);
    record_array<particle, aosoa<8>, sim_space> d2(sim1, n);
    record_array<particle, hot16> back(machine, n);
    auto e = copy(d0, b);
    e = copy(after(e), d1, d0);
    e = copy(after(e), d2, d1);
    copy(after(e), back, d2).wait();
    expect_filled(back, "grouped through devices");
  }
}

// x += v * dt and a cold-field update with for_each_record (record_fixtures.hpp), whose
// grouped AoSoA path walks each group's block.
using test::push_each;

template <class L>
void grouped_kernels(target const& where, place const& machine, index_t n) {
  record_array<particle, L> p(machine, n);
  fill_host(p);
  launch(where, divide_work(where, p), push_each{}, p.view(), 0.5f).wait();
  launch(where, grid(5).elements(7), push_each{}, p.view(), 0.25f).wait();  // ragged cover
  for (index_t i = 0; i < n; ++i) {
    for (std::size_t d = 0; d < 3; ++d) {
      float expect = pos_of(i, d) - pos_of(i, d) * 0.5f;
      if (i < 35) expect -= pos_of(i, d) * 0.25f;
      ASSERT_EQ(p[i].x(d), expect) << "element " << i;
    }
    ASSERT_EQ(p[i].ident(), 1001 + i + (i < 35 ? 1 : 0)) << "element " << i;
    ASSERT_EQ(p[i].q(), static_cast<double>(i) * 0.5) << "element " << i;  // untouched
  }
}

class GroupedKernels : public test::on_every_backend {};

TEST_P(GroupedKernels, SameKernelOnGroups) {
  for (index_t n : {1, 30, 35, 37, 333}) {
    SCOPED_TRACE(n);
    grouped_kernels<hot16>(here(), machine, n);
    grouped_kernels<hot_soa>(here(), machine, n);
    grouped_kernels<hot_aos>(here(), machine, n);
    grouped_kernels<grouped<aosoa<4>, fields<particle::id>>>(here(), machine, n);
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, GroupedKernels, testing::ValuesIn(test::cpu_backends()),
                         test::backend_name);

TEST_F(Records, GroupsRunKernelsOnASimDevice) {
  index_t const n = 301;
  record_array<particle, aos> h(machine, n);
  record_array<particle, hot16, sim_space> d(sim0, n);
  fill_host(h);
  auto e = copy(d, h);
  e = launch(after(e), sim0, divide_work(sim0, n), push_each{}, d.view(), 0.5f);
  copy(after(e), h, d).wait();
  for (index_t i = 0; i < n; ++i) {
    ASSERT_EQ(h[i].x(1), pos_of(i, 1) * 0.5f) << "element " << i;
    ASSERT_EQ(h[i].ident(), 1001 + i) << "element " << i;
  }
}

// Sub-views: a window [f, f + c) of an array, with the array's pitch.
template <class L>
void window_kernel(target const& where, place const& machine) {
  index_t const n = 100;
  for (auto [f, c] : {std::pair<index_t, index_t>{0, 100},
                      {3, 37},
                      {16, 16},
                      {17, 1},
                      {50, 0},
                      {99, 1},
                      {5, 90}}) {
    SCOPED_TRACE(testing::Message() << "window [" << f << ", +" << c << ")");
    record_array<particle, L> p(machine, n);
    fill_host(p);
    auto w = p.subview(f, c);
    EXPECT_EQ(w.size(), c);
    EXPECT_EQ(w.first(), f);
    EXPECT_EQ(w.pitch(), p.pitch());
    EXPECT_EQ(w.whole(), f == 0 && c == n);
    if (c > 0) {
      EXPECT_EQ(&w[0].q(), &p[f].q());
      EXPECT_EQ(&w[c - 1].x(2), &p[f + c - 1].x(2));
    }
    if (c > 0) launch(where, divide_work(where, w), push_each{}, w, 1.0f).wait();
    for (index_t i = 0; i < n; ++i) {
      bool const in = i >= f && i < f + c;
      ASSERT_EQ(p[i].x(0), in ? 0.0f : pos_of(i, 0)) << "element " << i;
      ASSERT_EQ(p[i].ident(), 1000 + i + (in ? 1 : 0)) << "element " << i;
    }
  }
}

class RecordWindows : public test::on_every_backend {};

TEST_P(RecordWindows, KernelsTouchOnlyTheirWindow) {
  window_kernel<aos>(here(), machine);
  window_kernel<soa>(here(), machine);
  window_kernel<aosoa<16>>(here(), machine);
  window_kernel<hot16>(here(), machine);
}

INSTANTIATE_TEST_SUITE_P(Cpu, RecordWindows, testing::ValuesIn(test::cpu_backends()),
                         test::backend_name);

// A copy into a window writes its records only; sources and destinations whose windows
// start at different lanes of their blocks go in pieces (device) or through the kernel.
template <class LD, class LS, class SD, class SS>
void window_copy(place const& machine, place const& dst_at, place const& src_at, index_t df,
                 index_t sf, index_t c) {
  SCOPED_TRACE(testing::Message() << "dst " << df << " src " << sf << " count " << c << " in "
                                  << __PRETTY_FUNCTION__);
  index_t const n = 90;
  record_array<particle, aos> h(machine, n), zero(machine, n), back(machine, n);
  fill_host(h);
  for (index_t i = 0; i < n; ++i) {
    zero[i].x(0) = zero[i].x(1) = zero[i].x(2) = -1.0f;
    zero[i].v(0) = zero[i].v(1) = zero[i].v(2) = -2.0f;
    zero[i].template get<particle::alive>() = 9;
    zero[i].q() = -3.0;
    zero[i].ident() = -4;
  }
  record_array<particle, LS, SS> src(src_at, n);
  record_array<particle, LD, SD> dst(dst_at, n);
  auto e1 = copy(src, h);
  auto e2 = copy(dst, zero);
  auto e = copy(after(e1, e2), dst.subview(df, c), src.subview(sf, c));
  copy(after(e), back, dst).wait();
  for (index_t i = 0; i < n; ++i) {
    if (i >= df && i < df + c) {
      index_t const j = i - df + sf;
      ASSERT_EQ(back[i].x(2), pos_of(j, 2)) << "element " << i;
      ASSERT_EQ(back[i].v(1), -pos_of(j, 1)) << "element " << i;
      ASSERT_EQ(back[i].q(), static_cast<double>(j) * 0.5) << "element " << i;
      ASSERT_EQ(back[i].ident(), 1000 + j) << "element " << i;
    } else {
      ASSERT_EQ(back[i].x(2), -1.0f) << "element " << i << " outside the window";
      ASSERT_EQ(back[i].template get<particle::alive>(), 9) << "element " << i;
      ASSERT_EQ(back[i].ident(), -4) << "element " << i << " outside the window";
    }
  }
}

TEST_F(Records, WindowCopiesTouchOnlyTheirRecords) {
  for (auto [df, sf, c] : {std::tuple<index_t, index_t, index_t>{0, 0, 90},
                           {3, 3, 40},
                           {5, 16, 33},
                           {16, 1, 50},
                           {1, 2, 87},
                           {40, 0, 0},
                           {89, 0, 1},
                           // From 0, sizes that round to the array's pitch (not whole).
                           {0, 0, 85},
                           {0, 0, 89}}) {
    // Host: the conversion kernel.
    window_copy<aosoa<16>, soa, host_space, host_space>(machine, machine, machine, df, sf, c);
    window_copy<hot16, hot16, host_space, host_space>(machine, machine, machine, df, sf, c);
    // Devices: runs peeled to block boundaries.
    window_copy<aosoa<16>, aosoa<4>, sim_space, sim_space>(machine, sim0, sim1, df, sf, c);
    window_copy<aosoa<8>, aosoa<8>, sim_space, host_space>(machine, sim0, machine, df, sf, c);
    window_copy<soa, hot16, host_space, sim_space>(machine, machine, sim1, df, sf, c);
    window_copy<aos, hot_soa, sim_space, sim_space>(machine, sim1, sim1, df, sf, c);
    window_copy<soa, soa, sim_space, sim_space>(machine, sim0, sim1, df, sf, c);
  }
}

TEST_F(Records, WindowsOfOneArrayOverlapByTheirRecords) {
  index_t const n = 64;
  // Disjoint windows of one device array: allowed, and exact.
  record_array<particle, aos> h(machine, n), back(machine, n);
  fill_host(h);
  record_array<particle, aosoa<8>, sim_space> d(sim0, n);
  copy(d, h).wait();
  copy(d.subview(40, 20), d.subview(3, 20)).wait();
  copy(back, d).wait();
  for (index_t i = 0; i < n; ++i)
    ASSERT_EQ(back[i].ident(), 1000 + (i >= 40 && i < 60 ? i - 37 : i)) << "element " << i;
  // Overlapping windows: refused on a device, a memmove on the host.
  EXPECT_THROW((void)copy(d.subview(10, 20), d.subview(0, 20)), invalid_argument);
  record_array<particle, soa> s(machine, n);
  fill_host(s);
  copy(s.subview(5, 50), s.subview(0, 50)).wait();
  for (index_t i = 0; i < n; ++i)
    ASSERT_EQ(s[i].ident(), 1000 + (i >= 5 && i < 55 ? i - 5 : i)) << "element " << i;
  // A window outside its view is a clear error.
  EXPECT_THROW((void)s.subview(60, 5), invalid_argument);
  EXPECT_THROW((void)s.subview(-1, 5), invalid_argument);
  EXPECT_THROW((void)s.view().span().subspan(10, 60), invalid_argument);
}

}  // namespace
}  // namespace strata
