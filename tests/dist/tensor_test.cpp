// Distributed tensors (include/strata/dist/tensor.hpp) under mpiexec -n 1..4: stencils on
// a grid split over the ranks give, on every rank's rows, exactly what the same sweeps
// give on one big array (halo rows and corners from the neighbouring ranks, the boundary
// policy at the global edges only), through for_each_cell and graphs, on host places and
// on sim devices, with uneven rows and several blocks per rank; mistakes are errors.
#include <strata/dist.hpp>
#include <strata/tensor.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace strata;
namespace dist = strata::dist;

namespace {

struct jacobi5 {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    *out = 0.25 * (*in.offset(0, -1) + *in.offset(0, 1) + *in.offset(1, -1) + *in.offset(1, 1));
  }
};

STRATA_FN constexpr double weight(index_t di, index_t dj) {
  return 1.0 + static_cast<double>(di) + 2.0 * static_cast<double>(dj * dj);
}

// Nine points, unequal weights: the corners of the padding matter.
struct blur9 {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    double s = 0;
    for (index_t di = -1; di <= 1; ++di)
      for (index_t dj = -1; dj <= 1; ++dj) s += *in.offset(0, di).offset(1, dj) * weight(di, dj);
    *out = s / 16.0;
  }
};

double start(index_t i, index_t j) {
  return static_cast<double>((i * 37 + j * 11) % 29) / 29.0 + (i == j ? 1.0 : 0.0);
}

// The reference: `sweeps` steps of the stencil on one (n+2) x (m+2) array; the ring is 0
// (constant policy) or wraps around (periodic).
template <class Cell>
std::vector<double> reference(index_t n, index_t m, int sweeps, bool periodic, Cell cell) {
  auto w = static_cast<std::size_t>(m + 2);
  std::vector<double> a((static_cast<std::size_t>(n) + 2) * w, 0.0), b = a;
  auto at = [w](std::vector<double>& v, index_t i, index_t j) -> double& {
    return v[static_cast<std::size_t>(i + 1) * w + static_cast<std::size_t>(j + 1)];
  };
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < m; ++j) at(a, i, j) = start(i, j);
  for (int s = 0; s < sweeps; ++s) {
    if (periodic) {
      for (index_t i = -1; i <= n; ++i)
        for (index_t j = -1; j <= m; ++j)
          if (i < 0 || i >= n || j < 0 || j >= m) at(a, i, j) = at(a, (i + n) % n, (j + m) % m);
    }
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < m; ++j) {
        auto near = [&](index_t di, index_t dj) { return at(a, i + di, j + dj); };
        if constexpr (std::is_invocable_v<Cell, decltype(near), int>)
          at(b, i, j) = cell(near, s);  // a cell that changes with the sweep
        else
          at(b, i, j) = cell(near);
      }
    std::swap(a, b);
  }
  std::vector<double> out(static_cast<std::size_t>(n * m));
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < m; ++j) out[static_cast<std::size_t>(i * m + j)] = at(a, i, j);
  return out;
}

double jacobi_ref(auto const& at) {
  return 0.25 * (at(-1, 0) + at(1, 0) + at(0, -1) + at(0, 1));
}
double blur_ref(auto const& at) {
  double s = 0;
  for (index_t di = -1; di <= 1; ++di)
    for (index_t dj = -1; dj <= 1; ++dj) s += at(di, dj) * weight(di, dj);
  return s / 16.0;
}

void fill_start(dist::tensor<double, 2> const& t) {
  auto rows = t.local().extent()[0], m = t.extent()[1];
  std::vector<double> v(static_cast<std::size_t>(rows * m));
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < m; ++j)
      v[static_cast<std::size_t>(i * m + j)] = start(t.origin()[0] + i, j);
  copy(t.local(), view<double, 2>(ptr<double, host_space>(v.data(), 0), vec<2>{rows, m})).wait();
}

