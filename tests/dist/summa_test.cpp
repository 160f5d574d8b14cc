// SUMMA (apps/common/summa.hpp) under mpiexec at 1-4 ranks: every process grid that fits
// the team (square, 1 x P, P x 1, and grids smaller than the team, whose extra ranks hold
// nothing), sizes that nb does not divide, m != n != k, alpha and beta, panels of one and
// several blocks, lookahead 0-2, the single-source GEMM as the local product. Each rank
// checks its own blocks of C against a product of the whole matrices computed on every
// rank, and summa_error's gather-to-rank-0 check is tested against it. No ScaLAPACK.
#include "summa.hpp"

#include <gtest/gtest.h>
#include <strata/dist.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace dist = strata::dist;
using strata::index_t;
using strata::invalid_argument;

namespace {

// Every grid Pr x Pc with Pr Pc <= the team size.
std::vector<apps::process_grid> grids_up_to(int size) {
  std::vector<apps::process_grid> out;
  for (int r = 1; r <= size; ++r)
    for (int c = 1; r * c <= size; ++c) out.push_back({r, c});
  return out;
}

struct problem {
  index_t m, n, k, nb;
  double alpha, beta;
  apps::summa_options options;
};

std::string describe(problem const& p, apps::process_grid g) {
  return std::to_string(p.m) + "x" + std::to_string(p.n) + "x" + std::to_string(p.k) + " nb " +
         std::to_string(p.nb) + " grid " + std::to_string(g[0]) + "x" + std::to_string(g[1]) +
         " panel " + std::to_string(p.options.panel) + " lookahead " +
         std::to_string(p.options.lookahead) +
         (p.options.local == apps::summa_local::strata ? " strata gemm"
          : p.options.local == apps::summa_local::blas ? " blas"
                                                       : " automatic");
}

// Runs C = alpha A B + beta C0 on `g` and checks every element this rank holds against a
// long-double product of the whole matrices; returns the largest scaled error here.
double run_and_check(dist::runtime const& rt, problem const& p, apps::process_grid g) {
  auto const what = describe(p, g);
  apps::summa s(rt, rt.world(), p.m, p.n, p.k, p.nb, g, p.options);
  dist::array<double, 2> a(rt.world(), s.a_type()), b(rt.world(), s.b_type()),
      c(rt.world(), s.c_type());
  apps::summa_fill(a, 11);
  apps::summa_fill(b, 12);
  apps::summa_fill(c, 13);
  s.multiply(p.alpha, a, b, p.beta, c);
  double worst = 0;
  index_t seen = 0;
  c.for_each([&](strata::vec<2> const& i, double const& x) {
    long double want = p.beta * static_cast<long double>(apps::summa_value(13, i[0], i[1]));
    long double scale = std::abs(p.beta * apps::summa_value(13, i[0], i[1]));
    for (index_t q = 0; q < p.k; ++q) {
      long double const ab =
          static_cast<long double>(apps::summa_value(11, i[0], q)) * apps::summa_value(12, q, i[1]);
      want += p.alpha * ab;
      scale += std::abs(p.alpha * ab);
    }
    double const err = scale > 0 ? static_cast<double>(std::abs(x - want) / scale) : std::abs(x);
    worst = std::max(worst, err);
    ++seen;
  });
  EXPECT_LE(worst, apps::summa_tolerance(p.k)) << what << " rank " << rt.rank();
  // Every element is somewhere: the ranks' counts add up to m n.
  long total = 0, mine = static_cast<long>(seen);
  dist::all_reduce(rt.world(), std::span<long const>(&mine, 1), std::span(&total, 1),
                   dist::reduce_op::sum)
      .wait();
  EXPECT_EQ(total, static_cast<long>(p.m * p.n)) << what;
  // The app's check (gather to rank 0, BLAS reference) agrees.
  double const gathered = apps::summa_error(c, p.k, p.alpha, 11, 12, p.beta, 13);
  EXPECT_LE(gathered, apps::summa_tolerance(p.k)) << what;
  return worst;
}

}  // namespace

TEST(Summa, NearSquareGridsAndParsing) {
  EXPECT_EQ(apps::near_square_grid(1), (apps::process_grid{1, 1}));
  EXPECT_EQ(apps::near_square_grid(2), (apps::process_grid{1, 2}));
  EXPECT_EQ(apps::near_square_grid(3), (apps::process_grid{1, 3}));
  EXPECT_EQ(apps::near_square_grid(4), (apps::process_grid{2, 2}));
  EXPECT_EQ(apps::near_square_grid(6), (apps::process_grid{2, 3}));
  EXPECT_EQ(apps::near_square_grid(12), (apps::process_grid{3, 4}));
  EXPECT_EQ(apps::parse_grid("2x3"), (apps::process_grid{2, 3}));
  EXPECT_THROW(apps::parse_grid("2x0"), invalid_argument);
  EXPECT_THROW(apps::parse_grid("2*3"), invalid_argument);
  EXPECT_THROW(apps::parse_grid("x3"), invalid_argument);
  EXPECT_THROW(apps::near_square_grid(0), invalid_argument);
}

