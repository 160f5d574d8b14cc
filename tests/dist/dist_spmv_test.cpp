// The distributed SpMV (apps/common/dist_spmv.hpp) under mpiexec at 1-4 ranks: every rank
// makes the same global matrix, keeps its rows, and its y rows must equal the single-rank
// reference product of the whole matrix (computed on every rank). Row counts that the
// rank counts do not divide, a rank with no remote columns, a rank with no rows, the
// power-law matrix, sim devices, repeated products and bad input.
#include "dist_spmv.hpp"
#include "sparse.hpp"

#include <gtest/gtest.h>
#include <strata/dist.hpp>

#include <string>
#include <vector>

namespace dist = strata::dist;

namespace {

std::vector<strata::target> host(dist::runtime const& rt) {
  return {rt.machine()};
}

// x_i of the global vector: varied, so that a wrong ghost shows in y.
double x_at(std::size_t i, int round) {
  return 1.0 + static_cast<double>((i * 7 + static_cast<std::size_t>(round)) % 11) / 8;
}

// Multiplies on every rank and checks this rank's rows against the whole product.
void check_against_reference(dist::runtime const& rt, apps::csr_matrix const& a,
                             std::vector<strata::target> const& where, int rounds = 2) {
  auto const bounds = apps::split_over_ranks(a, rt.size());
  auto const me = static_cast<std::size_t>(rt.rank());
  auto block = apps::extract_rows(a, bounds[me], bounds[me + 1]);
  apps::distributed_spmv product(rt.world(), a.rows, block, where);
  EXPECT_EQ(product.row_bounds(), bounds);
  auto const first = static_cast<std::size_t>(bounds[me]);
  auto const rows = static_cast<std::size_t>(bounds[me + 1] - bounds[me]);
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> x_all(static_cast<std::size_t>(a.cols)),
        want(static_cast<std::size_t>(a.rows));
    for (std::size_t i = 0; i < x_all.size(); ++i) x_all[i] = x_at(i, round);
    apps::reference_spmv(a, x_all.data(), want.data());
    std::vector<double> x(x_all.begin() + static_cast<std::ptrdiff_t>(first),
                          x_all.begin() + static_cast<std::ptrdiff_t>(first + rows));
    std::vector<double> y(rows, -7.0);
    product.multiply(x.data(), y.data());
    // Rows are summed in another order (local part, then remote part): compare relative
    // to the magnitudes summed.
    EXPECT_LE(apps::max_scaled_difference(block, x_all.data(), y.data(), want.data() + first),
              1e-13)
        << "rank " << rt.rank() << " round " << round;
    if (rows > 0) {
      EXPECT_NE(y[0], -7.0);
    }
  }
}

TEST(DistSpmv, Laplacian3dRowsNotDivisibleByRanks) {
  dist::runtime rt;
  auto a = apps::laplacian_3d(5, 3, 9);  // 135 rows: 2 and 4 do not divide it
  check_against_reference(rt, a, host(rt));
  // Each rank but the first and last talks to both neighbours, and only to them: the
  // 7-point stencil's planes are 15 rows, fewer than a rank's share (33 or more).
  auto const bounds = apps::split_over_ranks(a, rt.size());
  auto const me = static_cast<std::size_t>(rt.rank());
  apps::distributed_spmv product(rt.world(), a.rows,
                                 apps::extract_rows(a, bounds[me], bounds[me + 1]), host(rt));
  auto const info = product.info();
  std::vector<int> neighbours;
  if (rt.rank() > 0) neighbours.push_back(rt.rank() - 1);
  if (rt.rank() + 1 < rt.size()) neighbours.push_back(rt.rank() + 1);
  EXPECT_EQ(info.receives_from, neighbours);
  EXPECT_EQ(info.sends_to, neighbours);
  EXPECT_EQ(info.local_nonzeros + info.remote_nonzeros,
            a.row_ptr[static_cast<std::size_t>(bounds[me + 1])] -
                a.row_ptr[static_cast<std::size_t>(bounds[me])]);
}

TEST(DistSpmv, PowerLawMatrix) {
  dist::runtime rt;
  // 1001 rows of very unequal lengths: the split balances nonzeros, and rows reach
  // columns on every rank.
  check_against_reference(rt, apps::random_power_law(1001, 6, 99), host(rt));
}

