// Distributed 2-D FFT over MPI ranks (issue 20 item 2). Phalanx §V-B: "the classical
// row-column multi-dimensional FFT algorithm", transposing "the array globally after each
// local FFT phase to make the data for the next FFT phase local and contiguous", with
// all-to-all patterns "implemented by non-blocking data transfer functions" and local
// FFTs by FFTW. PARRAY §7.2 and Listing 46: the transpose is an all-to-all of
// non-contiguous per-pair segments plus a local adjustment, so "the main memory
// transposition is no longer needed".
//
// A complex-double N0 x N1 array is distributed by rows (block over the team's ranks:
// rank r holds rows [r*b, (r+1)*b), b = ceil(N0/P), stored row-major). The forward
// transform runs the rank's row FFTs with FFTW (one fftw_plan_many_dft over its rows),
// then the global transpose is `dist::copy` from that type into one distributed by
// columns and stored transposed (rank r holds columns [r*c, (r+1)*c), c = ceil(N1/P),
// each column contiguous), and the column FFTs run on those contiguous columns. The
// copy is one tiled all-to-all-v whose unpack writes the transposed layout directly, so
// there is no local transpose pass before or after the exchange. The result either stays
// there (`fft_layout::transposed`, FFTW-MPI's FFTW_MPI_TRANSPOSED_OUT, the fast mode) or
// is copied back to the row type (`fft_layout::natural`). The inverse runs the same steps
// backwards and divides by N0*N1, so inverse(forward(x)) = x.
//
// Application code on the public API (strata::dist) and FFTW; not part of the library.
#pragma once

#include <strata/dist.hpp>
#include <strata/strata.hpp>

#include <complex>
#include <memory>
#include <span>
#include <vector>

namespace apps {

using complex = std::complex<double>;

/// Where the forward transform leaves its result (and where the inverse takes it from).
enum class fft_layout {
  natural,     // rows(): the N0 x N1 result distributed like the input
  transposed,  // columns(): the N1 x N0 transpose, by rows (FFTW_MPI_TRANSPOSED_OUT)
};

/// FFTW's planner flag for the local plans: FFTW_ESTIMATE or FFTW_MEASURE (which times
/// candidate plans on the arrays when the object is made, overwriting them).
enum class fft_planning { estimate, measure };

struct fft2d_options {
  fft_layout output = fft_layout::natural;
  fft_planning planning = fft_planning::estimate;
};

/// The N0 x N1 array by rows: rows in blocks of ceil(N0/P) over `ranks`, stored row-major.
strata::dist::array_type<2> fft_rows_type(strata::index_t n0, strata::index_t n1, int ranks);
/// The same elements by columns: columns in blocks of ceil(N1/P), each rank's stored
/// column after column (storage order {1, 0}), i.e. its rows of the N1 x N0 transpose.
strata::dist::array_type<2> fft_columns_type(strata::index_t n0, strata::index_t n1, int ranks);

/// Seconds of the last forward() or inverse() on this rank, by phase.
struct fft_phases {
  double rows = 0;       // the local row FFTs
  double transpose = 0;  // dist::copy, both directions together
  double columns = 0;    // the local column FFTs
  double scale = 0;      // the inverse's division by N0*N1
  double total() const { return rows + transpose + columns + scale; }
};

/// A distributed 2-D FFT of a fixed size over a team, owning its two arrays (the row and
/// the column type) and the FFTW plans made once on them and reused by every transform.
class distributed_fft2d {
 public:
  /// Collective over `team` (every member calls it with the same sizes and options; it
  /// makes its own team of the same ranks, so its copies never meet the caller's
  /// collectives). Throws strata::invalid_argument on every rank for n0 or n1 below 1 or
  /// when the ranks disagree on the sizes or the options (the message names the rank).
  /// With fft_planning::measure FFTW overwrites both arrays while planning: fill rows()
  /// after constructing.
  distributed_fft2d(strata::dist::team const& team, strata::index_t n0, strata::index_t n1,
                    fft2d_options options = {});
  ~distributed_fft2d();
  distributed_fft2d(distributed_fft2d&&) noexcept;
  distributed_fft2d& operator=(distributed_fft2d&&) noexcept;

  strata::index_t n0() const;
  strata::index_t n1() const;
  fft2d_options const& options() const;

  /// The array by rows (fft_rows_type): the forward transform's input, the inverse's
  /// output, and the forward's output in the natural layout.
  strata::dist::array<complex, 2>& rows();
  /// The array by columns (fft_columns_type): the forward's output in the transposed
  /// layout and the inverse's input there; scratch in the natural layout.
  strata::dist::array<complex, 2>& columns();
  /// Where forward() leaves its result and inverse() takes its input.
  strata::dist::array<complex, 2>& output();

  /// X[k0][k1] = sum x[j0][j1] e^{-2 pi i (j0 k0 / N0 + j1 k1 / N1)}: rows() into
  /// output(). Collective; blocks until this rank's part is done. Overwrites rows() in
  /// the transposed layout.
  void forward();
  /// x = (1 / (N0 N1)) sum X[k0][k1] e^{+2 pi i (...)}: output() into rows(), so that
  /// inverse(forward(x)) = x. Collective; overwrites columns().
  void inverse();

  fft_phases const& last_phases() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

/// Element (i, j) of the test input: deterministic, varied in both indices and not
/// symmetric, so that a misplaced element or a missing transpose shows in the result.
complex fft_test_value(strata::index_t i, strata::index_t j);
/// Sets every element this rank holds of `a` (any distributed type) to fft_test_value.
void fill_fft_test_input(strata::dist::array<complex, 2>& a);

/// The whole array on team rank 0 in natural order (element (i, j) at i*N1 + j, whatever
/// `a`'s distribution and storage order: the gather is a dist::copy into a one-process
/// type, so columns() gathers to the N0 x N1 result too), and an empty vector on the
/// other ranks. Collective.
std::vector<complex> gather_natural(strata::dist::array<complex, 2> const& a);

/// The single-rank FFTW 2-D transform of a row-major n0 x n1 array, in place: `sign` is
/// -1 (forward) or +1 (backward, not normalised), as FFTW_FORWARD / FFTW_BACKWARD.
void reference_fft2d(strata::index_t n0, strata::index_t n1, std::span<complex> data, int sign);

/// max_k |a_k - b_k| / max(max_k |b_k|, tiny): the error relative to the result's
/// magnitude (a NaN anywhere makes it NaN). Sizes must agree (invalid_argument).
double max_relative_difference(std::span<complex const> a, std::span<complex const> b);

/// The tolerance the app and tests accept for an N0 x N1 transform against the reference
/// or for a round trip: 1e-10 * log2(N0 N1) relative (FFTW's error grows like log N;
/// measured errors are near 1e-15).
double fft_tolerance(strata::index_t n0, strata::index_t n1);

/// 5 N log2 N floating-point operations of a complex FFT of N = N0 N1 points (FFTW's
/// convention for its benchmark figures).
double fft_flops(strata::index_t n0, strata::index_t n1);

}  // namespace apps
