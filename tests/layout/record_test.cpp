// Record layouts (Ripple §4.2-4.3): one description stored AoS, SoA and AoSoA; the same
// kernel source on every layout and backend; copies between layouts and memories.
#include <gtest/gtest.h>

#include <cstdint>
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

using traits = record_traits<particle>;

static_assert(traits::field_count == 5);
static_assert(traits::index_of<particle::charge> == 3);
// AoS: 24 bytes of floats, 1 byte, 7 bytes of padding, 8, 4, rounded to 8: 48.
static_assert(traits::aos_offset(2) == 24 && traits::aos_offset(3) == 32);
static_assert(traits::record_bytes == 48);
static_assert(std::is_trivially_copyable_v<record_span<particle, soa>>);
static_assert(std::is_trivially_copyable_v<record_view<particle, aosoa<8>, sim_space>>);

TEST_F(Records, LayoutsPlaceComponentsWhereTheyPromise) {
  record_array<particle, soa> s(machine, 100);
  EXPECT_EQ(s.pitch(), 128);  // component arrays on 64-element boundaries
  auto* base = s.data().get();
  EXPECT_EQ(reinterpret_cast<std::byte*>(&s[5].x(1)), base + (128 + 5) * sizeof(float));
  EXPECT_EQ(reinterpret_cast<std::byte*>(&s[5].v(0)), base + (3 * 128 + 5) * sizeof(float));

  // A pitch of a multiple of 1024 would alias every array modulo 4 KiB: 64 more.
  EXPECT_EQ((record_array<particle, soa>(machine, 1000).pitch()), 1024 + 64);

  record_array<particle, aos> a(machine, 10);
  EXPECT_EQ(reinterpret_cast<std::byte*>(&a[3].q()), a.data().get() + 3 * 48 + 32);

  record_array<particle, aosoa<4>> b(machine, 10);
  EXPECT_EQ(b.pitch(), 12);  // three blocks
  auto const block = detail::record_map<aosoa<4>, particle>::block_bytes;
  // Element 6 is lane 2 of block 1; y positions follow the 4 x positions of the block.
  EXPECT_EQ(reinterpret_cast<std::byte*>(&b[6].x(1)),
            b.data().get() + block + (4 + 2) * sizeof(float));
  EXPECT_EQ(b.bytes(), 3 * block);
  EXPECT_EQ(b.view().required_span_bytes(), 3 * block);
}

TEST_F(Records, FieldAccessReadsTheSameInEveryLayout) {
  record_array<particle, aos> a(machine, 37);
  record_array<particle, soa> s(machine, 37);
  record_array<particle, aosoa<8>> b(machine, 37);
  fill_host(a);
  fill_host(s);
  fill_host(b);
  for (index_t i = 0; i < 37; ++i) {
    // get<F>() is a vector_ref for vector fields, T& for scalars; x[F{}] the same.
    auto pa = a[i].get<particle::position>();
    auto ps = s[i][particle::position{}];
    auto pb = get<particle::position>(b[i]);
    for (std::size_t d = 0; d < 3; ++d) {
      EXPECT_EQ(pa[d], ps[d]);
      EXPECT_EQ(pa[d], pb[d]);
      EXPECT_EQ(a[i].get<particle::velocity>(d), b[i].get<particle::velocity>(d));
    }
    EXPECT_EQ(a[i][particle::id{}], s[i].get<particle::id>());
    // A value (Ripple: the record as an object) compares field by field.
    record_value<particle> va = a[i], vb = b[i];
    EXPECT_EQ(va.get<particle::charge>(), vb.get<particle::charge>());
    EXPECT_EQ(va.x(2), vb.x(2));
  }
  // Assigning an element of one layout to another copies every field.
  s[3] = b[30];
  EXPECT_EQ(s[3].ident(), 1030);
  EXPECT_EQ(s[3].x(1), pos_of(30, 1));
  record_value<particle> v = a[4];
  v.x(0) = 7.5f;
  b[0] = v;
  EXPECT_EQ(b[0].x(0), 7.5f);
  EXPECT_EQ(b[0].ident(), 1004);
}

template <class L>
void round_trip(place const& machine, index_t n, char const* what) {
  SCOPED_TRACE(what);
  record_array<particle, aos> start(machine, n), end(machine, n);
  record_array<particle, soa> s(machine, n);
  record_array<particle, L> b(machine, n);
  fill_host(start);
  copy(s, start).wait();
  expect_filled(s, "soa");
  copy(b, s).wait();
  expect_filled(b, "aosoa");
  copy(end, b).wait();
  expect_filled(end, "aos");
}