TEST(DistSpmv, RankWithNoRemoteColumns) {
  dist::runtime rt;
  // Lower bidiagonal: a row reads its own column and the one before, so the first rank
  // needs nothing from the others, and the last sends nothing.
  std::vector<apps::triplet> t;
  apps::csr_index const n = 203;
  for (apps::csr_index i = 0; i < n; ++i) {
    t.push_back({i, i, 2.0 + i % 3});
    if (i > 0) t.push_back({i, i - 1, -1.0});
  }
  auto a = apps::csr_from_triplets(n, n, t);
  check_against_reference(rt, a, host(rt));
  auto const bounds = apps::split_over_ranks(a, rt.size());
  auto const me = static_cast<std::size_t>(rt.rank());
  apps::distributed_spmv product(rt.world(), a.rows,
                                 apps::extract_rows(a, bounds[me], bounds[me + 1]), host(rt));
  auto const info = product.info();
  if (rt.rank() == 0) {
    EXPECT_EQ(info.ghosts, 0);
    EXPECT_EQ(info.remote_nonzeros, 0);
    EXPECT_TRUE(info.receives_from.empty());
  } else {
    EXPECT_EQ(info.ghosts, 1);
    EXPECT_EQ(info.receives_from, std::vector<int>{rt.rank() - 1});
  }
  if (rt.rank() + 1 == rt.size()) {
    EXPECT_TRUE(info.sends_to.empty());
  }
}

TEST(DistSpmv, RanksWithoutRows) {
  dist::runtime rt;
  // 3 rows, dense: at 4 ranks one rank owns nothing, and every other needs the rest.
  std::vector<apps::triplet> t;
  for (apps::csr_index i = 0; i < 3; ++i)
    for (apps::csr_index j = 0; j < 3; ++j) t.push_back({i, j, 1.0 + i - 0.5 * j});
  check_against_reference(rt, apps::csr_from_triplets(3, 3, t), host(rt));
  // And an empty matrix.
  check_against_reference(rt, apps::csr_from_triplets(0, 0, {}), host(rt));
}

TEST(DistSpmv, OnHostAndSimDevices) {
  strata::runtime_options o;
  o.sim_devices = "2:bw=20GB/s,lat=2us";
  dist::runtime rt(o);
  // Each rank's rows are split again over its host and its two sim devices (Phalanx's
  // places within a rank); the local part runs there, the remote part on the host.
  std::vector<strata::target> where{rt.machine().slice(strata::isa::host)};
  for (auto const& d : rt.machine().slice(strata::isa::sim).descendants(strata::place_type::device))
    where.emplace_back(d);
  ASSERT_EQ(where.size(), 3u);
  check_against_reference(rt, apps::laplacian_3d(9, 4, 5), where, 3);
}

TEST(DistSpmv, BadInputIsAnErrorOnEveryRank) {
  dist::runtime rt;
  auto a = apps::laplacian_2d(9, 7);
  auto const bounds = apps::split_over_ranks(a, rt.size());
  auto const me = static_cast<std::size_t>(rt.rank());
  auto block = apps::extract_rows(a, bounds[me], bounds[me + 1]);
  // The last rank claims a matrix one row and column larger (its block is consistent
  // with that claim): every rank refuses, naming the size.
  bool const odd = rt.rank() + 1 == rt.size() && rt.size() > 1;
  auto larger = block;
  if (odd) larger.rows.cols += 1;
  try {
    apps::distributed_spmv p(rt.world(), a.rows + (odd ? 1 : 0), larger, host(rt));
    if (rt.size() > 1) ADD_FAILURE() << "a different global size was accepted";
  } catch (strata::invalid_argument const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("team rank " + std::to_string(rt.size() - 1) +
                        " passed a global size of 64 rows, team rank 0 63"),
              std::string::npos)
        << what;
  }
  // A column outside the matrix on rank 0 only: its message says which.
  auto bad = block;
  if (rt.rank() == 0 && !bad.rows.col.empty()) bad.rows.col[0] = a.cols + 5;
  try {
    apps::distributed_spmv p(rt.world(), a.rows, bad, host(rt));
    ADD_FAILURE() << "a column outside the matrix was accepted";
  } catch (strata::invalid_argument const& e) {
    std::string const what = e.what();
    EXPECT_NE(what.find("team rank 0's row block is malformed"), std::string::npos) << what;
    if (rt.rank() == 0) {
      EXPECT_NE(what.find("column 68"), std::string::npos) << what;
    }
  }
  // Row ranges that overlap: every rank claims to start at row 0.
  if (rt.size() > 1) {
    auto const all = apps::extract_rows(a, 0, bounds[1]);
    EXPECT_THROW(apps::distributed_spmv(rt.world(), a.rows, all, host(rt)),
                 strata::invalid_argument);
  }
  // A rectangular matrix: x is split like the rows, so it must be square.
  auto wide = block;
  wide.rows.cols += 1;
  EXPECT_THROW(apps::distributed_spmv(rt.world(), a.rows, wide, host(rt)),
               strata::invalid_argument);
  // After all that, a good product still works on the same runtime.
  check_against_reference(rt, a, host(rt), 1);
}

}  // namespace
