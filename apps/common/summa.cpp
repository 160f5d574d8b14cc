// SUMMA over strata::dist (apps/common/summa.hpp; Phalanx §V-B).
#include "summa.hpp"

#include "gemm.hpp"
#include "places.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <utility>

#ifdef STRATA_APPS_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace apps {

namespace dist = strata::dist;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

[[noreturn]] void fail(std::string const& what) {
  throw strata::invalid_argument("summa: " + what);
}

// Row-major C (m x n, ldc) = alpha A B + beta C, A m x k (lda), B k x n (ldb): BLAS when
// there is one.
void local_dgemm(index_t m, index_t n, index_t k, double alpha, double const* a, index_t lda,
                 double const* b, index_t ldb, double beta, double* c, index_t ldc) {
#ifdef STRATA_APPS_HAVE_OPENBLAS
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda),
              b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
#else
  for (index_t i = 0; i < m; ++i) {
    double* ci = c + i * ldc;
    for (index_t j = 0; j < n; ++j) ci[j] = beta == 0 ? 0.0 : beta * ci[j];
    for (index_t p = 0; p < k; ++p) {
      double const aip = alpha * a[i * lda + p];
      double const* bp = b + p * ldb;
      for (index_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
    }
  }
#endif
}

// summa_local::automatic (summa_options): the faster local GEMM on this rank's place for
// a product of the panels' shape, each extent capped at 1024 (a 1024^3 product takes 15-45
// ms; the n = 4096 panels of one rank would take seconds). Alternating rounds, the best of
// each, absorb a preempted round.
summa_local faster_local(strata::target const& where, index_t m, index_t n, index_t k) {
  if (!summa_has_blas()) return summa_local::strata;
  m = std::clamp<index_t>(m, 1, 1024);
  n = std::clamp<index_t>(n, 1, 1024);
  k = std::clamp<index_t>(k, 1, 1024);
  std::vector<double> a(static_cast<std::size_t>(m * k), 0.5),
      b(static_cast<std::size_t>(k * n), 0.25), c(static_cast<std::size_t>(m * n));
  auto seconds = [&](summa_local which) {
    auto const t0 = clock_type::now();
    if (which == summa_local::blas)
      local_dgemm(m, n, k, 1.0, a.data(), k, b.data(), n, 0.0, c.data(), n);
    else
      gemm<double>(where, 1.0, row_major<double>(m, k, k).on(std::as_const(a).data()),
                   row_major<double>(k, n, n).on(std::as_const(b).data()), 0.0,
                   strata::array_type<double>{m, n}.on(c.data()));
    return seconds_since(t0);
  };
  double blas = std::numeric_limits<double>::infinity(), mine = blas;
  for (int round = 0; round < 3; ++round) {
    blas = std::min(blas, seconds(summa_local::blas));
    mine = std::min(mine, seconds(summa_local::strata));
  }
  return mine < 0.98 * blas ? summa_local::strata : summa_local::blas;
}

std::string grid_text(process_grid g) {
  return std::to_string(g[0]) + " x " + std::to_string(g[1]);
}

bool same_type(dist::array_type<2> const& x, dist::array_type<2> const& y) {
  for (std::size_t d = 0; d < 2; ++d)
    if (x.extent[d] != y.extent[d] || x.dist[d].how != y.dist[d].how ||
        x.dist[d].block_size != y.dist[d].block_size || x.grid[d] != y.grid[d] ||
        x.order[d] != y.order[d])
      return false;
  return true;
}

}  // namespace

std::vector<std::vector<index_t>> summa_panels(index_t k, index_t nb, index_t width,
                                               int grid_cols) {
  // Grid column c holds k-blocks c, c + P_c, c + 2 P_c, ... (block-cyclic), consecutive in
  // its local columns; a panel takes up to width / nb of them. Panels go round the grid
  // columns (group g of every column, then group g + 1), so each column's broadcasts are
  // spread over the multiply, as in global k-order.
  index_t const blocks = (k + nb - 1) / nb, per = std::max<index_t>(1, width / nb), pc = grid_cols;
  std::vector<std::vector<index_t>> out;
  for (index_t g = 0; g * per * pc < blocks; ++g)
    for (index_t c = 0; c < pc; ++c) {
      std::vector<index_t> panel;
      for (index_t t = 0; t < per; ++t) {
        index_t const j = c + pc * (g * per + t);
        if (j >= blocks) break;
        panel.push_back(j);
      }
      if (!panel.empty()) out.push_back(std::move(panel));
    }
  return out;
}

