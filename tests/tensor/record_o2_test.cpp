// Record kernels and copies that GCC 12.2 miscompiled at -O2 (docs/records.md, "A GCC 12
// miscompile"): the kernels are templates instantiated in the user's unit, so this unit is
// compiled at the RelWithDebInfo -O2, not at the other tests' -Og (tests/CMakeLists.txt),
// where none of the three instances shows.
#include "support.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace strata;

namespace {

// A record whose AoS form has padding (8 + 4 bytes, aligned to 8): GCC deleted the whole
// body of the launched kernel of a SoA -> AoS record copy (found with the Eikonal app).
// Record proxies now copy components with fixed-size memcpy (layout/record.hpp,
// copy_component).
struct padded_rec {
  struct v : field<double> {};
  struct s : field<std::int32_t> {};
  using fields = strata::fields<v, s>;
};

TEST(RecordTensorAliasing, PaddedRecordsCopyFromSoaToAosAndBack) {
  auto host = tensor_test::host().front();
  index_t const n = 8;
  tensor<records<padded_rec, soa>, 2> t({host}, tensor_spec<2>{.extent = {n, n}, .padding = 1});
  for_each_cell(
      [n](auto& it) {
        auto o = *it;
        o[padded_rec::v{}] = double(1 + it.global_index(0) * n + it.global_index(1));
        o[padded_rec::s{}] = 7;
      },
      t)
      .wait();
  record_array<padded_rec, aos> b(host, n * n);
  copy(b.view(), t).wait();
  for (index_t k = 0; k < n * n; ++k) {
    ASSERT_EQ(double(b[k][padded_rec::v{}]), 1.0 + double(k)) << "record " << k;
    ASSERT_EQ(std::int32_t(b[k][padded_rec::s{}]), 7) << "record " << k;
  }
  tensor<records<padded_rec, aos>, 2> back({host}, tensor_spec<2>{.extent = {n, n}});
  copy(back, b.view()).wait();
  record_array<padded_rec, soa> c(host, n * n);
  copy(c.view(), back).wait();
  for (index_t k = 0; k < n * n; ++k) ASSERT_EQ(double(c[k][padded_rec::v{}]), 1.0 + double(k));
}

using tensor_test::cell;

// The second instance (session 25): the gather kernel of `copy(record_view, tensor)` for
// SoA blocks was emitted as a bare `ret` (nothing written) when its lambda captured the
// block's record span by reference. Gathers and scatters of SoA blocks with padding, into
// and from every layout, on the host and a sim device.
template <class L>
void gather_scatter(std::vector<place> const& where) {
  index_t const rows = 13, cols = 10;
  tensor<records<cell, soa>, 2> t(
      where, tensor_spec<2>{.extent = {rows, cols}, .partitions = {2, 2}, .padding = 1});
  for_each_cell(
      [cols](auto& it) {
        auto const k = it.global_index(0) * cols + it.global_index(1);
        auto o = *it;
        o[cell::rho{}] = 0.5 + double(k);
        o[cell::vel{}][0] = float(k % 97);
        o[cell::vel{}][1] = -float(k % 89);
        o[cell::tag{}] = std::int32_t(k * 3);
      },
      t)
      .wait();
  auto const host = tensor_test::host().front();
  record_array<cell, L> a(host, rows * cols);
  copy(a.view(), t).wait();
  for (index_t k = 0; k < rows * cols; ++k) {
    auto r = a[k];
    ASSERT_EQ(double(r[cell::rho{}]), 0.5 + double(k)) << "record " << k;
    ASSERT_EQ(float(r[cell::vel{}][0]), float(k % 97)) << "record " << k;
    ASSERT_EQ(float(r[cell::vel{}][1]), -float(k % 89)) << "record " << k;
    ASSERT_EQ(std::int32_t(r[cell::tag{}]), std::int32_t(k * 3)) << "record " << k;
    r[cell::tag{}] = std::int32_t(k + 1000);
  }
  copy(t, a.view()).wait();
  record_array<cell, aos> b(host, rows * cols);
  copy(b.view(), t).wait();
  for (index_t k = 0; k < rows * cols; ++k) {
    ASSERT_EQ(std::int32_t(b[k][cell::tag{}]), std::int32_t(k + 1000)) << "record " << k;
    ASSERT_EQ(double(b[k][cell::rho{}]), 0.5 + double(k)) << "record " << k;
  }
}

// The third (session 38): the threads and sim backends lost whole launches (the call of
// run_blocks or run_streaming deleted, docs/records.md), e.g. a kernel writing SoA records
// through `auto o = *it`: the tensor kept its old bytes. In this unit GCC happened to keep
// that launch even before the fix (the gather below lost its kernel's writes instead);
// record_o2_kernel_main.cpp is the one-kernel program that lost it.
TEST(RecordTensorAliasing, KernelWritesThroughACopiedProxyReachTheTensor) {
  for (auto where : {"host", "sim2"}) {
    auto const places = tensor_test::places(where);
    tensor<records<cell, soa>, 2> t(places, tensor_spec<2>{.extent = {4, 4}});
    for_each_cell(
        [](auto& it) {
          auto o = *it;
          o[cell::rho{}] = 0.5;
          o[cell::vel{}][1] = 2.0f;
          o[cell::tag{}] = 7;
        },
        t)
        .wait();
    record_array<cell, aos> a(tensor_test::host().front(), 16);
    copy(a.view(), t).wait();
    for (index_t k = 0; k < 16; ++k) {
      ASSERT_EQ(double(a[k][cell::rho{}]), 0.5) << where << " record " << k;
      ASSERT_EQ(float(a[k][cell::vel{}][1]), 2.0f) << where << " record " << k;
      ASSERT_EQ(std::int32_t(a[k][cell::tag{}]), 7) << where << " record " << k;
    }
  }
}

TEST(RecordTensorAliasing, SoaBlocksGatherAndScatterThroughEveryLayout) {
  for (auto where : {"host", "sim2"}) {
    SCOPED_TRACE(where);
    gather_scatter<aos>(tensor_test::places(where));
    gather_scatter<soa>(tensor_test::places(where));
    gather_scatter<aosoa<4>>(tensor_test::places(where));
  }
}

}  // namespace
