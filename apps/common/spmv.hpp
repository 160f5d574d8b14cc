// SpMV over several places, the Phalanx way (§V-A): "we simply partition the matrix by
// rows and distribute them evenly ... we replicate the vector x on every place". Host
// places read the matrix where it is; a device gets its rows copied once into its own
// memory, and each product copies x in and its part of y out on the device's queue, so
// devices' copies and kernels overlap one another and the host parts.
#pragma once

#include "sparse.hpp"

#include <strata/strata.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace apps {

/// y[r] = row r of A times x for the rows of each chunk [split[c], split[c + 1]); the
/// chunks hold about equal nonzeros, so power-law rows do not unbalance the threads.
/// Indices are local to the part: row_ptr[r] indexes col and val.
struct csr_spmv_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::index_t chunks, csr_index const* split,
                            csr_index const* row_ptr, csr_index const* col, double const* val,
                            double const* x, double* y) const {
    for (auto c : self.elements(chunks))
      for (csr_index r = split[c]; r < split[c + 1]; ++r) {
        double s = 0;
        for (csr_index k = row_ptr[r]; k < row_ptr[r + 1]; ++k) s += val[k] * x[col[k]];
        y[r] = s;
      }
  }
};

/// How a host part stores its rows for the product. A product reads the matrix once per
/// call and little else, so its time is the matrix's bytes over the memory bandwidth (x's
/// gathers aside); fewer bytes per nonzero are the one way past a CSR loop's bound.
/// Matrices of meshes and graphs often hold few distinct values (a Laplacian two, a
/// pattern or 0/1 matrix one) and columns near the diagonal (banded, after a mesh
/// ordering): there each nonzero's 8-byte value can be a 1-byte index into a table of the
/// distinct values (CSR-VI, Kourtis, Goumas and Koziris, "Optimizing sparse matrix-vector
/// multiplication using index and value compression", CF 2008) and its 4-byte column a
/// 2-byte offset from the row's diagonal: 3 bytes per nonzero instead of 12.
///
/// Matrices whose columns are scattered (a random graph, power-law rows) gain nothing from
/// that: their time goes to x's gathers, each a cache miss once x outgrows the L2 (on the
/// 2-core VM, 4.7 ns a load into a 16 MiB x against 0.55 ns into 512 KiB). There the rows
/// are cut into panels and the columns into blocks whose slices of y and x each fit in a
/// quarter of the L2; each (panel, block) tile stores its nonzeros as (16-bit row in the
/// panel, 16-bit column in the block, value), in column order, and the product runs tile
/// by tile: a panel's y stays in the L2 while its tiles pass, and each tile reads its slice
/// of x in address order, which the prefetchers follow, instead of a cache miss per
/// nonzero (cache blocking: Nishtala, Vuduc, Demmel and Yelick, "When cache blocking of
/// sparse matrix vector multiply works and why", AAECC 2007). 12 bytes per nonzero, as
/// CSR.
enum class spmv_encoding {
  csr,                    // the matrix's own row_ptr, col and val, read in place
  value_indexed,          // val as a byte per nonzero into a table of <= 256 values; col in place
  value_indexed_offsets,  // also col as col - row, 16 bits per nonzero
  column_blocks,          // (row in panel, column in block, value), tile by tile (host only)
  row_groups,             // groups of spmv_group_rows rows sharing one pattern (host only)
};
std::string_view to_string(spmv_encoding e);

/// What partitioned_spmv may choose: `by_rule` takes row_groups on host parts where groups
/// sharing a pattern hold half the nonzeros, then value_indexed_offsets where the
/// rows allow it, then column_blocks where they are allowed and the columns are scattered
/// (see encode_rows), then value_indexed, then csr; `automatic` does the same, then times
/// a host part's column blocks against the encoding the rule gives without them (three
/// products each, alternating, the best of each) and keeps the blocks only where they
/// are at least 5% faster: whether tiles beat gathers depends on the machine's caches (2.5x
/// faster on an Intel Xeon VM whose gathers into a 16 MiB x missed at 4.7 ns, 10-25%
/// slower on an AMD EPYC VM whose L3 served them at about 1 ns; docs/apps.md, "Column
/// blocks"). `csr` always reads the matrix in place (no copy, no setup pass: a matrix
/// used for one product, or a comparison). Every choice gives the same doubles.
enum class spmv_format { automatic, by_rule, csr };