process_grid near_square_grid(int processes) {
  if (processes < 1)
    fail(std::to_string(processes) + " processes; expected at least 1 for a process grid");
  int rows = 1;
  for (int r = 1; r * r <= processes; ++r)
    if (processes % r == 0) rows = r;
  return {rows, processes / rows};
}

process_grid parse_grid(std::string const& text) {
  auto const x = text.find('x');
  auto number = [&](std::string const& s) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos)
      fail("grid '" + text + "' is not PrxPc (e.g. 2x3)");
    int v = std::stoi(s);
    if (v < 1) fail("grid '" + text + "' has a zero; expected at least 1 x 1");
    return v;
  };
  if (x == std::string::npos) fail("grid '" + text + "' is not PrxPc (e.g. 2x3)");
  return {number(text.substr(0, x)), number(text.substr(x + 1))};
}

dist::array_type<2> block_cyclic_matrix(index_t rows, index_t cols, index_t nb, process_grid grid) {
  dist::array_type<2> t;
  t.extent = {rows, cols};
  t.dist = {dist::distribution::block_cyclic(nb), dist::distribution::block_cyclic(nb)};
  t.grid = grid;
  return t;
}

// One panel's buffers: A's rows of the panel's k-indices (mloc x w, row-major) and B's
// columns of them (w x nloc, row-major), as the broadcasts deliver them.
struct panel_slot {
  std::vector<double> a, b;
  std::vector<strata::event> pending;
};

// A panel: k-blocks (of nb) whose A columns all live on one grid column and are
// consecutive in its local storage, so that its A part is one packed rows x w matrix and
// one broadcast. The k-order of the sum is permuted (any order gives the product).
struct panel_desc {
  std::vector<index_t> blocks;  // global k-block numbers
  index_t width = 0;            // k-indices
};

struct summa::state {
  dist::team team, row_team, col_team;
  dist::array_type<2> a_t, b_t, c_t;
  index_t m = 0, n = 0, k = 0, nb = 0, width = 0;  // width: most k-indices per panel
  process_grid grid{};
  int lookahead = 1;
  summa_local local = summa_local::blas;
  std::optional<strata::target> where;  // summa_local::strata
  bool on_grid = false;
  int my_r = 0, my_c = 0;
  index_t mloc = 0, nloc = 0, kloc_a = 0;  // C's local rows and columns; A's local columns
  std::vector<panel_desc> panels;
  std::vector<panel_slot> slots;
  summa_stats stats;

  index_t blocks() const { return (k + nb - 1) / nb; }
  index_t block_width(index_t j) const { return std::min(nb, k - j * nb); }
  // One grid column: A's panel is its local columns in place (all of k, in order).
  bool a_direct() const { return grid[1] == 1; }
  // A 1 x 1 grid: B's panel rows are consecutive in its local storage too.
  bool b_direct() const { return grid[0] == 1 && grid[1] == 1; }

  void make_panels() {
    for (auto& blocks_of : summa_panels(k, nb, width, grid[1])) {
      panel_desc d;
      for (auto j : blocks_of) d.width += block_width(j);
      d.blocks = std::move(blocks_of);
      panels.push_back(std::move(d));
    }
  }

  // Starts the broadcasts of panel p into `s` (this rank's part packed first).
  void post(index_t p, panel_slot& s, double const* a_local, double const* b_local) {
    s.pending.clear();
    auto const& d = panels[static_cast<std::size_t>(p)];
    index_t const g0 = d.blocks.front() * nb, w = d.width;
    // A: the panel's columns are consecutive local columns of grid column owner(g0)
    // (a_t's global view), packed there row by row into a mloc x w matrix.
    if (!a_direct() && mloc > 0) {
      int const root = a_t.owner(1, g0);
      if (root == my_c) {
        auto t0 = clock_type::now();
        index_t const lc = a_t.local_index(1, g0);
        for (index_t i = 0; i < mloc; ++i)
          std::memcpy(s.a.data() + i * w, a_local + i * kloc_a + lc,
                      static_cast<std::size_t>(w) * sizeof(double));
        stats.pack_s += seconds_since(t0);
      }
      s.pending.push_back(dist::broadcast(
          row_team, std::span<double>(s.a.data(), static_cast<std::size_t>(mloc * w)), root));
      ++stats.broadcasts;
    }
    // B: block j's rows are contiguous on grid row owner(j nb); runs of blocks with one
    // root and consecutive local rows (all of them on a square grid) go as one broadcast.
    if (b_direct() || nloc == 0) return;
    index_t off = 0;
    for (std::size_t q = 0; q < d.blocks.size();) {
      index_t const j0 = d.blocks[q] * nb;
      int const root = b_t.owner(0, j0);
      index_t const lr = b_t.local_index(0, j0);
      index_t rows = 0;
      std::size_t e = q;
      for (; e < d.blocks.size(); ++e) {
        index_t const j = d.blocks[e] * nb;
        if (b_t.owner(0, j) != root || b_t.local_index(0, j) != lr + rows) break;
        rows += block_width(d.blocks[e]);
      }
      double* dst = s.b.data() + off * nloc;
      if (root == my_r) {
        auto t0 = clock_type::now();
        std::memcpy(dst, b_local + lr * nloc,
                    static_cast<std::size_t>(rows * nloc) * sizeof(double));
        stats.pack_s += seconds_since(t0);
      }
      if (grid[0] > 1) {  // one grid row (and several columns): only the local copy
        s.pending.push_back(dist::broadcast(
            col_team, std::span<double>(dst, static_cast<std::size_t>(rows * nloc)), root));
        ++stats.broadcasts;
      }
      off += rows;
      q = e;
    }
  }