TEST_F(Records, RoundTripAosSoaAosoaAosOnTheHost) {
  // Sizes below, at and above block multiples; one large enough for a parallel kernel.
  for (index_t n : {1, 7, 8, 9, 64, 65, 1000, 100003}) {
    round_trip<aosoa<8>>(machine, n, "aosoa<8>");
    round_trip<aosoa<1>>(machine, n, "aosoa<1>");
  }
}

// Host <-> sim and sim <-> sim copies go through the copy engine as pitched runs.
template <class HL, class DL, class D2L>
void device_round_trip(place const& machine, place const& dev0, place const& dev1, index_t n) {
  record_array<particle, HL> host(machine, n), back(machine, n);
  record_array<particle, DL, sim_space> d0(dev0, n);
  record_array<particle, D2L, sim_space> d1(dev1, n);
  fill_host(host);
  auto e1 = copy(d0, host);
  auto e2 = copy(after(e1), d1, d0);
  copy(after(e2), back, d1).wait();
  expect_filled(back, "back on the host");
}

TEST_F(Records, RoundTripThroughSimDevicesInEveryLayoutPair) {
  for (index_t n : {1, 5, 16, 17, 200, 1001}) {
    SCOPED_TRACE(n);
    device_round_trip<aos, soa, aosoa<4>>(machine, sim0, sim1, n);
    device_round_trip<soa, aosoa<16>, aos>(machine, sim0, sim1, n);
    device_round_trip<aosoa<8>, aosoa<2>, aosoa<8>>(machine, sim0, sim0, n);
    device_round_trip<aosoa<2>, aos, aos>(machine, sim1, sim0, n);
    device_round_trip<soa, soa, soa>(machine, sim0, sim1, n);
  }
}

// One kernel source for every layout and backend: x += v * dt through named accessors,
// once indexing span[i], once with for_each_record (vectorizable on AoSoA).
struct push {
  template <class Self, class P>
  STRATA_FN void operator()(Self const& self, P p, float dt) const {
    for (auto i : self.elements(p.size())) {
      auto r = p[i];
      for (std::size_t d = 0; d < 3; ++d) r.x(d) += r.v(d) * dt;
    }
  }
};
using test::push_each;

template <class L>
void kernels_on(target const& where, place const& machine, index_t n) {
  record_array<particle, L> p(machine, n);
  fill_host(p);
  launch(where, divide_work(where, n), push{}, p.view(), 0.5f).wait();
  launch(where, grid(5).elements(7), push_each{}, p.view(), 0.25f).wait();  // ragged cover
  for (index_t i = 0; i < n; ++i)
    for (std::size_t d = 0; d < 3; ++d) {
      float expect = pos_of(i, d) - pos_of(i, d) * 0.5f;
      if (i < 35) expect -= pos_of(i, d) * 0.25f;
      ASSERT_EQ(p[i].x(d), expect) << "element " << i;
      ASSERT_EQ(p[i].ident(), 1000 + i + (i < 35 ? 1 : 0));
    }
}

class RecordKernels : public test::on_every_backend {};