/// Whether encode_rows may choose column_blocks, and their shape: `block_columns` columns
/// per block (a power of two from 2^8 to 2^16; 0: no column blocks, as for a device part),
/// the rows cut into panels (the chunks a launch's threads claim) none taller than
/// block_columns rows and none empty: of equal height where that makes `panels` or more,
/// else about `panels` of about equal weight (split_rows; fewer where the rows are fewer,
/// or heavy rows leave some of those ranges empty), cut again where too tall.
struct column_blocking {
  csr_index block_columns = 0;
  int panels = 1;
  /// Whether encode_rows may choose row_groups (host parts: see row_groups_spmv_kernel).
  bool row_groups = false;
};
/// Columns per block for a host place whose smallest L2 (per core, or per cluster of cores)
/// holds `l2_bytes` (0: unknown, taken as
/// 1 MiB): the largest power of two whose doubles fill at most a quarter of it, within
/// [2^8, 2^16].
csr_index block_columns_for(std::uint64_t l2_bytes);

/// Rows [first, last) of a matrix, encoded. Values are told apart by their bits, so the
/// table holds -0.0 and 0.0, and NaNs with their payloads, as the matrix does: the product
/// multiplies exactly the doubles CSR would, in the same order.
struct encoded_rows {
  spmv_encoding encoding = spmv_encoding::csr;
  std::vector<double> values;             // the table (value_indexed*)
  std::vector<std::uint8_t> value_index;  // per nonzero of the rows, from their first
  std::vector<std::int16_t> offset;       // per nonzero: col - row (value_indexed_offsets)
  // column_blocks: panel p holds rows [panel[p], panel[p + 1]) (local to the range), at most
  // block_columns of them; tile (p, b), p * blocks + b, its nonzeros [tile[t], tile[t + 1])
  // of row / column / value: row panel[p] + row[k], column b * block_columns + column[k],
  // in column order (a column's in row order); tiles of a panel in block order.
  csr_index blocks = 0, block_columns = 0;
  std::vector<csr_index> panel, tile;
  std::vector<std::uint16_t> row, column;  // row - panel[p], column - b * block_columns
  std::vector<double> value;
  // row_groups: group g holds rows [g G, g G + G) (G = spmv_group_rows, local to the range)
  // and reads pattern q = group_pattern[g] >= 0, terms [pattern_start[q], pattern_start[q +
  // 1]) of (column - row, value); or, where q < 0, the rows of its copy as CSR, group -1 - q
  // of those: row i of it has terms [group_row[G (-1 - q) + i], ... + 1]) of group_col and
  // group_val (rows past the range: none).
  std::vector<std::int32_t> group_pattern, pattern_start;
  std::vector<std::int64_t> pattern_offset;
  std::vector<double> pattern_value;
  std::vector<csr_index> group_row, group_col;
  std::vector<double> group_val;
  /// Bytes a product reads for these rows' nonzeros and row_ptr (not x and y, nor the
  /// table: at most 2 KiB, read from the cache).
  double bytes = 0;
};

/// Encodes rows [first, last) of `a` as `format` and `blocking` allow (see spmv_format;
/// row_groups, where blocking allows them, first: chosen when groups that share a pattern
/// hold at least half the nonzeros;
/// `automatic` is `by_rule` here: the timed trial is partitioned_spmv's). column_blocks
/// is chosen when blocking allows it, x spans at least four blocks, and at
/// least half the nonzeros lie more than half a block from the diagonal (x's gathers in
/// row order would miss the cache). Throws strata::invalid_argument for a row range
/// outside the matrix or a block_columns that is no power of two in [2^8, 2^16].
encoded_rows encode_rows(csr_matrix const& a, csr_index first, csr_index last,
                         spmv_format format = spmv_format::automatic,
                         column_blocking blocking = {});