  // C's blocks += alpha (A's panel) (B's panel), beta on the first panel.
  void compute(index_t p, panel_slot const& s, double alpha, double const* a_local,
               double const* b_local, double beta, double* c_local) {
    if (mloc == 0 || nloc == 0) return;
    auto const& d = panels[static_cast<std::size_t>(p)];
    index_t const k0 = d.blocks.front() * nb, w = d.width;
    double const* ap = a_direct() ? a_local + k0 : s.a.data();
    index_t const lda = a_direct() ? kloc_a : w;
    double const* bp = b_direct() ? b_local + k0 * nloc : s.b.data();
    auto t0 = clock_type::now();
    if (local == summa_local::blas) {
      local_dgemm(mloc, nloc, w, alpha, ap, lda, bp, nloc, beta, c_local, nloc);
    } else {
      // The same operands as PARRAY types (§2.10: a direct A is a window of its rows).
      gemm<double>(*where, alpha, row_major<double>(mloc, w, lda).on(ap),
                   row_major<double>(w, nloc, nloc).on(bp), beta,
                   strata::array_type<double>{mloc, nloc}.on(c_local));
    }
    stats.gemm_s += seconds_since(t0);
  }
};

summa::summa(dist::runtime const& rt, dist::team const& team, index_t m, index_t n, index_t k,
             index_t nb, process_grid grid, summa_options options)
    : state_(std::make_unique<state>()) {
  auto& s = *state_;
  if (m < 1 || n < 1 || k < 1)
    fail("extents m = " + std::to_string(m) + ", n = " + std::to_string(n) +
         ", k = " + std::to_string(k) + "; expected each at least 1");
  if (nb < 1) fail("block size nb = " + std::to_string(nb) + "; expected at least 1");
  if (grid[0] < 1 || grid[1] < 1)
    fail("process grid " + grid_text(grid) + "; expected at least 1 x 1");
  if (!team.valid() || team.rank() < 0)
    fail(
        "this rank is not a member of the team; expected every member, and only members, "
        "to make the summa");
  if (static_cast<long>(grid[0]) * grid[1] > team.size())
    fail("process grid " + grid_text(grid) + " has " +
         std::to_string(static_cast<long>(grid[0]) * grid[1]) +
         " processes; expected at most the team's " + std::to_string(team.size()) + " ranks");
  if (options.lookahead < 0)
    fail("lookahead " + std::to_string(options.lookahead) + "; expected 0 or more");
  if (options.panel < 0) fail("panel width " + std::to_string(options.panel) + "; expected >= 0");
  // A block wider than every extent is the same distribution as one of the largest
  // extent: clamping nb first keeps (k + nb - 1) / nb and the panel width from
  // overflowing or growing with nb (nb = 10^7 asked ~1 GB of panel buffer for 6 x 6).
  nb = std::min(nb, std::max({m, n, k}));
  s.team = team;
  s.m = m;
  s.n = n;
  s.k = k;
  s.nb = nb;
  s.grid = grid;
  s.lookahead = options.lookahead;
  s.local = options.local;
  // At most all of k (in whole blocks) per panel, whatever --panel asks.
  index_t const want = std::min(options.panel == 0 ? std::max<index_t>(nb, 256) : options.panel, k);
  s.width = std::min(std::max<index_t>(1, (want + nb - 1) / nb) * nb, s.blocks() * nb);
  // A 1 x 1 grid has nothing to send, so nothing to overlap: one GEMM over all of k.
  if (grid[0] == 1 && grid[1] == 1) s.width = s.blocks() * nb;
  s.a_t = block_cyclic_matrix(m, k, nb, grid);
  s.b_t = block_cyclic_matrix(k, n, nb, grid);
  s.c_t = block_cyclic_matrix(m, n, nb, grid);
  s.make_panels();
  int const me = team.rank();
  s.on_grid = s.c_t.holds_any(me);
  if (!s.on_grid) return;  // ranks past the grid hold nothing and take no part
  s.my_r = me / grid[1];
  s.my_c = me % grid[1];
  // Row team: grid row my_r (team ranks my_r P_c + c); column team: grid column my_c.
  // Team ranks ascend with world ranks, so team rank c of the row team is grid column c.
  std::vector<int> row, col;
  for (int c = 0; c < grid[1]; ++c) row.push_back(team.world_rank(s.my_r * grid[1] + c));
  for (int r = 0; r < grid[0]; ++r) col.push_back(team.world_rank(r * grid[1] + s.my_c));
  s.row_team = rt.make_team(row);
  s.col_team = rt.make_team(col);
  auto const ce = s.c_t.local_extent(me);
  s.mloc = ce[0];
  s.nloc = ce[1];
  s.kloc_a = s.a_t.local_extent(me)[1];
  if (s.local != summa_local::blas) s.where = places_named(rt.machine(), options.places).at(0);
  if (s.local == summa_local::automatic) s.local = faster_local(*s.where, s.mloc, s.nloc, s.width);
  s.slots.resize(std::min(static_cast<std::size_t>(s.lookahead) + 1, s.panels.size()));
  for (auto& slot : s.slots) {
    if (!s.a_direct()) slot.a.resize(static_cast<std::size_t>(s.mloc * s.width));
    if (!s.b_direct()) slot.b.resize(static_cast<std::size_t>(s.width * s.nloc));
  }
}