TEST_P(RecordKernels, SameKernelEveryLayout) {
  for (index_t n : {1, 30, 35, 37, 333}) {
    SCOPED_TRACE(n);
    kernels_on<aos>(here(), machine, n);
    kernels_on<soa>(here(), machine, n);
    kernels_on<aosoa<8>>(here(), machine, n);
    kernels_on<aosoa<16>>(here(), machine, n);
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, RecordKernels, testing::ValuesIn(test::cpu_backends()),
                         test::backend_name);

template <class L>
void sim_kernel(place const& machine, place const& dev, index_t n) {
  record_array<particle, aos> h(machine, n);
  record_array<particle, L, sim_space> d(dev, n);
  fill_host(h);
  auto e = copy(d, h);
  e = launch(after(e), dev, divide_work(dev, n), push{}, d.view(), 0.5f);
  e = launch(after(e), dev, divide_work(dev, n), push_each{}, d.view(), 0.25f);
  copy(after(e), h, d).wait();
  for (index_t i = 0; i < n; ++i)
    for (std::size_t d3 = 0; d3 < 3; ++d3)
      ASSERT_EQ(h[i].x(d3), pos_of(i, d3) - pos_of(i, d3) * 0.75f) << "element " << i;
}

TEST_F(Records, SameKernelOnASimDevice) {
  for (index_t n : {3, 100, 1025}) {
    sim_kernel<aos>(machine, sim0, n);
    sim_kernel<soa>(machine, sim0, n);
    sim_kernel<aosoa<8>>(machine, sim1, n);
  }
}

// AoSoA blocks are whole cache lines (issue 14: {u8, f64, 3 x f32, 2 x i16} gave 400-byte
// blocks, so blocks and the threads writing them shared lines), and copies in and out of
// padded blocks still round-trip, on the host and through a sim device.
struct mixed {
  struct flag : field<std::uint8_t> {};
  struct weight : field<double> {};
  struct pos : field<float, 3> {};
  struct tag : field<std::int16_t, 2> {};
  using fields = strata::fields<flag, weight, pos, tag>;
};

template <class A>
void fill_mixed(A const& a) {
  for (index_t i = 0; i < a.size(); ++i) {
    auto r = a[i];
    r.template get<mixed::flag>() = static_cast<std::uint8_t>(i % 251);
    r.template get<mixed::weight>() = static_cast<double>(i) * 0.25;
    for (std::size_t d = 0; d < 3; ++d)
      r.template get<mixed::pos>(d) = static_cast<float>(i) + static_cast<float>(d) / 4;
    r.template get<mixed::tag>(0) = static_cast<std::int16_t>(i % 1000);
    r.template get<mixed::tag>(1) = static_cast<std::int16_t>(-(i % 999));
  }
}

template <class A>
void expect_mixed(A const& a, char const* what) {
  for (index_t i = 0; i < a.size(); ++i) {
    auto r = a[i];
    ASSERT_EQ(r.template get<mixed::flag>(), i % 251) << what << " " << i;
    ASSERT_EQ(r.template get<mixed::weight>(), static_cast<double>(i) * 0.25) << what << " " << i;
    for (std::size_t d = 0; d < 3; ++d)
      ASSERT_EQ(r.template get<mixed::pos>(d), static_cast<float>(i) + static_cast<float>(d) / 4)
          << what << " " << i;
    ASSERT_EQ(r.template get<mixed::tag>(0), i % 1000) << what << " " << i;
    ASSERT_EQ(r.template get<mixed::tag>(1), -(i % 999)) << what << " " << i;
  }
}

TEST_F(Records, AosoaBlocksAreWholeCacheLines) {
  using m16 = detail::record_map<aosoa<16>, mixed>;
  static_assert(record_traits<mixed>::soa_bytes(16) == 400);
  EXPECT_EQ(m16::block_bytes % 64, 0u);
  EXPECT_EQ(m16::block_bytes, 448u);
  EXPECT_EQ((detail::record_map<aosoa<64>, particle>::block_bytes % 64), 0u);
  struct tiny {
    struct v : field<float, 3> {};
    using fields = strata::fields<v>;
  };
  EXPECT_EQ((detail::record_map<aosoa<1>, tiny>::block_bytes), 16u);  // 12 -> a power of two
  index_t const n = 1000;
  record_array<mixed, aos> a(machine, n), back(machine, n);
  record_array<mixed, aosoa<16>> b(machine, n);
  record_array<mixed, aosoa<16>, sim_space> d(sim0, n);
  record_array<mixed, soa, sim_space> e(sim1, n);
  EXPECT_EQ(b.bytes(), static_cast<std::size_t>((n + 15) / 16) * 448);
  fill_mixed(a);
  auto x = copy(b, a);
  x = copy(after(x), d, b);
  x = copy(after(x), e, d);
  copy(after(x), back, e).wait();
  expect_mixed(b, "aos -> aosoa16");
  expect_mixed(back, "through sim");
}

// divide_work over a record array splits AoSoA work on block boundaries on the CPU.
TEST_F(Records, WorkOnAosoaSplitsOnBlockBoundaries) {
  index_t const n = 100003;
  record_array<particle, aosoa<64>> p(machine, n);
  fill_host(p);
  for (auto b : test::cpu_backends()) {
    auto where = on(machine, b);
    auto s = divide_work(where, p);
    EXPECT_EQ(s.element_extent()[0] % 64, 0) << to_string(b);
    EXPECT_GE(s.global_element_extent()[0], n);
    EXPECT_GT(s.blocks(), 1);
  }
  auto where = on(machine, backend_id::threads);
  launch(where, divide_work(where, p), push_each{}, p.view(), 0.5f).wait();
  for (index_t i = 0; i < n; ++i) {
    ASSERT_EQ(p[i].x(2), pos_of(i, 2) - pos_of(i, 2) * 0.5f) << i;
    ASSERT_EQ(p[i].ident(), 1001 + i) << i;
  }
}

// Overlapping record copies (the same memory seen through two views): on the host they
// read every record before writing any (memmove semantics); a device copy refuses them.
TEST_F(Records, OverlappingCopiesAreMemmovesOrRefused) {
  index_t const n = 1 << 16;  // 3 MiB in AoS: a parallel copy
  auto const rb = static_cast<std::ptrdiff_t>(traits::record_bytes);
  record_array<particle, aos> arr(machine, n + 1);
  record_view<particle, aos> const low(arr.data(), n), high(arr.data() + rb, n);
  fill_host(low);
  copy(high, low).wait();  // dst = x + 1, src = x
  expect_filled(record_view<particle, aos>(arr.data() + rb, n), "shifted up");
  fill_host(high);
  copy(low, high).wait();  // dst = x, src = x + 1
  expect_filled(low, "shifted down");
  // Another layout over the same bytes: the AoS records become an SoA in place.
  record_array<particle, soa> big(machine, n);
  record_view<particle, aos> const as_aos(big.data(), n / 2);
  record_view<particle, soa> const as_soa(big.data(), n / 2);
  fill_host(as_aos);
  copy(as_soa, as_aos).wait();
  expect_filled(as_soa, "aos -> soa in place");
  // Device memory: refused with an error that says why.
  record_array<particle, aos, sim_space> d(sim0, 101);
  record_view<particle, aos, sim_space> const dlow(d.data(), 100), dhigh(d.data() + rb, 100);
  try {
    copy(dhigh, dlow).wait();
    FAIL() << "an overlapping device copy did not throw";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
}

TEST_F(Records, BadInputIsAClearError) {
  record_array<particle, soa> a(machine, 10);
  record_array<particle, aos> b(machine, 11);
  try {
    copy(a, b).wait();
    FAIL() << "copy of unequal sizes did not throw";
  } catch (invalid_argument const& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("10"), std::string::npos) << what;
    EXPECT_NE(what.find("11"), std::string::npos) << what;
  }
  EXPECT_THROW((record_array<particle, soa>(machine, -1)), invalid_argument);
  EXPECT_THROW((record_array<particle, aos>(machine, index_t{1} << 60)), invalid_argument);
  // A host array handed to a sim kernel: the launch checks the view's memory.
  EXPECT_THROW(launch(sim0, divide_work(sim0, 10), push{}, a.view(), 1.0f), invalid_argument);
  // Records are copied, not the memory behind an empty array.
  record_array<particle, soa> empty_a(machine, 0);
  record_array<particle, aosoa<4>, sim_space> empty_b(sim0, 0);
  EXPECT_NO_THROW(copy(empty_b, empty_a).wait());
  // A failed precondition fails the copy on every path (bytes, host kernel, device runs).
  auto failed = event::failed(std::make_exception_ptr(invalid_argument("earlier failure")));
  record_array<particle, soa> a2(machine, 10);
  record_array<particle, aosoa<4>, sim_space> d(sim0, 10);
  EXPECT_THROW(copy(after(failed), a2, a).wait(), invalid_argument);
  EXPECT_THROW(copy(after(failed), b, b).wait(), invalid_argument);
  record_array<particle, aos> c(machine, 10);
  EXPECT_THROW(copy(after(failed), c, a).wait(), invalid_argument);
  EXPECT_THROW(copy(after(failed), d, a).wait(), invalid_argument);
#if !defined(NDEBUG)
  EXPECT_THROW(a.span()[10], invalid_argument);
  // A kernel's out-of-range index reaches wait.
  EXPECT_THROW(launch(
                   on(machine, backend_id::serial), grid(1),
                   [](auto const&, record_span<particle, soa> p) { p[p.size()].q() = 1; }, a.view())
                   .wait(),
               invalid_argument);
#endif
}

}  // namespace
}  // namespace strata