TEST(Summa, EveryGridOddSizes) {
  dist::runtime rt;
  // 37 x 29 x 41 in blocks of 4 (none divisible), panels of two blocks: 6 panels, so
  // lookahead 1 and 2 both cycle their buffers; beta != 0 on the first panel only.
  problem p{37, 29, 41, 4, 0.75, -1.5, {.panel = 8, .lookahead = 1}};
  for (auto g : grids_up_to(rt.size())) run_and_check(rt, p, g);
  p.options.lookahead = 2;
  p.options.panel = 4;  // one block per panel: 11 panels
  for (auto g : grids_up_to(rt.size())) run_and_check(rt, p, g);
}

TEST(Summa, LookaheadZeroAndDefaultPanel) {
  dist::runtime rt;
  auto const g = apps::near_square_grid(rt.size());
  // The default panel (max(nb, 256)) covers all of k = 70 at once.
  run_and_check(rt, {50, 60, 70, 8, 1.0, 0.0, {}}, g);
  run_and_check(rt, {50, 60, 70, 8, 2.0, 1.0, {.panel = 16, .lookahead = 0}}, g);
  // Panels rounded up to a multiple of nb (10 -> 12).
  apps::summa s(rt, rt.world(), 50, 60, 70, 6, g, {.panel = 10});
  // ... except on a 1 x 1 grid, which has nothing to overlap: one panel of all of k.
  EXPECT_EQ(s.panel_width(), rt.size() == 1 ? 72 : 12);
}

TEST(Summa, ThinAndFlatShapes) {
  dist::runtime rt;
  for (auto g : grids_up_to(rt.size())) {
    // k of one element; a single row; a single column; nb larger than the matrix.
    run_and_check(rt, {9, 7, 1, 2, 1.0, 1.0, {.panel = 2}}, g);
    run_and_check(rt, {1, 13, 11, 3, -1.0, 0.5, {.panel = 3}}, g);
    run_and_check(rt, {13, 1, 11, 3, 1.0, 0.0, {.panel = 6, .lookahead = 2}}, g);
    run_and_check(rt, {5, 6, 7, 64, 1.0, 2.0, {}}, g);
  }
}

TEST(Summa, StrataGemmAsLocalProduct) {
  dist::runtime rt;
  problem p{33, 21, 26, 5, 1.25, 0.5, {.panel = 10, .lookahead = 1}};
  p.options.local = apps::summa_local::strata;
  for (auto g : grids_up_to(rt.size())) run_and_check(rt, p, g);
}

// automatic (the default) resolves to one of the two at construction, by a timed trial
// whose outcome is the machine's; either gives a correct C. A forced choice stays.
TEST(Summa, AutomaticLocalProductResolvesToBlasOrStrata) {
  dist::runtime rt;
  auto const g = apps::near_square_grid(rt.size());
  problem p{70, 50, 90, 8, 1.0, 0.5, {.panel = 16}};
  apps::summa s(rt, rt.world(), p.m, p.n, p.k, p.nb, g, p.options);
  EXPECT_TRUE(s.local() == apps::summa_local::blas || s.local() == apps::summa_local::strata);
  if (!apps::summa_has_blas()) {
    EXPECT_EQ(s.local(), apps::summa_local::strata);
  }
  run_and_check(rt, p, g);
  for (auto forced : {apps::summa_local::blas, apps::summa_local::strata}) {
    apps::summa f(rt, rt.world(), p.m, p.n, p.k, p.nb, g, {.panel = 16, .local = forced});
    EXPECT_EQ(f.local(), forced);
  }
}