// This rank's rows against the reference, bit for bit (same operations in the same order).
void expect_rows(dist::tensor<double, 2> const& t, std::vector<double> const& ref,
                 std::string const& what) {
  auto rows = t.local().extent()[0], m = t.extent()[1];
  std::vector<double> v(static_cast<std::size_t>(rows * m));
  copy(view<double, 2>(ptr<double, host_space>(v.data(), 0), vec<2>{rows, m}), t.local()).wait();
  int bad = 0;
  for (index_t i = 0; i < rows && bad < 5; ++i)
    for (index_t j = 0; j < m && bad < 5; ++j) {
      auto g = static_cast<std::size_t>((t.origin()[0] + i) * m + j);
      if (v[static_cast<std::size_t>(i * m + j)] != ref[g]) {
        ++bad;
        ADD_FAILURE() << what << ": rank " << dist::runtime::current().rank() << " cell ("
                      << t.origin()[0] + i << ", " << j << ") is "
                      << v[static_cast<std::size_t>(i * m + j)] << ", one big grid gives "
                      << ref[g];
      }
    }
}

}  // namespace

TEST(DistTensor, JacobiOnRanksIsJacobiOnOneGrid) {
  dist::runtime rt;
  index_t const n = 37, m = 23;  // uneven rows per rank
  int const sweeps = 6;
  tensor_spec<2> spec{.sub_partitions = {2, 2}, .padding = 1};
  dist::tensor<double, 2> a(rt.world(), {n, m}, {rt.machine()}, spec);
  dist::tensor<double, 2> b(rt.world(), {n, m}, {rt.machine()}, spec);
  dist::set_boundary(a, boundary::constant<double>{0.0});
  dist::set_boundary(b, boundary::constant<double>{0.0});
  EXPECT_EQ(a.local().extent()[0], a.rows(rt.rank()));
  fill_start(a);
  for (int s = 0; s < sweeps / 2; ++s) {
    for_each_cell(jacobi5{}, concurrent_padded_access(a.local()), b.local()).wait();
    for_each_cell(jacobi5{}, exclusive_padded_access(b.local()), a.local()).wait();
  }
  expect_rows(a, reference(n, m, sweeps, false, [](auto at) { return jacobi_ref(at); }), "jacobi");
}

TEST(DistTensor, PeriodicNinePointGraphOnSimDevices) {
  runtime_options o;
  o.sim_devices = "2:bw=20GB/s,lat=2us";
  dist::runtime rt(o);
  auto devs = rt.machine().slice(isa::sim).descendants(place_type::device);
  ASSERT_EQ(devs.size(), 2u);
  index_t const n = 4 * rt.size() + 3, m = 17;
  int const sweeps = 4;
  tensor_spec<2> spec{.partitions = {2, 1}, .padding = 1};
  dist::tensor<double, 2> a(rt.world(), {n, m}, devs, spec), b(rt.world(), {n, m}, devs, spec);
  dist::set_boundary(a, boundary::periodic{});
  dist::set_boundary(b, boundary::periodic{});
  fill_start(a);
  graph g;
  g.then_split(blur9{}, concurrent_padded_access(a.local()), b.local())
      .then_split(blur9{}, concurrent_padded_access(b.local()), a.local());
  for (int s = 0; s < sweeps / 2; ++s) run(g).wait();
  expect_rows(a, reference(n, m, sweeps, true, [](auto at) { return blur_ref(at); }),
              "periodic blur");
  // The same tensor again, through load_padding and a plain kernel: the exchange counts
  // of every face still pair up.
  load_padding(a.local()).wait();
  for_each_cell(blur9{}, a.local(), b.local()).wait();
  expect_rows(b, reference(n, m, sweeps + 1, true, [](auto at) { return blur_ref(at); }),
              "one more");
}

// A dimensionally split scheme: the x sweep loads its padding along(1) (no rows from other
// ranks), the y sweep along(0) (rows from the neighbouring ranks); the result is the same
// sweeps on one big grid.
struct sweep_x {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    *out = 0.25 * *in.offset(1, -1) + 0.5 * *in + 0.125 * *in.offset(1, 1);
  }
};
struct sweep_y {
  template <class In, class Out>
  STRATA_FN void operator()(In& in, Out& out) const {
    *out = 0.125 * *in.offset(0, -1) + 0.5 * *in + 0.25 * *in.offset(0, 1);
  }
};