/// csr_spmv_kernel over value-indexed rows: row_ptr as there (so row_ptr[0] is the first
/// row's offset into the matrix, and index - row_ptr[0] its offset into `value_index`),
/// `col` the matrix's columns, `table` the distinct values.
struct csr_vi_spmv_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::index_t chunks, csr_index const* split,
                            csr_index const* row_ptr, csr_index const* col,
                            std::uint8_t const* value_index, double const* table, double const* x,
                            double* y) const {
    csr_index const k0 = row_ptr[0];
    for (auto c : self.elements(chunks))
      for (csr_index r = split[c]; r < split[c + 1]; ++r) {
        double s = 0;
        for (csr_index k = row_ptr[r]; k < row_ptr[r + 1]; ++k)
          s += table[value_index[k - k0]] * x[col[k]];
        y[r] = s;
      }
  }
};

/// csr_vi_spmv_kernel with the columns as offsets from the diagonal: row r's (global
/// index first + r) entry k reads x[first + r + offset[k - row_ptr[0]]].
struct csr_vi_offsets_spmv_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::index_t chunks, csr_index const* split,
                            csr_index const* row_ptr, std::int16_t const* offset,
                            std::uint8_t const* value_index, double const* table, csr_index first,
                            double const* x, double* y) const {
    csr_index const k0 = row_ptr[0];
    for (auto c : self.elements(chunks))
      for (csr_index r = split[c]; r < split[c + 1]; ++r) {
        double s = 0;
        std::int64_t const diagonal = static_cast<std::int64_t>(first) + r;
        for (csr_index k = row_ptr[r]; k < row_ptr[r + 1]; ++k)
          s += table[value_index[k - k0]] * x[diagonal + offset[k - k0]];
        y[r] = s;
      }
  }
};

/// The product over column-blocked rows (encoded_rows, column_blocks), y local to the rows:
/// a panel's y is zeroed, then each of its tiles adds its nonzeros in column order. A row's
/// terms are added in column order, from 0, as csr_spmv_kernel adds them: the same doubles.
struct column_blocks_spmv_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::index_t panels, csr_index const* panel,
                            csr_index blocks, csr_index block_columns, csr_index const* tile,
                            std::uint16_t const* row, std::uint16_t const* column,
                            double const* value, double const* x, double* y) const {
    for (auto p : self.elements(panels)) {
      for (csr_index r = panel[p]; r < panel[p + 1]; ++r) y[r] = 0;
      double* yp = y + panel[p];
      for (csr_index b = 0; b < blocks; ++b) {
        double const* xb = x + static_cast<std::int64_t>(b) * block_columns;
        std::int64_t const t = static_cast<std::int64_t>(p) * blocks + b;
        for (csr_index k = tile[t]; k < tile[t + 1]; ++k) yp[row[k]] += value[k] * xb[column[k]];
      }
    }
  }
};

/// Rows per group of the row_groups encoding: a vector of y (two of AVX2, one of AVX-512).
inline constexpr csr_index spmv_group_rows = 8;