TEST(Summa, RepeatedMultiplies) {
  dist::runtime rt;
  auto const g = apps::near_square_grid(rt.size());
  apps::summa s(rt, rt.world(), 24, 20, 30, 4, g, {.panel = 8, .lookahead = 2});
  dist::array<double, 2> a(rt.world(), s.a_type()), b(rt.world(), s.b_type()),
      c(rt.world(), s.c_type());
  apps::summa_fill(a, 21);
  apps::summa_fill(b, 22);
  for (int round = 0; round < 3; ++round) {
    apps::summa_fill(c, 23);
    s.multiply(1.0, a, b, 1.0, c);
    EXPECT_LE(apps::summa_error(c, 30, 1.0, 21, 22, 1.0, 23), apps::summa_tolerance(30))
        << "round " << round;
  }
  if (rt.size() > 1) {
    EXPECT_GT(s.stats().broadcasts, 0);
  }
  // 8 k-blocks, 2 per panel: 4 panels, more when the grid columns' shares are odd (1 x 3:
  // {0,3} {1,4} {2,5} {6} {7}); one on a 1 x 1 grid.
  if (rt.size() == 1) {
    EXPECT_EQ(s.stats().panels, 1);
  } else {
    EXPECT_EQ(s.stats().panels, rt.size() == 3 ? 5 : 4);
  }
}

TEST(Summa, OnATeamThatIsNotTheWorld) {
  dist::runtime rt;
  // Every rank but world rank 1: team rank 1 is world rank 2, so the grid's row and
  // column teams must be made of the team's world ranks, not of team ranks.
  std::vector<int> members;
  for (int r = 0; r < rt.size(); ++r)
    if (r != 1 || rt.size() == 1) members.push_back(r);
  if (rt.rank() != 1 || rt.size() == 1) {
    auto const t = rt.make_team(members);
    for (apps::process_grid g : {apps::process_grid{1, t.size()}, {t.size(), 1}}) {
      apps::summa s(rt, t, 19, 23, 17, 3, g, {.panel = 6});
      dist::array<double, 2> a(t, s.a_type()), b(t, s.b_type()), c(t, s.c_type());
      apps::summa_fill(a, 31);
      apps::summa_fill(b, 32);
      apps::summa_fill(c, 33);
      s.multiply(-0.5, a, b, 2.0, c);
      EXPECT_LE(apps::summa_error(c, 17, -0.5, 31, 32, 2.0, 33), apps::summa_tolerance(17))
          << "grid " << g[0] << "x" << g[1];
      // An array of the world is not one of the team's.
      if (t.size() != rt.size()) {
        dist::array<double, 2> other(rt.world(), apps::block_cyclic_matrix(19, 23, 3, {1, 1}));
        EXPECT_THROW(s.multiply(1.0, a, b, 0.0, other), invalid_argument);
      }
    }
  }
  dist::barrier(rt.world()).wait();
}

TEST(Summa, BadInput) {
  dist::runtime rt;
  auto const& w = rt.world();
  int const p = rt.size();
  EXPECT_THROW(apps::summa(rt, w, 8, 8, 8, 0, {1, 1}), invalid_argument);
  EXPECT_THROW(apps::summa(rt, w, 0, 8, 8, 2, {1, 1}), invalid_argument);
  EXPECT_THROW(apps::summa(rt, w, 8, 8, 8, 2, {0, 1}), invalid_argument);
  EXPECT_THROW(apps::summa(rt, w, 8, 8, 8, 2, {p + 1, 1}), invalid_argument);
  EXPECT_THROW(apps::summa(rt, w, 8, 8, 8, 2, {2, p}), invalid_argument);
  EXPECT_THROW(apps::summa(rt, w, 8, 8, 8, 2, {1, 1}, {.lookahead = -1}), invalid_argument);
  // Arrays of other sizes, block sizes or grids than the summa's: refused before any
  // broadcast, on every rank.
  auto const g = apps::near_square_grid(p);
  apps::summa s(rt, w, 12, 10, 8, 2, g);
  dist::array<double, 2> a(w, s.a_type()), b(w, s.b_type()), c(w, s.c_type());
  dist::array<double, 2> wrong_size(w, apps::block_cyclic_matrix(12, 10, 2, g));
  dist::array<double, 2> wrong_nb(w, apps::block_cyclic_matrix(8, 10, 3, g));
  dist::array<double, 2> wrong_grid(w, apps::block_cyclic_matrix(12, 10, 2, {1, 1}));
  EXPECT_THROW(s.multiply(1.0, wrong_size, b, 0.0, c), invalid_argument);
  EXPECT_THROW(s.multiply(1.0, a, wrong_nb, 0.0, c), invalid_argument);
  if (p > 1) {
    EXPECT_THROW(s.multiply(1.0, a, b, 0.0, wrong_grid), invalid_argument);
  }
  // The runtime still works: a good multiply after the refusals.
  apps::summa_fill(a, 1);
  apps::summa_fill(b, 2);
  apps::summa_fill(c, 3);
  s.multiply(1.0, a, b, 0.0, c);
  EXPECT_LE(apps::summa_error(c, 8, 1.0, 1, 2, 0.0, 3), apps::summa_tolerance(8));
}
