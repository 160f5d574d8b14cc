#include "dist_fft.hpp"

#include <fftw3.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>

namespace apps {

namespace dist = strata::dist;
using strata::index_t;

namespace {

// FFTW's planner is not thread-safe (only fftw_execute is): plans are made and destroyed
// under this lock.
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

fftw_complex* as_fftw(complex* p) {
  // FFTW documents std::complex<double> as layout-compatible with fftw_complex.
  return reinterpret_cast<fftw_complex*>(p);
}

// `howmany` contiguous transforms of length n, each following the last, in place.
fftw_plan plan_contiguous(index_t n, index_t howmany, complex* data, int sign, unsigned flags) {
  if (howmany == 0) return nullptr;  // a rank without rows or columns has nothing to do
  int const len = static_cast<int>(n);
  std::lock_guard lock(planner_mutex());
  fftw_plan p = fftw_plan_many_dft(1, &len, static_cast<int>(howmany), as_fftw(data), nullptr, 1,
                                   len, as_fftw(data), nullptr, 1, len, sign, flags);
  if (!p)
    throw strata::error("distributed_fft2d: FFTW could not plan " + std::to_string(howmany) +
                        " transforms of length " + std::to_string(n));
  return p;
}

// The n1 columns of a row-major n0 x n1 array, each a transform of stride n1, in place.
fftw_plan plan_strided_columns(index_t n0, index_t n1, complex* data, int sign, unsigned flags) {
  int const len = static_cast<int>(n0), stride = static_cast<int>(n1);
  std::lock_guard lock(planner_mutex());
  fftw_plan p = fftw_plan_many_dft(1, &len, stride, as_fftw(data), nullptr, stride, 1,
                                   as_fftw(data), nullptr, stride, 1, sign, flags);
  if (!p)
    throw strata::error("distributed_fft2d: FFTW could not plan the columns of a " +
                        std::to_string(n0) + " x " + std::to_string(n1) + " array");
  return p;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

dist::array_type<2> fft_rows_type(index_t n0, index_t n1, int ranks) {
  using dist::distribution;
  return {.extent = {n0, n1},
          .dist = {distribution::block(), distribution::whole()},
          .grid = {ranks, 1}};
}

dist::array_type<2> fft_columns_type(index_t n0, index_t n1, int ranks) {
  using dist::distribution;
  // Stored in order {1, 0}: a rank's columns one after another, each N0 long. This is
  // what makes the copy from the row type the whole transpose (PARRAY Listing 46's
  // "local adjustment" happens in the copy's unpack) and leaves each column contiguous
  // for FFTW.
  return {.extent = {n0, n1},
          .dist = {distribution::whole(), distribution::block()},
          .grid = {1, ranks},
          .order = {1, 0}};
}

struct distributed_fft2d::state {
  dist::team team;
  index_t n0, n1;
  fft2d_options options;
  dist::array<complex, 2> rows, columns;
  // Forward and backward plans over this rank's rows of `rows` and columns of `columns`.
  fftw_plan row_forward = nullptr, row_backward = nullptr;
  fftw_plan column_forward = nullptr, column_backward = nullptr;
  fft_phases phases;
  // One rank and the natural layout: the column FFTs run in place on `rows`.
  bool columns_in_place;

  state(dist::team t, index_t a, index_t b, fft2d_options o)
      : team(std::move(t)),
        n0(a),
        n1(b),
        options(o),
        rows(team, fft_rows_type(a, b, team.size())),
        columns(team, fft_columns_type(a, b, team.size())),
        columns_in_place(team.size() == 1 && o.output == fft_layout::natural) {}

  ~state() {
    std::lock_guard lock(planner_mutex());
    for (auto p : {row_forward, row_backward, column_forward, column_backward})
      if (p) fftw_destroy_plan(p);
  }

  static void run(fftw_plan p) {
    if (p) fftw_execute(p);
  }

  // The global transpose (either direction): one dist::copy, collective.
  void transpose(dist::array<complex, 2>& to, dist::array<complex, 2> const& from) {
    auto const t0 = std::chrono::steady_clock::now();
    dist::copy(to, from).wait();
    phases.transpose += seconds_since(t0);
  }
  void timed(double& slot, fftw_plan p) {
    auto const t0 = std::chrono::steady_clock::now();
    run(p);
    slot += seconds_since(t0);
  }
};

distributed_fft2d::distributed_fft2d(dist::team const& team, index_t n0, index_t n1,
                                     fft2d_options options) {
  // Every rank's arguments first, so that a mistake on one rank fails all of them alike
  // instead of leaving the others inside a collective.
  auto own = dist::runtime::current().make_team(team.ranks());
  std::int64_t const mine[4] = {n0, n1, static_cast<std::int64_t>(options.output),
                                static_cast<std::int64_t>(options.planning)};
  auto const size = static_cast<std::size_t>(own.size());
  std::vector<std::int64_t> all(4 * size);
  dist::all_gather(own, std::span<std::int64_t const>(mine), std::span(all)).wait();
  char const* const names[4] = {"N0", "N1", "the output layout", "the planning"};
  for (std::size_t r = 0; r < size; ++r)
    for (std::size_t k = 0; k < 4; ++k)
      if (all[r * 4 + k] != all[k])
        throw strata::invalid_argument(
            "distributed_fft2d: team rank " + std::to_string(r) + " passed " + names[k] + " = " +
            std::to_string(all[r * 4 + k]) + ", team rank 0 " + std::to_string(all[k]) +
            "; expected the same on every rank");
  for (auto [n, name] : {std::pair{n0, "N0"}, std::pair{n1, "N1"}})
    if (n < 1 || n > INT_MAX)
      throw strata::invalid_argument("distributed_fft2d: " + std::string(name) + " = " +
                                     std::to_string(n) + "; expected 1 to " +
                                     std::to_string(INT_MAX) + " (FFTW's lengths are int)");

  state_ = std::make_unique<state>(std::move(own), n0, n1, options);
  auto& s = *state_;
  unsigned const flags = options.planning == fft_planning::measure ? FFTW_MEASURE : FFTW_ESTIMATE;
  auto const local_rows = s.rows.local_extent()[0];
  auto const local_columns = s.columns.local_extent()[1];
  s.row_forward = plan_contiguous(n1, local_rows, s.rows.local().data(), FFTW_FORWARD, flags);
  s.row_backward = plan_contiguous(n1, local_rows, s.rows.local().data(), FFTW_BACKWARD, flags);
  if (s.columns_in_place) {
    // One rank, natural layout: no transpose is needed at all (there is no other rank to
    // exchange with, and the result stays in rows()), so the column FFTs run strided in
    // place, as FFTW's own 2-D plan does on one process.
    s.column_forward = plan_strided_columns(n0, n1, s.rows.local().data(), FFTW_FORWARD, flags);
    s.column_backward = plan_strided_columns(n0, n1, s.rows.local().data(), FFTW_BACKWARD, flags);
  } else {
    s.column_forward =
        plan_contiguous(n0, local_columns, s.columns.local().data(), FFTW_FORWARD, flags);
    s.column_backward =
        plan_contiguous(n0, local_columns, s.columns.local().data(), FFTW_BACKWARD, flags);
  }
}

distributed_fft2d::~distributed_fft2d() = default;
distributed_fft2d::distributed_fft2d(distributed_fft2d&&) noexcept = default;
distributed_fft2d& distributed_fft2d::operator=(distributed_fft2d&&) noexcept = default;

index_t distributed_fft2d::n0() const {
  return state_->n0;
}
index_t distributed_fft2d::n1() const {
  return state_->n1;
}
fft2d_options const& distributed_fft2d::options() const {
  return state_->options;
}
dist::array<complex, 2>& distributed_fft2d::rows() {
  return state_->rows;
}
dist::array<complex, 2>& distributed_fft2d::columns() {
  return state_->columns;
}
dist::array<complex, 2>& distributed_fft2d::output() {
  return state_->options.output == fft_layout::transposed ? state_->columns : state_->rows;
}
fft_phases const& distributed_fft2d::last_phases() const {
  return state_->phases;
}

void distributed_fft2d::forward() {
  auto& s = *state_;
  s.phases = {};
  s.timed(s.phases.rows, s.row_forward);
  if (s.columns_in_place) return s.timed(s.phases.columns, s.column_forward);
  s.transpose(s.columns, s.rows);
  s.timed(s.phases.columns, s.column_forward);
  if (s.options.output == fft_layout::natural) s.transpose(s.rows, s.columns);
}

void distributed_fft2d::inverse() {
  auto& s = *state_;
  s.phases = {};
  if (s.columns_in_place) {
    s.timed(s.phases.rows, s.row_backward);
    s.timed(s.phases.columns, s.column_backward);
  } else {
    if (s.options.output == fft_layout::natural) {
      s.timed(s.phases.rows, s.row_backward);
      s.transpose(s.columns, s.rows);
    }
    s.timed(s.phases.columns, s.column_backward);
    s.transpose(s.rows, s.columns);
    if (s.options.output == fft_layout::transposed) s.timed(s.phases.rows, s.row_backward);
  }
  auto const t0 = std::chrono::steady_clock::now();
  double const k = 1.0 / (static_cast<double>(s.n0) * static_cast<double>(s.n1));
  for (auto& x : s.rows.local()) x *= k;
  s.phases.scale = seconds_since(t0);
}

complex fft_test_value(index_t i, index_t j) {
  // Small integers mixed with a smooth part: exact in double, different for (i, j) and
  // (j, i), and with no zero rows or columns.
  auto const a = static_cast<double>((i * 7 + j * 3) % 11) - 5.0;
  auto const b = static_cast<double>((i * 5 + j * j) % 13) - 6.0;
  return {a + 0.25 * std::cos(0.1 * static_cast<double>(i)),
          b + 0.5 * std::sin(0.07 * static_cast<double>(j))};
}

void fill_fft_test_input(dist::array<complex, 2>& a) {
  a.for_each([](strata::vec<2> const& i, complex& x) { x = fft_test_value(i[0], i[1]); });
}

std::vector<complex> gather_natural(dist::array<complex, 2> const& a) {
  auto type = a.type();
  type.dist = {dist::distribution::whole(), dist::distribution::whole()};
  type.grid = {1, 1};
  type.order = {0, 1};
  dist::array<complex, 2> whole(a.members(), type);
  dist::copy(whole, a).wait();
  if (a.members().rank() != 0) return {};
  return {whole.local().begin(), whole.local().end()};
}

void reference_fft2d(index_t n0, index_t n1, std::span<complex> data, int sign) {
  if (n0 < 1 || n1 < 1 || n0 > INT_MAX || n1 > INT_MAX)
    throw strata::invalid_argument("reference_fft2d: " + std::to_string(n0) + " x " +
                                   std::to_string(n1) + "; expected sizes of 1 to INT_MAX");
  if (data.size() != static_cast<std::size_t>(n0 * n1))
    throw strata::invalid_argument("reference_fft2d: " + std::to_string(data.size()) +
                                   " elements for a " + std::to_string(n0) + " x " +
                                   std::to_string(n1) + " array");
  if (sign != FFTW_FORWARD && sign != FFTW_BACKWARD)
    throw strata::invalid_argument("reference_fft2d: sign " + std::to_string(sign) +
                                   "; expected -1 (forward) or +1 (backward)");
  fftw_plan p;
  {
    std::lock_guard lock(planner_mutex());
    p = fftw_plan_dft_2d(static_cast<int>(n0), static_cast<int>(n1), as_fftw(data.data()),
                         as_fftw(data.data()), sign, FFTW_ESTIMATE);
  }
  if (!p) throw strata::error("reference_fft2d: FFTW could not plan the transform");
  fftw_execute(p);
  std::lock_guard lock(planner_mutex());
  fftw_destroy_plan(p);
}

double max_relative_difference(std::span<complex const> a, std::span<complex const> b) {
  if (a.size() != b.size())
    throw strata::invalid_argument("max_relative_difference: " + std::to_string(a.size()) +
                                   " elements against " + std::to_string(b.size()));
  double diff = 0, scale = std::numeric_limits<double>::min();
  for (std::size_t k = 0; k < a.size(); ++k) {
    double const d = std::abs(a[k] - b[k]);
    if (std::isnan(d)) return d;
    diff = std::max(diff, d);
    scale = std::max(scale, std::abs(b[k]));
  }
  return diff / scale;
}

double fft_tolerance(index_t n0, index_t n1) {
  return 1e-10 * std::log2(std::max(2.0, static_cast<double>(n0) * static_cast<double>(n1)));
}

double fft_flops(index_t n0, index_t n1) {
  double const n = static_cast<double>(n0) * static_cast<double>(n1);
  return 5.0 * n * std::log2(std::max(n, 1.0));
}

}  // namespace apps
