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

// Row-major C (m x n, ldc) = alpha op(A) B + beta C, op(A) = A (m x k, lda) or, when
// `a_transposed`, the transpose of a stored k x m A (lda >= m). BLAS when there is one.
void local_dgemm(bool a_transposed, index_t m, index_t n, index_t k, double alpha, double const* a,
                 index_t lda, double const* b, index_t ldb, double beta, double* c, index_t ldc) {
#ifdef STRATA_APPS_HAVE_OPENBLAS
  cblas_dgemm(CblasRowMajor, a_transposed ? CblasTrans : CblasNoTrans, CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
              static_cast<blasint>(ldc));
#else
  for (index_t i = 0; i < m; ++i) {
    double* ci = c + i * ldc;
    for (index_t j = 0; j < n; ++j) ci[j] = beta == 0 ? 0.0 : beta * ci[j];
    for (index_t p = 0; p < k; ++p) {
      double const aip = alpha * (a_transposed ? a[p * lda + i] : a[i * lda + p]);
      double const* bp = b + p * ldb;
      for (index_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
    }
  }
#endif
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

// One panel's buffers: A's rows of the panel's k-indices, column-major (mloc x w, each
// nb block contiguous, as it is broadcast), and B's columns of them, row-major (w x nloc).
struct panel_slot {
  std::vector<double> a, b;
  std::vector<strata::event> pending;
};

struct summa::state {
  dist::team team, row_team, col_team;
  dist::array_type<2> a_t, b_t, c_t;
  index_t m = 0, n = 0, k = 0, nb = 0, width = 0;  // width: k-indices per panel
  process_grid grid{};
  int lookahead = 1;
  summa_local local = summa_local::blas;
  std::optional<strata::target> where;  // summa_local::strata
  bool on_grid = false;
  int my_r = 0, my_c = 0;
  index_t mloc = 0, nloc = 0, kloc_a = 0;  // C's local rows and columns; A's local columns
  std::vector<panel_slot> slots;
  summa_stats stats;

  index_t blocks() const { return (k + nb - 1) / nb; }
  index_t panels() const { return (blocks() + width / nb - 1) / (width / nb); }

  // Starts the broadcasts of panel p into `s` (this rank's blocks packed first).
  void post(index_t p, panel_slot& s, double const* a_local, double const* b_local) {
    s.pending.clear();
    index_t const per = width / nb, first = p * per, last = std::min(blocks(), first + per);
    index_t off = 0;  // k-offset of block j within the panel
    for (index_t j = first; j < last; ++j) {
      index_t const g0 = j * nb, bw = std::min(nb, k - g0);
      // A's columns of block j live on grid column j % P_c (block-cyclic), at local column
      // (j / P_c) nb there (a_t.owner / local_index, the global view).
      if (grid[1] > 1 && mloc > 0) {
        int const root = a_t.owner(1, g0);
        double* dst = s.a.data() + off * mloc;
        if (root == my_c) {
          auto t0 = clock_type::now();
          index_t const lc = a_t.local_index(1, g0);
          // Transposed in 32 x 32 tiles: row-major local rows to a column-major block.
          for (index_t i0 = 0; i0 < mloc; i0 += 32)
            for (index_t q0 = 0; q0 < bw; q0 += 32)
              for (index_t i = i0; i < std::min(mloc, i0 + 32); ++i)
                for (index_t q = q0; q < std::min(bw, q0 + 32); ++q)
                  dst[q * mloc + i] = a_local[i * kloc_a + lc + q];
          stats.pack_s += seconds_since(t0);
        }
        s.pending.push_back(dist::broadcast(
            row_team, std::span<double>(dst, static_cast<std::size_t>(bw * mloc)), root));
        ++stats.broadcasts;
      }
      // B's rows of block j live on grid row j % P_r, contiguous in its row-major storage.
      if (grid[0] > 1 && nloc > 0) {
        int const root = b_t.owner(0, g0);
        double* dst = s.b.data() + off * nloc;
        if (root == my_r) {
          auto t0 = clock_type::now();
          std::memcpy(dst, b_local + b_t.local_index(0, g0) * nloc,
                      static_cast<std::size_t>(bw * nloc) * sizeof(double));
          stats.pack_s += seconds_since(t0);
        }
        s.pending.push_back(dist::broadcast(
            col_team, std::span<double>(dst, static_cast<std::size_t>(bw * nloc)), root));
        ++stats.broadcasts;
      }
      off += bw;
    }
  }

  // C's blocks += alpha (A's panel) (B's panel), beta on the first panel.
  void compute(index_t p, panel_slot const& s, double alpha, double const* a_local,
               double const* b_local, double beta, double* c_local) {
    if (mloc == 0 || nloc == 0) return;
    index_t const k0 = p * width, w = std::min(k, k0 + width) - k0;
    // One grid column: A's local columns are all of k, in order; one grid row: B's rows.
    bool const a_direct = grid[1] == 1, b_direct = grid[0] == 1;
    double const* ap = a_direct ? a_local + k0 : s.a.data();
    index_t const lda = a_direct ? kloc_a : mloc;
    double const* bp = b_direct ? b_local + k0 * nloc : s.b.data();
    auto t0 = clock_type::now();
    if (local == summa_local::blas) {
      local_dgemm(!a_direct, mloc, nloc, w, alpha, ap, lda, bp, nloc, beta, c_local, nloc);
    } else {
      // The same operands as PARRAY types: the packed panel is the transpose of a stored
      // w x mloc array (§2.9), a direct one a window of A's local rows (§2.10).
      strata::array_type<double> stored{w, mloc};
      auto const a_type = a_direct ? row_major<double>(mloc, w, lda)
                                   : strata::array_type<double>{stored[1], stored[0]};
      gemm<double>(*where, alpha, a_type.on(ap), row_major<double>(w, nloc, nloc).on(bp), beta,
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
  s.team = team;
  s.m = m;
  s.n = n;
  s.k = k;
  s.nb = nb;
  s.grid = grid;
  s.lookahead = options.lookahead;
  s.local = options.local;
  index_t const want = options.panel == 0 ? std::max<index_t>(nb, 256) : options.panel;
  s.width = std::max<index_t>(1, (want + nb - 1) / nb) * nb;
  // A 1 x 1 grid has nothing to send, so nothing to overlap: one GEMM over all of k.
  if (grid[0] == 1 && grid[1] == 1) s.width = s.blocks() * nb;
  s.a_t = block_cyclic_matrix(m, k, nb, grid);
  s.b_t = block_cyclic_matrix(k, n, nb, grid);
  s.c_t = block_cyclic_matrix(m, n, nb, grid);
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
  if (s.local == summa_local::strata) s.where = places_named(rt.machine(), options.places).at(0);
  s.slots.resize(static_cast<std::size_t>(std::min<index_t>(s.lookahead + 1, s.panels())));
  for (auto& slot : s.slots) {
    if (grid[1] > 1) slot.a.resize(static_cast<std::size_t>(s.mloc * s.width));
    if (grid[0] > 1) slot.b.resize(static_cast<std::size_t>(s.width * s.nloc));
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
  index_t const np = s.panels();
  auto const nslots = static_cast<index_t>(s.slots.size());
  s.stats.panels = np;
  // Lookahead: panels 0..L are in flight before the first GEMM; after the GEMM of panel p
  // its buffers take panel p + L + 1, so panels p+1..p+L travel while it runs.
  for (index_t p = 0; p < std::min(np, nslots); ++p)
    s.post(p, s.slots[static_cast<std::size_t>(p)], al, bl);
  for (index_t p = 0; p < np; ++p) {
    auto& slot = s.slots[static_cast<std::size_t>(p % nslots)];
    auto t0 = clock_type::now();
    for (auto const& e : slot.pending) e.wait();
    s.stats.wait_s += seconds_since(t0);
    s.compute(p, slot, alpha, al, bl, p == 0 ? beta : 1.0, cl);
    if (p + nslots < np) s.post(p + nslots, slot, al, bl);
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
    local_dgemm(false, r, n, k, alpha, a.data(), k, b.data(), n, beta, ref.data(), n);
    local_dgemm(false, r, n, k, std::abs(alpha), abs_a.data(), k, abs_b.data(), n, 1.0,
                scale.data(), n);
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