summa::~summa() = default;
summa::summa(summa&&) noexcept = default;
summa& summa::operator=(summa&&) noexcept = default;

dist::array_type<2> const& summa::a_type() const {
  return state_->a_t;
}
dist::array_type<2> const& summa::b_type() const {
  return state_->b_t;
}
dist::array_type<2> const& summa::c_type() const {
  return state_->c_t;
}
process_grid summa::grid() const {
  return state_->grid;
}
index_t summa::panel_width() const {
  return state_->width;
}
summa_local summa::local() const {
  return state_->local;
}
summa_stats const& summa::stats() const {
  return state_->stats;
}

void summa::multiply(double alpha, dist::array<double, 2> const& a, dist::array<double, 2> const& b,
                     double beta, dist::array<double, 2>& c) {
  auto& s = *state_;
  struct operand {
    char const* name;
    dist::array<double, 2> const& array;
    dist::array_type<2> const& type;
  };
  for (auto const& [name, array, type] :
       {operand{"A", a, s.a_t}, operand{"B", b, s.b_t}, operand{"C", c, s.c_t}}) {
    if (array.members().ranks() != s.team.ranks())
      fail(std::string(name) + " belongs to another team than the summa's");
    if (!same_type(array.type(), type))
      fail(std::string(name) + " is " + std::to_string(array.type().extent[0]) + " x " +
           std::to_string(array.type().extent[1]) + " over a " +
           grid_text({array.type().grid[0], array.type().grid[1]}) +
           " grid; expected block_cyclic_matrix(" + std::to_string(type.extent[0]) + ", " +
           std::to_string(type.extent[1]) + ", " + std::to_string(s.nb) + ", " + grid_text(s.grid) +
           "), stored row-major");
  }
  s.stats = {};
  if (!s.on_grid) return;
  double const* al = a.local().data();
  double const* bl = b.local().data();
  double* cl = c.local().data();
  auto const np = static_cast<index_t>(s.panels.size());
  auto const nslots = static_cast<index_t>(s.slots.size());
  s.stats.panels = np;
  // Lookahead: panels 0..L are in flight before the first GEMM; after the GEMM of panel p
  // its buffers take panel p + L + 1, so panels p+1..p+L travel while it runs.
  try {
    for (index_t p = 0; p < std::min(np, nslots); ++p)
      s.post(p, s.slots[static_cast<std::size_t>(p)], al, bl);
    for (index_t p = 0; p < np; ++p) {
      auto& slot = s.slots[static_cast<std::size_t>(p % nslots)];
      auto t0 = clock_type::now();
      for (auto const& e : slot.pending) e.wait();
      slot.pending.clear();
      s.stats.wait_s += seconds_since(t0);
      s.compute(p, slot, alpha, al, bl, p == 0 ? beta : 1.0, cl);
      if (p + nslots < np) s.post(p + nslots, slot, al, bl);
    }
  } catch (...) {
    // A failed broadcast or GEMM: the other panels' broadcasts still write into the
    // buffers, which must outlive them; wait for them (whatever their outcome) first.
    for (auto& slot : s.slots) {
      for (auto const& e : slot.pending) {
        try {
          e.wait();
        } catch (...) {
        }
      }
      slot.pending.clear();
    }
    throw;
  }
}