TEST(DistTensor, SweepsAlongOneDimensionEqualSweepsOnOneGrid) {
  dist::runtime rt;
  index_t const n = 5 * rt.size() + 2, m = 19;
  int const sweeps = 6;
  tensor_spec<2> spec{.sub_partitions = {2, 1}, .padding = 1};
  dist::tensor<double, 2> a(rt.world(), {n, m}, {rt.machine()}, spec);
  dist::tensor<double, 2> b(rt.world(), {n, m}, {rt.machine()}, spec);
  dist::set_boundary(a, boundary::constant<double>{0.0});
  dist::set_boundary(b, boundary::constant<double>{0.0});
  fill_start(a);
  graph g;
  g.then_split(sweep_x{}, concurrent_padded_access(a.local()).along(1), b.local())
      .then_split(sweep_y{}, concurrent_padded_access(b.local()).along(0), a.local());
  for (int s = 0; s < sweeps / 2; ++s) run(g).wait();
  expect_rows(a,
              reference(n, m, sweeps, false,
                        [](auto at, int s) {
                          return s % 2 == 0 ? 0.25 * at(0, -1) + 0.5 * at(0, 0) + 0.125 * at(0, 1)
                                            : 0.125 * at(-1, 0) + 0.5 * at(0, 0) + 0.25 * at(1, 0);
                        }),
              "sweeps along x, then y");
}

// The padding rows of block `b` on side 0 (above) or 1 (below), with their padding
// columns, copied to the host.
template <class S>
std::vector<double> padding_rows(strata::tensor<double, 2> const& t, std::size_t b, int side) {
  index_t const p = t.padding();
  auto const ext = t.block(b).extent;
  vec<2> const lo{side == 0 ? -p : ext[0], -p}, box{p, ext[1] + 2 * p};
  std::vector<double> v(static_cast<std::size_t>(box.product()));
  copy(view<double, 2>(ptr<double, host_space>(v.data(), 0), box),
       t.template local_view<S>(b, lo, box))
      .wait();
  return v;
}

// Every cell of the padding rows that face a neighbouring rank holds `value(neighbour)`.
template <class S>
void expect_neighbours_rows(dist::tensor<double, 2> const& t, auto value, std::string const& what,
                            bool periodic = false) {
  int const me = t.members().rank(), size = t.members().size();
  auto const& g = t.local().state().geo;
  for (std::size_t b = 0; b < t.local().blocks(); ++b) {
    auto const c = g.coord(b);
    for (int side = 0; side < 2; ++side) {
      int peer = side == 0 ? me - 1 : me + 1;
      if (periodic) peer = (peer + size) % size;
      bool const outer = side == 0 ? c[0] == 0 : c[0] == g.blocks[0] - 1;
      if (!outer || peer < 0 || peer >= size) continue;
      auto const rows = padding_rows<S>(t.local(), b, side);
      auto const bad =
          std::count_if(rows.begin(), rows.end(), [&](double x) { return x != value(peer); });
      EXPECT_EQ(bad, 0) << what << ": rank " << me << ", block " << b << ", side " << side
                        << ": cells not from rank " << peer << " (first " << rows.front()
                        << ", expected " << value(peer) << ")";
    }
  }
}

// On one node with direct access (the start-up probe worked, STRATA_DIST_DIRECT not 0),
// every face between two host blocks exchanged without messages: the tests above do not
// pass over MPI unnoticed.
void expect_direct_faces(dist::tensor<double, 2> const& t) {
  if (t.members().size() < 2 || !dist::detail::direct_access(t.members())) return;
  for (auto const& sides : t.state().faces)
    for (auto const& f : sides)
      if (f->peer >= 0) {
        std::lock_guard lock(f->mutex);
        EXPECT_TRUE(f->direct) << "a face with team rank " << f->peer << " exchanged messages";
      }
}

