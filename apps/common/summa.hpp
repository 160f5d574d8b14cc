// Distributed DGEMM by SUMMA over MPI ranks (Phalanx §V-B: "The matrices are partitioned
// and stored in the global address space with a 2-D block-cyclic distribution ... Local
// matrix computations are performed with vendor-optimized BLAS libraries"; van de Geijn and
// Watts' SUMMA, the seed's reference [6]). A, B and C are strata::dist::array<double, 2>
// with block_cyclic(nb) in both dimensions over a P_r x P_c grid of a team's ranks
// (ScaLAPACK's distribution); their types' global view (owner / local_index) says which
// rank holds each panel. For each panel of k, the process column owning A's columns
// broadcasts them along its row team and the process row owning B's rows along its column
// team (dist::broadcast, non-blocking), while the local GEMM of the previous panel runs:
// cblas_dgemm (OpenBLAS) or the single-source Strata GEMM of apps/common/gemm.hpp.
// Application code on the public API (strata::dist); not part of the library.
#pragma once

#include <strata/dist.hpp>
#include <strata/strata.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace apps {

using strata::index_t;

/// A P_r x P_c process grid.
using process_grid = std::array<int, 2>;

/// The near-square grid for p processes: P_r the largest divisor of p not above sqrt(p),
/// P_c = p / P_r (so 2 -> 1 x 2, 4 -> 2 x 2, 6 -> 2 x 3, a prime p -> 1 x p).
process_grid near_square_grid(int processes);

/// Parses "PrxPc" (e.g. "2x3"); invalid_argument for anything else or a zero.
process_grid parse_grid(std::string const& text);

/// The type of a rows x cols matrix in nb x nb blocks dealt block-cyclically over the
/// grid, each rank's blocks stored row-major (ScaLAPACK's distribution, row-major).
strata::dist::array_type<2> block_cyclic_matrix(index_t rows, index_t cols, index_t nb,
                                                process_grid grid);

/// How the local product of a panel is computed.
enum class summa_local : std::uint8_t {
  blas,       // cblas_dgemm (OpenBLAS; single-threaded per rank as the benchmark sets it)
  strata,     // apps::gemm, the single-source tiled kernel, on this rank's host place
  automatic,  // whichever of the two a timed trial at construction finds faster (below)
};

struct summa_options {
  /// k-indices per panel, rounded up to a multiple of nb; 0: max(nb, 256). Several nb
  /// blocks per panel keep the local GEMM's inner dimension large enough for BLAS to run
  /// near its peak even when nb is small.
  index_t panel = 0;
  /// Panels whose broadcasts are in flight while a panel's local GEMM runs (0: none, the
  /// broadcasts of a panel are posted and waited for before its GEMM).
  int lookahead = 1;
  /// `automatic`: each rank on the grid times cblas_dgemm against apps::gemm (on `places`)
  /// at construction, three products each, alternating, of its local panel product's
  /// shape capped at 1024 per extent, and keeps the faster by their best (BLAS on a tie
  /// within 2%; apps::gemm where there is no OpenBLAS). Which one is faster is the
  /// machine's: apps::gemm ran at 0.86-0.94 of Debian's OpenBLAS on an Intel Xeon VM with
  /// AVX-512, at 1.5x on an AMD EPYC (Zen 5) VM, which that OpenBLAS runs with its AVX2
  /// kernels (docs/apps.md, "SUMMA"). Ranks choose independently: their C blocks differ
  /// from another choice's by rounding only.
  summa_local local = summa_local::automatic;
  /// summa_local::strata and automatic: this rank's places for apps::gemm
  /// (apps/common/places.hpp; serial by default: one thread per rank, as BLAS is set).
  std::string places = "host@serial";
};

/// What the last multiply did on this rank.
struct summa_stats {
  index_t panels = 0;
  index_t broadcasts = 0;  // started by this rank (roots and receivers alike)
  double wait_s = 0;       // waiting for a panel's broadcasts to complete
  double gemm_s = 0;       // local GEMMs
  double pack_s = 0;       // copying this rank's blocks into the panel buffers
};

