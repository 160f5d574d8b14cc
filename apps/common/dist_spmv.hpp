// Distributed SpMV over MPI ranks (Phalanx §V-B: "we simply partition the matrix by rows",
// whose scaling was limited because "our current implementation copies the vector data
// from the master thread to other threads sequentially"). Here the rows of a square CSR
// matrix are split over the ranks of a strata::dist team, balanced by nonzeros, and x is
// split the same way; each product moves only the x entries a rank's rows read from other
// ranks (its halo, packed per neighbour, with dist::send/recv), while the rows' local part
// is multiplied meanwhile by apps/common's partitioned SpMV over the rank's own places.
// Application code on the public API (strata::dist); not part of the library.
#pragma once

#include "sparse.hpp"
#include "spmv.hpp"

#include <strata/dist.hpp>
#include <strata/strata.hpp>

#include <memory>
#include <vector>

namespace apps {

/// A rank's rows of a global matrix, with global column indices.
struct row_block {
  csr_index first_row = 0;  // global index of rows.row_ptr[0]'s row
  csr_matrix rows;          // rows.cols is the global column count
};

/// Splits rows [0, a.rows) into `parts` ranges of about equal nonzeros (split_rows, the
/// weight of a row being its nonzeros plus one): parts + 1 bounds.
std::vector<csr_index> split_over_ranks(csr_matrix const& a, int parts);

/// Rows [first, last) of `a`, their columns still global.
row_block extract_rows(csr_matrix const& a, csr_index first, csr_index last);

/// The largest |y_r - want_r| / max(1, sum_k |a_rk x_k|) over the block's rows (y and want
/// hold its rows, x the whole vector): the difference relative to the magnitudes summed,
/// which a sum in another order (the local part, then the remote part) keeps near the
/// rounding unit even in the long rows of a power-law matrix, where a difference relative
/// to |want_r| can grow with the row's length and cancellation.
double max_scaled_difference(row_block const& b, double const* x, double const* y,
                             double const* want);

/// How a rank's rows touch the other ranks, for reports and tests.
struct dist_spmv_info {
  csr_index first_row = 0, rows = 0, global_rows = 0;
  std::int64_t local_nonzeros = 0;   // entries whose column this rank owns
  std::int64_t remote_nonzeros = 0;  // entries whose column another rank owns
  csr_index ghosts = 0;              // distinct x entries received per product
  csr_index sent = 0;                // x entries sent per product (over all neighbours)
  std::vector<int> receives_from;    // team ranks, ascending
  std::vector<int> sends_to;         // team ranks, ascending
  spmv_encoding local_encoding = spmv_encoding::csr;   // of its first host part
  spmv_encoding remote_encoding = spmv_encoding::csr;  // csr also when there is no remote part
};

/// y = A x for a square matrix whose rows, and the matching entries of x and y, are split
/// over the ranks of a team in rank order (rank r owns a contiguous range; ranges tile
/// [0, global_rows) and may be empty).
///
/// Each rank's rows are split into a local part (columns it owns, renumbered from its
/// first row) and a remote part (the rows that have entries in other ranks' columns,
/// those columns renumbered compactly into a ghost vector grouped by owner). Setup works
/// out which of its x entries each rank must send to whom; a product then posts the
/// receives of the ghosts and the sends of its packed x entries, multiplies the local
/// part over the rank's places while they travel, and adds the remote part once the
/// ghosts have arrived (waiting on the receive events: the caller's thread parks).
class distributed_spmv {
 public:
  /// Collective over `team` (every member calls it). `block` holds this rank's rows
  /// with global column indices; `where` are this rank's places for the local and remote
  /// parts (host places, sim devices: see partitioned_spmv). Throws
  /// strata::invalid_argument on every rank when the ranks disagree on the global size,
  /// their row ranges do not tile it in rank order, or a rank's block is malformed (a
  /// column outside the matrix, row_ptr not matching the entries); the message names the
  /// rank.
  /// `format` is passed to both parts' partitioned_spmv (the local part of a banded
  /// matrix with few distinct values is read value-indexed with column offsets).
  distributed_spmv(strata::dist::team const& team, csr_index global_rows, row_block const& block,
                   std::vector<strata::target> const& where,
                   spmv_format format = spmv_format::automatic);
  ~distributed_spmv();
  distributed_spmv(distributed_spmv&&) noexcept;
  distributed_spmv& operator=(distributed_spmv&&) noexcept;

  /// y = A x on this rank's rows: x and y hold this rank's block.rows.rows entries (its
  /// part of the global vectors), in host memory. Collective: every member calls it the
  /// same number of times. Blocks until this rank's rows of y are done; its sends (of
  /// packed copies of x entries, so x may change at once) may still be in flight, and the
  /// next product or the destructor waits for them. A failed kernel, copy or message is
  /// rethrown (a failed send by the next product).
  void multiply(double const* x, double* y);

  dist_spmv_info info() const;
  /// The row bounds of every rank (team size + 1 entries).
  std::vector<csr_index> const& row_bounds() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace apps