// Ranks at uneven paces (one sleeps before some exchanges): every exchange delivers the
// neighbour's rows of that same exchange, never those it writes next. On one node the
// rows go through a block the neighbour maps (docs/dist.md "Halo rows on one node"): an
// exchange that ended before the neighbour had read it would let the next one overwrite
// it. Several column blocks of uneven widths, padding 2; ctest runs it with messages
// (dist.messages) and with process_vm_readv (dist.reads) too.
TEST(DistTensor, UnevenRanksNeverReadANeighboursNextRows) {
  dist::runtime rt;
  index_t const n = 3 * rt.size() + 4, m = 29;
  tensor_spec<2> spec{.partitions = {1, 3}, .padding = 2};
  dist::tensor<double, 2> t(rt.world(), {n, m}, {rt.machine()}, spec);
  unsigned seed = 12345u + static_cast<unsigned>(rt.rank());
  for (int i = 0; i < 150; ++i) {
    auto value = [i](int r) { return (r + 1) * 1000.0 + i; };
    fill(t.local(), value(rt.rank())).wait();  // the padding too
    seed = seed * 1103515245u + 12345u;
    if (rt.rank() % 2 == i % 2)
      std::this_thread::sleep_for(std::chrono::microseconds((seed >> 16) % 300));
    load_padding(t.local()).wait();
    expect_neighbours_rows<host_space>(t, value, "exchange " + std::to_string(i));
    if (::testing::Test::HasFailure()) break;
  }
  expect_direct_faces(t);
}

// Two threads fill the padding of the same blocks at once, 30 times each, on every rank:
// a face's exchanges pair up with the neighbour's in the order they are chained (on one
// node by count, which a count taken before the face's lock got wrong: a deadlock).
TEST(DistTensor, TwoThreadsFillingOnePaddingAtOnceDoNotDeadlock) {
  dist::runtime rt;
  index_t const n = 4 * rt.size(), m = 40;
  dist::tensor<double, 2> t(rt.world(), {n, m}, {rt.machine()},
                            tensor_spec<2>{.partitions = {1, 2}, .padding = 1});
  auto value = [](int r) { return r + 1.0; };
  fill(t.local(), value(rt.rank())).wait();
  auto fills = [&] {
    for (int i = 0; i < 30; ++i) load_padding(t.local()).wait();
  };
  std::thread other(fills);
  fills();
  other.join();
  load_padding(t.local()).wait();
  expect_neighbours_rows<host_space>(t, value, "after 61 exchanges");
  expect_direct_faces(t);
}

// Periodic on host blocks: with 2 ranks both faces of a rank go to the same neighbour,
// each pair of faces with its own blocks and counts.
TEST(DistTensor, PeriodicRowsOnTheHost) {
  dist::runtime rt;
  index_t const n = 3 * rt.size() + 1, m = 9;
  dist::tensor<double, 2> t(rt.world(), {n, m}, {rt.machine()}, tensor_spec<2>{.padding = 1});
  dist::set_boundary(t, boundary::periodic{});
  for (int i = 0; i < 30; ++i) {
    auto value = [i](int r) { return (r + 1) * 10.0 + i; };
    fill(t.local(), value(rt.rank())).wait();
    load_padding(t.local()).wait();
    expect_neighbours_rows<host_space>(t, value, "periodic exchange " + std::to_string(i), true);
  }
  expect_direct_faces(t);
}

TEST(DistTensor, MistakesAreErrors) {
  dist::runtime rt;
  tensor_spec<2> spec{.padding = 1};
  // A different global shape on one rank: every rank learns it.
  index_t const m = rt.size() > 1 && rt.rank() == 1 ? 9 : 8;
  if (rt.size() > 1) {
    try {
      dist::tensor<double, 2> t(rt.world(), {8, m}, {rt.machine()}, spec);
      ADD_FAILURE() << "a different extent on rank 1 was accepted";
    } catch (invalid_argument const& e) {
      EXPECT_NE(std::string(e.what()).find("different global shape"), std::string::npos)
          << e.what();
    }
  }
  // Fewer rows than ranks times padding.
  EXPECT_THROW((dist::tensor<double, 2>(rt.world(), {index_t(rt.size()) - 1 + 0, 8}, {rt.machine()},
                                        tensor_spec<2>{.padding = 1})),
               invalid_argument);
  // Sizes of a send and its receive that differ fail the receive.
  if (rt.size() > 1 && rt.rank() < 2) {
    std::vector<int> out(4, 1), in(3);
    int const peer = 1 - rt.rank();
    auto s = dist::send(rt.world(), peer, 5, std::span<int const>(out));
    auto r = dist::recv(rt.world(), peer, 5, std::span<int>(in));
    EXPECT_THROW(r.wait(), error);
    try {
      s.wait();
    } catch (...) {
    }
  }
  EXPECT_THROW(dist::send(rt.world(), rt.size(), 0, std::span<int const>()), invalid_argument);
  EXPECT_THROW(dist::recv(rt.world(), 0, 40000, std::span<int>()), invalid_argument);
  // More blocks across the rows than the halo tags can name (an outside probe: accepted,
  // then a division by zero in the first exchange).
  try {
    dist::tensor<float, 2> t(rt.world(), {index_t(rt.size()) * 2, 16385}, {rt.machine()},
                             tensor_spec<2>{.partitions = {1, 16385}, .padding = 1});
    ADD_FAILURE() << "16385 column blocks were accepted";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("at most 16384"), std::string::npos) << e.what();
  }
}