/// C = alpha A B + beta C for an m x k A, k x n B and m x n C distributed
/// block_cyclic(nb) over a P_r x P_c grid of the team's first P_r P_c ranks (grid row-major:
/// team rank r P_c + c holds process row r, column c; ranks past the grid hold nothing).
///
/// Panels: grid column c holds A's k-blocks (of nb) c, c + P_c, c + 2 P_c, ..., which are
/// consecutive columns of its local storage; a panel is up to `panel / nb` of them, and
/// the panels go round the grid columns. For a panel, its grid column packs A's local
/// rows of those columns into one rows x w matrix and broadcasts it along its row team;
/// the grid rows owning B's rows of the same k-blocks broadcast them (contiguous in
/// row-major storage; one broadcast per run of blocks with one root, i.e. one per panel on
/// a square grid) along their column teams. Every rank then holds A's rows of its C rows
/// and B's columns of its C columns for the panel and adds their product into its C blocks
/// with one GEMM (the sum over k runs in panel order, a permutation of k). With lookahead
/// L, the broadcasts of panels p+1..p+L are in flight during the GEMM of panel p (L+1
/// panel buffers). A grid of one column uses A's local storage as the panel in place;
/// a 1 x 1 grid has nothing to send and does all of k in one GEMM.
class summa {
 public:
  /// Collective over the team (every member calls it): makes the row and column teams
  /// (dist runtime::make_team) of the grid's ranks. invalid_argument, on every rank, for
  /// extents or nb below 1, a grid below 1 x 1 or with more processes than the team, a
  /// negative lookahead or panel. An nb above max(m, n, k) is taken as max(m, n, k) (the
  /// same distribution), and a panel is at most all of k.
  summa(strata::dist::runtime const& rt, strata::dist::team const& team, index_t m, index_t n,
        index_t k, index_t nb, process_grid grid, summa_options options = {});
  ~summa();
  summa(summa&&) noexcept;
  summa& operator=(summa&&) noexcept;

  /// The types A, B and C must have (block_cyclic_matrix of m x k, k x n, m x n).
  strata::dist::array_type<2> const& a_type() const;
  strata::dist::array_type<2> const& b_type() const;
  strata::dist::array_type<2> const& c_type() const;
  process_grid grid() const;
  index_t panel_width() const;

  /// C = alpha A B + beta C. Collective over the team: every member calls it the same
  /// number of times. Blocks until this rank's blocks of C are done. invalid_argument
  /// (before anything is sent) when an array's type or team is not the one above.
  void multiply(double alpha, strata::dist::array<double, 2> const& a,
                strata::dist::array<double, 2> const& b, double beta,
                strata::dist::array<double, 2>& c);

  summa_stats const& stats() const;
  /// The local GEMM this rank runs: blas or strata (automatic resolved at construction;
  /// a rank off the grid reports the option as given).
  summa_local local() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

/// The panels of a summa: for each, its k-blocks (global block numbers j, k-indices
/// [j nb, min(k, (j + 1) nb))), all held by one grid column of P_c and consecutive in its
/// local storage, at most width / nb of them (see summa above).
std::vector<std::vector<index_t>> summa_panels(index_t k, index_t nb, index_t width, int grid_cols);

/// A deterministic value in [-1, 1) for element (i, j) of a matrix named by `seed`: every
/// rank fills its blocks from it, and the check regenerates whole matrices from it.
double summa_value(std::uint64_t seed, index_t i, index_t j);

/// Sets every element of a this rank holds to summa_value(seed, i, j).
void summa_fill(strata::dist::array<double, 2>& a, std::uint64_t seed);

/// Verification against a single-rank product: gathers C to team rank 0 (dist::copy into
/// a one-process type), regenerates A, B and C0 there from their seeds, computes the
/// reference rows `rows` (every row when empty) by cblas_dgemm of the whole matrices (or a
/// plain triple loop without OpenBLAS), and returns the largest
///   |C_ij - ref_ij| / (|alpha| (|A||B|)_ij + |beta| |C0_ij|)
/// (a multiple of the unit roundoff for a correct product; 0 where both are 0), the same
/// on every rank (it is broadcast). Collective over C's team. C0 is C's value before the
/// multiply; seeds as passed to summa_fill.
double summa_error(strata::dist::array<double, 2> const& c, index_t k, double alpha,
                   std::uint64_t a_seed, std::uint64_t b_seed, double beta, std::uint64_t c0_seed,
                   std::vector<index_t> const& rows = {});

/// The error summa_error accepts, 4 k eps (eps = 2^-52): two sums of k products in
/// different orders differ by at most 2 gamma_k (about k eps) relative to the magnitudes
/// summed, so 4 k eps leaves room (far stricter than a relative 1e-12 k).
double summa_tolerance(index_t k);

/// Sets OpenBLAS to one thread (openblas_set_num_threads(1)): one rank per core runs
/// single-threaded BLAS, as ScaLAPACK's ranks do. No-op without OpenBLAS.
void single_threaded_blas();

/// Whether the local GEMM can use BLAS (OpenBLAS was found at configure time).
bool summa_has_blas();

}  // namespace apps
