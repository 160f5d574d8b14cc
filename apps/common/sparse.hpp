// Sparse matrices for the SpMV application (Phalanx §V-A: "We store sparse matrices using
// the compressed sparse row (CSR) storage format"): the CSR type, a Matrix Market reader,
// generated matrices and the reference product every result is checked against.
// Application code on the public API only; not part of the library.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace apps {

/// Indices of the CSR arrays. 32 bits, as Eigen's default StorageIndex: the matrix bytes
/// are what SpMV streams, and a larger index would be more bytes per nonzero.
using csr_index = std::int32_t;

/// A sparse matrix in compressed sparse row form. Each row's column indices are sorted
/// and unique; row r's entries are [row_ptr[r], row_ptr[r + 1]).
struct csr_matrix {
  csr_index rows = 0;
  csr_index cols = 0;
  std::vector<csr_index> row_ptr{0};
  std::vector<csr_index> col;
  std::vector<double> val;

  std::int64_t nnz() const { return static_cast<std::int64_t>(col.size()); }
  /// Bytes of the arrays SpMV reads (row_ptr, col, val).
  double bytes() const;
};

/// One entry of a matrix in coordinate form, 0-based.
struct triplet {
  csr_index row;
  csr_index col;
  double value;
};

/// Builds CSR from entries in any order; duplicates are summed (as Matrix Market readers
/// and Eigen's setFromTriplets do). Throws strata::invalid_argument for an entry outside
/// rows x cols or more nonzeros than 32-bit indices hold.
csr_matrix csr_from_triplets(csr_index rows, csr_index cols, std::vector<triplet> entries);

/// What a Matrix Market header declared.
struct matrix_market_header {
  std::string field;     // real, integer or pattern
  std::string symmetry;  // general, symmetric or skew-symmetric
};

/// Reads a Matrix Market coordinate file (NIST's format: "%%MatrixMarket matrix coordinate
/// <field> <symmetry>", '%' comment lines, a size line "M N NNZ", then NNZ lines "i j [v]"
/// with 1-based indices). Fields real, double, integer and pattern (values 1); symmetries
/// general, symmetric and skew-symmetric (the stored lower triangle is mirrored, negated
/// for skew-symmetric). A malformed file throws strata::parse_error naming `name` and the
/// line number, what was found and what was expected. Duplicate entries are summed.
csr_matrix read_matrix_market(std::istream& in, std::string const& name = "<stream>",
                              matrix_market_header* header = nullptr);
/// Opens `path` (strata::parse_error naming it when it cannot be read) and reads it.
csr_matrix read_matrix_market_file(std::string const& path, matrix_market_header* header = nullptr);

/// The 5-point Laplacian of an nx x ny grid (4 on the diagonal, -1 to each neighbour).
csr_matrix laplacian_2d(csr_index nx, csr_index ny);
/// The 7-point Laplacian of an nx x ny x nz grid (6 on the diagonal, -1 to each neighbour).
csr_matrix laplacian_3d(csr_index nx, csr_index ny, csr_index nz);
/// A square matrix with `average` nonzeros per row on average, row lengths drawn from a
/// Pareto (power-law) distribution of tail index 1.5, so a few rows are very long, columns
/// uniform; values uniform in [-1, 1). Deterministic in `seed` (Philox4x32-10).
csr_matrix random_power_law(csr_index n, double average, std::uint64_t seed);

/// The largest N the generator `name` ("laplacian2d", "laplacian3d", "power-law") takes
/// for an app's --NAME N: the N^2 or N^3 rows and their nonzeros must fit the 32-bit CSR
/// indices (5 N^2 <= 2^31-1: 20724; 7 N^3: 674; N rows: 2^31-1).
long long generator_limit(std::string const& name);

/// y = A x, one row after another in index order: the reference.
void reference_spmv(csr_matrix const& a, double const* x, double* y);

/// The largest |a_i - b_i| / max(1, |b_i|).
double max_relative_difference(std::vector<double> const& a, std::vector<double> const& b);

}  // namespace apps