// Construction is collective: a mistake only one rank can see (its own arguments, or its
// part of an uneven split that the local tensor refuses) is invalid_argument on every
// rank, naming that rank, instead of an error there and a hang elsewhere.
TEST(DistTensor, AMistakeOnOneRankIsAnErrorOnEveryRank) {
  dist::runtime rt;
  int const size = rt.size();
  if (size > 1) {
    // Rank 1 passes fewer rows than ranks.
    index_t const rows = rt.rank() == 1 ? 1 : 8;
    try {
      dist::tensor<double, 2> t(rt.world(), {rows, 8}, {rt.machine()},
                                tensor_spec<2>{.padding = 1});
      ADD_FAILURE() << "rank 1's row count was accepted on rank " << rt.rank();
    } catch (invalid_argument const& e) {
      EXPECT_NE(std::string(e.what()).find("team rank 1 failed: 1 rows over"), std::string::npos)
          << e.what();
    }
    // The same arguments everywhere: 3 * size + 1 rows give rank 0 four rows and the
    // others three, so two row blocks with padding 2 fit rank 0 only.
    try {
      dist::tensor<double, 2> t(rt.world(), {3 * index_t(size) + 1, 8}, {rt.machine()},
                                tensor_spec<2>{.sub_partitions = {2, 1}, .padding = 2});
      ADD_FAILURE() << "a block smaller than the padding was accepted on rank " << rt.rank();
    } catch (invalid_argument const& e) {
      EXPECT_NE(std::string(e.what()).find("team rank 1 failed: its 3 of"), std::string::npos)
          << e.what();
    }
  }
  // The team goes on: a good tensor and its exchange.
  dist::tensor<double, 2> t(rt.world(), {4 * index_t(size), 8}, {rt.machine()},
                            tensor_spec<2>{.sub_partitions = {2, 1}, .padding = 2});
  dist::set_boundary(t, boundary::constant<double>{0.0});
  EXPECT_TRUE(load_padding(t.local()).wait_for(std::chrono::seconds(30)));
}

// Ranks whose rows live in different memories (ctest dist.devices: one sim device per
// rank): even ranks on the host, odd ranks on their device. The two sides of a face must
// pick the same protocol (a host block on one node would exchange directly, a device
// block by messages): both use messages, and the rows arrive.
TEST(DistDevice, TensorRowsBetweenHostAndDeviceRanks) {
  dist::runtime rt;
  auto devices = rt.machine().slice(isa::sim).descendants(place_type::device);
  if (devices.empty()) {
    if (std::getenv("STRATA_SIM_DEVICES")) FAIL() << "STRATA_SIM_DEVICES is set, yet no device";
    GTEST_SKIP() << "no device on this rank (ctest dist.devices.* sets STRATA_SIM_DEVICES)";
  }
  bool const on_device = rt.rank() % 2 == 1;
  std::vector<place> where{on_device ? devices.front() : rt.machine()};
  index_t const n = 4 * rt.size() + 1, m = 13;
  dist::tensor<double, 2> t(rt.world(), {n, m}, where, tensor_spec<2>{.padding = 1});
  for (int i = 0; i < 20; ++i) {
    auto value = [i](int r) { return (r + 1) * 100.0 + i; };
    fill(t.local(), value(rt.rank())).wait();
    load_padding(t.local()).wait();
    if (on_device)
      expect_neighbours_rows<sim_space>(t, value, "exchange " + std::to_string(i));
    else
      expect_neighbours_rows<host_space>(t, value, "exchange " + std::to_string(i));
  }
}