/// The product over row groups (encoded_rows, row_groups), y local to the rows, chunk c
/// being groups [split[c], split[c + 1]). Rows of a mesh's stencil in a mesh order share
/// their pattern with their neighbours: the same values at the same offsets from the
/// diagonal (a 3-D Laplacian's interior, 7 terms). Eight such rows are one group stored
/// once, and their product is a term at a time over eight lanes, each lane one row's
/// sum, each term's x eight consecutive doubles: vector loads and multiply-adds instead of
/// a gather and a scalar chain per nonzero (DIA's idea, per group: Saad, "Iterative
/// methods for sparse linear systems", §3.4). Groups without a shared pattern, and the
/// last partial one, read their rows as CSR from a copy of those rows alone (read in place,
/// the Laplacian's, one group in 16, took 5 ns a nonzero: a few hundred bytes out of every
/// 10 KB of the matrix, which the prefetchers do not follow). A row's terms are added in
/// column order from 0, as csr_spmv_kernel adds them: the same doubles (bit for bit; a
/// row that combines two different NaNs may keep the other's payload, as vector adds may
/// order their operands otherwise than the scalar loop).
struct row_groups_spmv_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, strata::index_t chunks, csr_index const* split,
                            csr_index rows, std::int32_t const* group_pattern,
                            std::int32_t const* pattern_start, std::int64_t const* pattern_offset,
                            double const* pattern_value, csr_index const* group_row,
                            csr_index const* col, double const* val, csr_index first,
                            double const* x, double* y) const {
    constexpr csr_index g_rows = spmv_group_rows;
    for (auto c : self.elements(chunks))
      for (csr_index g = split[c]; g < split[c + 1]; ++g) {
        csr_index const r0 = g * g_rows;
        std::int32_t const q = group_pattern[g];
        if (q >= 0) {
          double s[g_rows] = {};
          double const* xg = x + first + r0;
          for (std::int32_t j = pattern_start[q]; j < pattern_start[q + 1]; ++j) {
            double const v = pattern_value[j];
            double const* xj = xg + pattern_offset[j];
            for (csr_index l = 0; l < g_rows; ++l) s[l] += v * xj[l];
          }
          for (csr_index l = 0; l < g_rows; ++l) y[r0 + l] = s[l];
          continue;
        }
        csr_index const end = rows - r0 > g_rows ? r0 + g_rows : rows;
        csr_index const* rp = group_row + static_cast<std::int64_t>(-1 - q) * g_rows;
        for (csr_index r = r0; r < end; ++r, ++rp) {
          double s = 0;
          for (csr_index k = rp[0]; k < rp[1]; ++k) s += val[k] * x[col[k]];
          y[r] = s;
        }
      }
  }
};

/// Cuts rows [first, last) into `parts` ranges of about equal weight, the weight of a row
/// being its nonzeros plus one (the x, y and row_ptr traffic); returns parts + 1 bounds.
std::vector<csr_index> split_rows(csr_matrix const& a, csr_index first, csr_index last, int parts,
                                  std::vector<double> const& shares = {});

/// One place's share of a partitioned SpMV.
struct spmv_part_info {
  strata::place where;
  csr_index first_row;
  csr_index last_row;
  bool device;  // a copy of its rows lives in the device's memory
  spmv_encoding encoding;
  double matrix_bytes;  // what a product reads of the part's rows (encoded_rows::bytes)
};

/// A matrix partitioned by rows over places (host places, sim devices). The parts are
/// sized by each place's processors times its speed (its share of the machine), and each
/// part is cut into chunks of equal nonzeros for its threads. Every part reads its rows as
/// `format` allows (encode_rows: the values as indices, and the columns as offsets, when
/// the rows allow them; on host parts, row groups where rows share patterns, column
/// blocks sized to the part's L2 when the
/// columns are scattered, in panels as tall as a block, at least four per thread where
/// there are several threads, and, with `automatic`, where a timed trial on the part's
/// place finds them faster); a device gets its rows in the first two encodings, never in
/// column blocks.
class partitioned_spmv {
 public:
  /// `a` must outlive this object (host parts read its row_ptr in place, and its col and
  /// val as far as their encoding leaves them).
  partitioned_spmv(csr_matrix const& a, std::vector<strata::target> const& where,
                   spmv_format format = spmv_format::automatic);
  ~partitioned_spmv();
  partitioned_spmv(partitioned_spmv&&) noexcept;
  partitioned_spmv& operator=(partitioned_spmv&&) noexcept;

  /// y = A x: x has a.cols elements, y a.rows, both in host memory. Blocks until done;
  /// a kernel's or copy's failure is rethrown.
  void multiply(double const* x, double* y);
  std::vector<spmv_part_info> parts() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace apps