double summa_value(std::uint64_t seed, index_t i, index_t j) {
  // splitmix64 of (seed, i, j): cheap, and different for every element.
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull +
                    static_cast<std::uint64_t>(i) * 0xD1B54A32D192ED03ull +
                    static_cast<std::uint64_t>(j) * 0xABC98388FB8FAC03ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
}

void summa_fill(dist::array<double, 2>& a, std::uint64_t seed) {
  a.for_each([seed](strata::vec<2> const& i, double& x) { x = summa_value(seed, i[0], i[1]); });
}

double summa_tolerance(index_t k) {
  return 4.0 * static_cast<double>(k) * std::numeric_limits<double>::epsilon();
}

double summa_error(dist::array<double, 2> const& c, index_t k, double alpha, std::uint64_t a_seed,
                   std::uint64_t b_seed, double beta, std::uint64_t c0_seed,
                   std::vector<index_t> const& rows) {
  auto const& team = c.members();
  // The gather is a copy into the same matrix on a grid of one process (team rank 0).
  auto one = c.type();
  one.grid = {1, 1};
  dist::array<double, 2> whole(team, one);
  dist::copy(whole, c).wait();
  double err = 0;
  if (team.rank() == 0) {
    index_t const m = one.extent[0], n = one.extent[1];
    std::vector<index_t> check = rows;
    if (check.empty())
      for (index_t i = 0; i < m; ++i) check.push_back(i);
    auto const r = static_cast<index_t>(check.size());
    std::vector<double> a(static_cast<std::size_t>(r * k)), abs_a(a.size()),
        b(static_cast<std::size_t>(k * n)), abs_b(b.size()), ref(static_cast<std::size_t>(r * n)),
        scale(ref.size());
    for (index_t q = 0; q < r; ++q)
      for (index_t p = 0; p < k; ++p) {
        auto const x = summa_value(a_seed, check[static_cast<std::size_t>(q)], p);
        a[static_cast<std::size_t>(q * k + p)] = x;
        abs_a[static_cast<std::size_t>(q * k + p)] = std::abs(x);
      }
    for (index_t p = 0; p < k; ++p)
      for (index_t j = 0; j < n; ++j) {
        auto const x = summa_value(b_seed, p, j);
        b[static_cast<std::size_t>(p * n + j)] = x;
        abs_b[static_cast<std::size_t>(p * n + j)] = std::abs(x);
      }
    for (index_t q = 0; q < r; ++q)
      for (index_t j = 0; j < n; ++j) {
        auto const c0 = summa_value(c0_seed, check[static_cast<std::size_t>(q)], j);
        ref[static_cast<std::size_t>(q * n + j)] = c0;
        scale[static_cast<std::size_t>(q * n + j)] = std::abs(beta) * std::abs(c0);
      }
    // The reference: one BLAS product of the whole (row-sampled) matrices on one rank.
    local_dgemm(r, n, k, alpha, a.data(), k, b.data(), n, beta, ref.data(), n);
    local_dgemm(r, n, k, std::abs(alpha), abs_a.data(), k, abs_b.data(), n, 1.0, scale.data(), n);
    auto const got = whole.local();
    for (index_t q = 0; q < r; ++q)
      for (index_t j = 0; j < n; ++j) {
        auto const x = static_cast<std::size_t>(q * n + j);
        double const diff = std::abs(
            got[static_cast<std::size_t>(check[static_cast<std::size_t>(q)] * n + j)] - ref[x]);
        if (diff == 0) continue;
        err =
            std::max(err, scale[x] > 0 ? diff / scale[x] : std::numeric_limits<double>::infinity());
        if (std::isnan(diff)) err = std::numeric_limits<double>::quiet_NaN();
      }
  }
  dist::broadcast(team, std::span<double>(&err, 1), 0).wait();
  return err;
}

void single_threaded_blas() {
#ifdef STRATA_APPS_HAVE_OPENBLAS
  openblas_set_num_threads(1);
#endif
}

bool summa_has_blas() {
#ifdef STRATA_APPS_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

}  // namespace apps
