#include "spmv.hpp"

#include "places.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>

namespace apps {

std::vector<csr_index> split_rows(csr_matrix const& a, csr_index first, csr_index last, int parts,
                                  std::vector<double> const& shares) {
  if (parts < 1 || first < 0 || last < first || last > a.rows)
    throw strata::invalid_argument("split_rows: rows [" + std::to_string(first) + ", " +
                                   std::to_string(last) + ") into " + std::to_string(parts) +
                                   " parts of a matrix of " + std::to_string(a.rows) + " rows");
  auto weight = [&](csr_index r) {  // rows before r in the range, plus their nonzeros
    return static_cast<double>(a.row_ptr[static_cast<std::size_t>(r)] -
                               a.row_ptr[static_cast<std::size_t>(first)]) +
           static_cast<double>(r - first);
  };
  std::vector<double> cut(static_cast<std::size_t>(parts) + 1, 0.0);
  for (int p = 0; p < parts; ++p)
    cut[static_cast<std::size_t>(p) + 1] =
        cut[static_cast<std::size_t>(p)] +
        (shares.empty() ? 1.0 : shares[static_cast<std::size_t>(p)]);
  double const total = weight(last);
  std::vector<csr_index> bounds{first};
  csr_index r = first;
  for (int p = 1; p < parts; ++p) {
    double const goal = total * cut[static_cast<std::size_t>(p)] / cut.back();
    // The first row whose preceding weight reaches the goal (weights grow with r).
    csr_index lo = r, hi = last;
    while (lo < hi) {
      csr_index mid = lo + (hi - lo) / 2;
      if (weight(mid) < goal)
        lo = mid + 1;
      else
        hi = mid;
    }
    r = lo;
    bounds.push_back(r);
  }
  bounds.push_back(last);
  return bounds;
}

std::string_view to_string(spmv_encoding e) {
  switch (e) {
    case spmv_encoding::csr:
      return "csr";
    case spmv_encoding::value_indexed:
      return "value-indexed";
    case spmv_encoding::value_indexed_offsets:
      return "value-indexed+offsets";
    case spmv_encoding::column_blocks:
      return "column-blocks";
    case spmv_encoding::row_groups:
      return "row-groups";
  }
  return "unknown";
}

namespace {

// At most 256 distinct bit patterns, found with a small open-addressing set (512 slots, so
// at most half full): false as soon as a 257th appears. `index` gets each value's slot in
// `table`, in the order of first appearance.
class value_table {
 public:
  bool add(std::uint64_t bits, std::uint8_t& index) {
    std::size_t h = static_cast<std::size_t>((bits * 0x9E3779B97F4A7C15ull) >> 55);  // 9 bits
    for (;; h = (h + 1) & (slots - 1)) {
      if (!used_[h]) break;
      if (keys_[h] == bits) {
        index = ids_[h];
        return true;
      }
    }
    if (values.size() == 256) return false;
    used_[h] = true;
    keys_[h] = bits;
    ids_[h] = static_cast<std::uint8_t>(values.size());
    index = ids_[h];
    values.push_back(std::bit_cast<double>(bits));
    return true;
  }
  std::vector<double> values;

 private:
  static constexpr std::size_t slots = 512;
  std::array<bool, slots> used_{};
  std::array<std::uint64_t, slots> keys_{};
  std::array<std::uint8_t, slots> ids_{};
};

}  // namespace

csr_index block_columns_for(std::uint64_t l2_bytes) {
  std::uint64_t const l2 = l2_bytes == 0 ? std::uint64_t{1} << 20 : l2_bytes;
  csr_index columns = csr_index{1} << 16;
  while (columns > 256 && static_cast<std::uint64_t>(columns) * sizeof(double) > l2 / 4)
    columns /= 2;
  return columns;
}

namespace {

std::int64_t block_count(csr_index cols, csr_index width) {
  return (static_cast<std::int64_t>(cols) + width - 1) / width;
}

// The panels of rows [first, last), bounds local to the range, none taller than
// block_columns rows (a panel's slice of y as large as a block's slice of x, and its rows
// 16-bit offsets), none empty: as few as that allows, of equal height, since every panel
// reads all of x once; or, where those are fewer than `blocking.panels` (for the threads
// to claim), that many of about equal weight (split_rows), cut again where too tall. (2 M
// power-law rows in 31 panels of equal height: 31.8 ms on one thread of the 2-core VM; in
// panels of equal weight cut to height, about 50: 46 ms.)
std::int64_t panel_estimate(csr_index first, csr_index last, column_blocking const& blocking) {
  auto const rows = static_cast<std::int64_t>(last) - first;
  return std::clamp<std::int64_t>(
      std::max<std::int64_t>(block_count(last - first, blocking.block_columns), blocking.panels), 1,
      std::max<std::int64_t>(rows, 1));
}

std::vector<csr_index> tile_panels(csr_matrix const& a, csr_index first, csr_index last,
                                   column_blocking const& blocking) {
  std::vector<csr_index> out{0};
  auto const rows = static_cast<std::int64_t>(last) - first;
  if (auto const tall = block_count(last - first, blocking.block_columns);
      tall >= blocking.panels) {
    for (std::int64_t q = 1; q <= tall; ++q) out.push_back(static_cast<csr_index>(rows * q / tall));
    return out;
  }
  auto const cut =
      split_rows(a, first, last, static_cast<int>(panel_estimate(first, last, blocking)));
  for (std::size_t i = 0; i + 1 < cut.size(); ++i) {
    std::int64_t const s = cut[i] - first, e = cut[i + 1] - first;
    auto const pieces = block_count(static_cast<csr_index>(e - s), blocking.block_columns);
    for (std::int64_t q = 1; q <= pieces; ++q)
      out.push_back(static_cast<csr_index>(s + (e - s) * q / pieces));
  }
  if (out.size() == 1) out.push_back(last - first);
  return out;
}

// Whether column blocks pay (encode_rows' rule): x spans four blocks or more, the tiles
// hold 4 nonzeros each on average (a wide, very sparse range would spend its time on
// empty tiles), and at least half the nonzeros lie more than half a block from the
// diagonal (row r's diagonal at column r * cols / rows), where a row-order product's
// gathers leave the cache.
bool scattered_columns(csr_matrix const& a, csr_index first, csr_index last,
                       column_blocking const& blocking) {
  auto const width = blocking.block_columns;
  auto const blocks = block_count(a.cols, width);
  auto const nnz = static_cast<std::int64_t>(a.row_ptr[static_cast<std::size_t>(last)]) -
                   a.row_ptr[static_cast<std::size_t>(first)];
  if (blocks < 4 || nnz < 4 * blocks * panel_estimate(first, last, blocking)) return false;
  double const slope = static_cast<double>(a.cols) / static_cast<double>(std::max(a.rows, 1));
  std::int64_t far = 0, all = 0;
  for (csr_index r = first; r < last; ++r) {
    auto const diagonal = static_cast<std::int64_t>(slope * static_cast<double>(r));
    for (auto k = a.row_ptr[static_cast<std::size_t>(r)];
         k < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++k, ++all)
      if (std::abs(a.col[static_cast<std::size_t>(k)] - diagonal) > width / 2) ++far;
  }
  return all > 0 && 2 * far >= all;
}

// Rows [first, last) as column blocks of `blocking` (see encoded_rows). A panel's nonzeros,
// met in row order, are placed by two stable counting passes, on the column within the
// block and then on the block: each tile comes out in column order, and a column's
// nonzeros (so a row's, too) in row order.
void encode_blocks(csr_matrix const& a, csr_index first, csr_index last,
                   column_blocking const& blocking, encoded_rows& e) {
  auto const width = blocking.block_columns;
  e.encoding = spmv_encoding::column_blocks;
  e.block_columns = width;
  e.blocks = static_cast<csr_index>(block_count(a.cols, width));
  e.panel = tile_panels(a, first, last, blocking);
  auto const panels = e.panel.size() - 1;
  auto const blocks = static_cast<std::size_t>(e.blocks);
  auto const shift = std::countr_zero(static_cast<std::uint32_t>(width));
  auto const mask = width - 1;
  auto const col = [&](std::size_t k) { return a.col[k]; };
  auto const begin = [&](std::size_t p) {  // the panel's first nonzero in the matrix
    return static_cast<std::size_t>(a.row_ptr[static_cast<std::size_t>(first + e.panel[p])]);
  };
  std::vector<std::int64_t> count(panels * blocks + 1, 0);
  for (std::size_t p = 0; p < panels; ++p)
    for (auto k = begin(p); k < begin(p + 1); ++k)
      ++count[p * blocks + static_cast<std::size_t>(col(k) >> shift) + 1];
  e.tile.resize(count.size());
  for (std::size_t t = 1; t < count.size(); ++t) count[t] += count[t - 1];
  for (std::size_t t = 0; t < count.size(); ++t) e.tile[t] = static_cast<csr_index>(count[t]);
  auto const nnz = static_cast<std::size_t>(count.back());
  e.row.resize(nnz);
  e.column.resize(nnz);
  e.value.resize(nnz);
  std::vector<std::int64_t> low(static_cast<std::size_t>(width) + 1);
  std::vector<std::uint16_t> row_of;  // a panel's nonzeros' rows, from the panel's first
  std::vector<std::size_t> by_low;    // its nonzeros (matrix indices), by column in block
  for (std::size_t p = 0; p < panels; ++p) {
    auto const k0 = begin(p), k1 = begin(p + 1);
    row_of.resize(k1 - k0);
    for (auto r = e.panel[p]; r < e.panel[p + 1]; ++r)
      for (auto k = a.row_ptr[static_cast<std::size_t>(first + r)];
           k < a.row_ptr[static_cast<std::size_t>(first + r) + 1]; ++k)
        row_of[static_cast<std::size_t>(k) - k0] = static_cast<std::uint16_t>(r - e.panel[p]);
    by_low.resize(k1 - k0);
    if ((k1 - k0) * 4 < static_cast<std::size_t>(width)) {
      // Fewer nonzeros than the counting pass has buckets: a stable sort is cheaper.
      std::iota(by_low.begin(), by_low.end(), k0);
      std::stable_sort(by_low.begin(), by_low.end(), [&](std::size_t x, std::size_t y) {
        return (col(x) & mask) < (col(y) & mask);
      });
    } else {
      std::fill(low.begin(), low.end(), 0);
      for (auto k = k0; k < k1; ++k) ++low[static_cast<std::size_t>(col(k) & mask) + 1];
      for (std::size_t c = 1; c < low.size(); ++c) low[c] += low[c - 1];
      for (auto k = k0; k < k1; ++k)
        by_low[static_cast<std::size_t>(low[static_cast<std::size_t>(col(k) & mask)]++)] = k;
    }
    // The tiles' next free places (count[t] is tile t's start again after the prefix sum).
    std::int64_t* next = count.data() + p * blocks;
    for (auto k : by_low) {
      auto const at = static_cast<std::size_t>(next[static_cast<std::size_t>(col(k) >> shift)]++);
      e.row[at] = row_of[k - k0];
      e.column[at] = static_cast<std::uint16_t>(col(k) & mask);
      e.value[at] = a.val[k];
    }
  }
  e.bytes =
      static_cast<double>(nnz) * static_cast<double>(2 * sizeof(std::uint16_t) + sizeof(double)) +
      static_cast<double>(e.tile.size() + e.panel.size()) * sizeof(csr_index);
}

// row_groups (row_groups_spmv_kernel): each full group of spmv_group_rows rows whose rows
// hold the same count of terms, at the same offsets from their diagonals, with the same
// values (bits), gets that pattern (one per distinct pattern); the others -1 (CSR). Keeps
// them in `e` and returns true when those groups hold at least half the nonzeros.
bool encode_groups(csr_matrix const& a, csr_index first, csr_index last, encoded_rows& e) {
  constexpr csr_index g_rows = spmv_group_rows;
  auto const rows = last - first;
  auto const groups = (static_cast<std::size_t>(rows) + g_rows - 1) / g_rows;
  auto row_ptr = [&](csr_index r) {  // r local
    return static_cast<std::size_t>(a.row_ptr[static_cast<std::size_t>(first + r)]);
  };
  auto offset = [&](csr_index r, std::size_t k) {  // r local
    return static_cast<std::int64_t>(a.col[k]) - (static_cast<std::int64_t>(first) + r);
  };
  auto const nnz = row_ptr(rows) - row_ptr(0);
  // First the patterns alone (4 bytes a group beside them): most matrices that are not
  // meshes fail the rule, and should not pay for copies of their rows.
  std::vector<std::int32_t> group_pattern(groups, -1), pattern_start{0};
  std::vector<std::int64_t> pattern_offset;
  std::vector<double> pattern_value;
  std::unordered_map<std::string, std::int32_t> known;
  std::string key;
  std::size_t shared = 0;
  for (std::size_t g = 0; g < groups; ++g) {
    auto const r0 = static_cast<csr_index>(g) * g_rows;
    auto const k0 = row_ptr(r0), length = row_ptr(r0 + 1) - k0;
    bool same = length > 0 && rows - r0 >= g_rows;
    for (csr_index l = 1; l < g_rows && same; ++l) {
      auto const kl = row_ptr(r0 + l);
      same = row_ptr(r0 + l + 1) - kl == length;
      for (std::size_t j = 0; j < length && same; ++j)
        same = offset(r0 + l, kl + j) == offset(r0, k0 + j) &&
               std::bit_cast<std::uint64_t>(a.val[kl + j]) ==
                   std::bit_cast<std::uint64_t>(a.val[k0 + j]);
    }
    if (!same) continue;
    key.clear();
    for (std::size_t j = 0; j < length; ++j) {
      std::array<std::int64_t, 2> const term{offset(r0, k0 + j),
                                             std::bit_cast<std::int64_t>(a.val[k0 + j])};
      key.append(reinterpret_cast<char const*>(term.data()), sizeof term);
    }
    auto [at, added] = known.try_emplace(key, static_cast<std::int32_t>(pattern_start.size() - 1));
    if (added) {
      for (std::size_t j = 0; j < length; ++j) {
        pattern_offset.push_back(offset(r0, k0 + j));
        pattern_value.push_back(a.val[k0 + j]);
      }
      pattern_start.push_back(static_cast<std::int32_t>(pattern_offset.size()));
    }
    group_pattern[g] = at->second;
    shared += length * g_rows;
  }
  if (nnz == 0 || 2 * shared < nnz) return false;
  // Then a copy of the other groups' rows (see row_groups_spmv_kernel), rows past the
  // range empty.
  std::vector<csr_index> group_row, group_col;
  std::vector<double> group_val;
  group_col.reserve(nnz - shared);
  group_val.reserve(nnz - shared);
  for (std::size_t g = 0; g < groups; ++g) {
    if (group_pattern[g] >= 0) continue;
    group_pattern[g] = -1 - static_cast<std::int32_t>(group_row.size() / g_rows);
    auto const r0 = static_cast<csr_index>(g) * g_rows;
    for (csr_index l = 0; l < g_rows; ++l) {
      group_row.push_back(static_cast<csr_index>(group_col.size()));
      if (l >= rows - r0) continue;
      for (auto k = row_ptr(r0 + l); k < row_ptr(r0 + l + 1); ++k) {
        group_col.push_back(a.col[k]);
        group_val.push_back(a.val[k]);
      }
    }
  }
  group_row.push_back(static_cast<csr_index>(group_col.size()));
  e.encoding = spmv_encoding::row_groups;
  e.group_pattern = std::move(group_pattern);
  e.pattern_start = std::move(pattern_start);
  e.pattern_offset = std::move(pattern_offset);
  e.pattern_value = std::move(pattern_value);
  e.group_row = std::move(group_row);
  e.group_col = std::move(group_col);
  e.group_val = std::move(group_val);
  // A pattern per group; the patterns themselves are few and read from the cache. The
  // other groups read their rows' copy as CSR: columns, values and row starts.
  e.bytes =
      static_cast<double>(groups) * sizeof(std::int32_t) +
      static_cast<double>(nnz - shared) * static_cast<double>(sizeof(csr_index) + sizeof(double)) +
      static_cast<double>(e.group_row.size()) * sizeof(csr_index);
  return true;
}

}  // namespace

encoded_rows encode_rows(csr_matrix const& a, csr_index first, csr_index last, spmv_format format,
                         column_blocking blocking) {
  if (first < 0 || last < first || last > a.rows)
    throw strata::invalid_argument("encode_rows: rows [" + std::to_string(first) + ", " +
                                   std::to_string(last) + ") of a matrix of " +
                                   std::to_string(a.rows) + " rows");
  auto const width = blocking.block_columns;
  if (width != 0 &&
      (width < 256 || width > (1 << 16) || !std::has_single_bit(static_cast<std::uint32_t>(width))))
    throw strata::invalid_argument("encode_rows: " + std::to_string(width) +
                                   " columns per block; expected 0 (no column blocks) or a "
                                   "power of two from 256 to 65536");
  encoded_rows e;
  auto const k0 = static_cast<std::size_t>(a.row_ptr[static_cast<std::size_t>(first)]);
  auto const k1 = static_cast<std::size_t>(a.row_ptr[static_cast<std::size_t>(last)]);
  auto const nnz = static_cast<double>(k1 - k0);
  double const row_bytes = sizeof(csr_index) * (static_cast<double>(last - first) + 1);
  e.bytes = row_bytes + nnz * static_cast<double>(sizeof(csr_index) + sizeof(double));
  if (format == spmv_format::csr || k1 == k0) return e;
  if (blocking.row_groups && encode_groups(a, first, last, e)) return e;
  value_table table;
  std::vector<std::uint8_t> index(k1 - k0);
  bool few_values = true;
  for (std::size_t k = k0; k < k1 && few_values; ++k)
    few_values = table.add(std::bit_cast<std::uint64_t>(a.val[k]), index[k - k0]);
  bool offsets = few_values;
  for (csr_index r = first; r < last && offsets; ++r)
    for (auto k = a.row_ptr[static_cast<std::size_t>(r)];
         k < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++k) {
      auto const d = static_cast<std::int64_t>(a.col[static_cast<std::size_t>(k)]) - r;
      if (d < std::numeric_limits<std::int16_t>::min() ||
          d > std::numeric_limits<std::int16_t>::max()) {
        offsets = false;
        break;
      }
    }
  // Offsets first: 3 bytes per nonzero, and columns that close to the diagonal gather from
  // the cache anyway (so the pass over the columns below is skipped where they fit).
  if (!offsets && width != 0 && scattered_columns(a, first, last, blocking)) {
    encode_blocks(a, first, last, blocking, e);
    return e;
  }
  if (!few_values) return e;
  e.values = std::move(table.values);
  e.value_index = std::move(index);
  e.encoding = spmv_encoding::value_indexed;
  e.bytes = row_bytes + nnz * static_cast<double>(sizeof(csr_index) + 1);
  if (offsets) {
    e.offset.resize(k1 - k0);
    for (csr_index r = first; r < last; ++r)
      for (auto k = a.row_ptr[static_cast<std::size_t>(r)];
           k < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++k)
        e.offset[static_cast<std::size_t>(k) - k0] =
            static_cast<std::int16_t>(a.col[static_cast<std::size_t>(k)] - r);
    e.encoding = spmv_encoding::value_indexed_offsets;
    e.bytes = row_bytes + nnz * static_cast<double>(sizeof(std::int16_t) + 1);
  }
  return e;
}

namespace {

// Calls launch(kernel, chunks, arrays...) with the kernel of `encoding` and the arrays it
// reads, for host parts (the matrix in place, their encoded rows) and device parts (their
// copies) alike; arrays an encoding does not read may be empty.
void launch_encoded(spmv_encoding encoding, auto&& launch, strata::index_t chunks, auto split,
                    auto row_ptr, auto col, auto val, auto value_index, auto table, auto offset,
                    csr_index first, auto x, auto y) {
  switch (encoding) {
    case spmv_encoding::csr:
      launch(csr_spmv_kernel{}, chunks, split, row_ptr, col, val, x, y);
      break;
    case spmv_encoding::value_indexed:
      launch(csr_vi_spmv_kernel{}, chunks, split, row_ptr, col, value_index, table, x, y);
      break;
    case spmv_encoding::value_indexed_offsets:
      launch(csr_vi_offsets_spmv_kernel{}, chunks, split, row_ptr, offset, value_index, table,
             first, x, y);
      break;
    case spmv_encoding::column_blocks:  // host parts only: partitioned_spmv launches them
    case spmv_encoding::row_groups:
      throw strata::error("partitioned_spmv: column blocks and row groups are host formats");
  }
}

// Chunks per thread of a part: enough for the threads backend's dynamic claiming to even
// out rows of unequal cost, few enough that a chunk's bookkeeping is nothing. A host
// part's chunks are the blocks of its launch (strata::grid): divide_work would put 16
// of them into one block, a thread's, leaving nothing to claim (the same speed either
// way in a quiet moment on the 2-core VM; claiming is what absorbs a preempted thread).
constexpr int chunks_per_thread = 16;
// Column-blocked parts claim panels: as few as their height allows (each reads all of x:
// encode_rows), but at least this many per thread where there are several.
constexpr int panels_per_thread = 4;

struct part {
  strata::target where;
  csr_index first = 0, last = 0;
  bool device = false;
  strata::index_t chunks = 0;
  std::vector<csr_index> split;  // host parts: local chunk bounds
  encoded_rows rows;             // how the part reads its rows (devices: a copy there)
  // Device parts: the rows, rebased and encoded as `rows` says, in the device's memory
  // (only the arrays the encoding reads), and x and y there.
  strata::buffer<csr_index, 1, strata::sim_space> d_split, d_row_ptr, d_col;
  strata::buffer<double, 1, strata::sim_space> d_val, d_table, d_x, d_y;
  strata::buffer<std::uint8_t, 1, strata::sim_space> d_value_index;
  strata::buffer<std::int16_t, 1, strata::sim_space> d_offset;
  std::unique_ptr<strata::queue> q;
};

// Starts a host part's product of its rows: y (local to the part) = rows times x.
strata::event launch_host(part const& p, csr_matrix const& a, double const* x, double* y) {
  // A block per chunk or panel (see chunks_per_thread).
  auto const work = strata::grid(p.chunks);
  auto const& e = p.rows;
  if (e.encoding == spmv_encoding::column_blocks)
    return strata::launch(p.where, work, column_blocks_spmv_kernel{}, p.chunks, p.split.data(),
                          e.blocks, e.block_columns, e.tile.data(), e.row.data(), e.column.data(),
                          e.value.data(), x, y);
  if (e.encoding == spmv_encoding::row_groups)
    return strata::launch(p.where, work, row_groups_spmv_kernel{}, p.chunks, p.split.data(),
                          p.last - p.first, e.group_pattern.data(), e.pattern_start.data(),
                          e.pattern_offset.data(), e.pattern_value.data(), e.group_row.data(),
                          e.group_col.data(), e.group_val.data(), p.first, x, y);
  strata::event done;
  launch_encoded(
      e.encoding,
      [&](auto kernel, auto... args) { done = strata::launch(p.where, work, kernel, args...); },
      p.chunks, p.split.data(), a.row_ptr.data() + p.first, a.col.data(), a.val.data(),
      e.value_index.data(), e.values.data(), e.offset.data(), p.first, x, y);
  return done;
}

// spmv_format::automatic: a host part whose rule chose column blocks keeps them only if a
// timed trial on its place finds them at least 5% faster than the rule's encoding without
// them (the blocks are a copy of the rows: on a tie, the one that reads the matrix in
// place, or smaller). Alternating rounds, best of each, absorb a preempted round.
void keep_blocks_if_faster(part& p, csr_matrix const& a, std::vector<csr_index> local) {
  part rows_part{p.where, p.first, p.last};
  rows_part.rows = encode_rows(a, p.first, p.last, spmv_format::by_rule, {});
  rows_part.split = std::move(local);
  rows_part.chunks = static_cast<strata::index_t>(rows_part.split.size()) - 1;
  std::vector<double> x(static_cast<std::size_t>(a.cols), 1.0);
  std::vector<double> y(static_cast<std::size_t>(p.last - p.first));
  auto seconds = [&](part const& q) {
    auto const t0 = std::chrono::steady_clock::now();
    launch_host(q, a, x.data(), y.data()).wait();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double blocks = std::numeric_limits<double>::infinity(), rows = blocks;
  for (int round = 0; round < 3; ++round) {
    blocks = std::min(blocks, seconds(p));
    rows = std::min(rows, seconds(rows_part));
  }
  if (blocks < 0.95 * rows) return;
  p.rows = std::move(rows_part.rows);
  p.split = std::move(rows_part.split);
  p.chunks = rows_part.chunks;
}

}  // namespace

struct partitioned_spmv::state {
  csr_matrix const* a;
  std::vector<part> parts;
  std::uint32_t host_memory = 0;
};

partitioned_spmv::partitioned_spmv(csr_matrix const& a, std::vector<strata::target> const& where,
                                   spmv_format format)
    : state_(std::make_unique<state>()) {
  if (where.empty()) throw strata::invalid_argument("partitioned_spmv: no places to run on");
  state_->a = &a;
  state_->host_memory = host_memory_id(where.front().where);
  std::vector<double> shares;
  for (auto const& t : where) shares.push_back(place_share(t.where));
  auto bounds = split_rows(a, 0, a.rows, static_cast<int>(where.size()), shares);
  std::vector<strata::event> copies;
  std::vector<std::vector<csr_index>> staging;  // rebased row_ptr, alive until copied
  // Each part lives in state_ before its copies start (reserved: never moved meanwhile,
  // though a move would keep the buffers' memory), so that a failure below can let the
  // copies in flight end before the memory they read and write goes.
  state_->parts.reserve(where.size());
  try {
    for (std::size_t i = 0; i < where.size(); ++i) {
      auto& p = state_->parts.emplace_back(part{where[i]});
      p.first = bounds[i];
      p.last = bounds[i + 1];
      p.device = is_device(where[i].where);
      int const threads = place_threads(where[i].where);
      auto local = split_rows(a, p.first, p.last, std::max(1, threads * chunks_per_thread));
      for (auto& b : local) b -= p.first;
      p.chunks = static_cast<strata::index_t>(local.size()) - 1;
      if (!p.device) {
        column_blocking const blocking{block_columns_for(place_l2_bytes(where[i].where)),
                                       threads == 1 ? 1 : threads * panels_per_thread, true};
        p.rows = encode_rows(a, p.first, p.last, format, blocking);
        if (p.rows.encoding == spmv_encoding::row_groups) {
          // Chunks of equal groups: a group's cost is about its pattern's.
          auto const groups = static_cast<csr_index>(p.rows.group_pattern.size());
          auto const chunks = std::min(groups, std::max(1, threads * chunks_per_thread));
          p.split.resize(static_cast<std::size_t>(chunks) + 1);
          for (csr_index c = 0; c <= chunks; ++c)
            p.split[static_cast<std::size_t>(c)] = static_cast<csr_index>(
                static_cast<std::int64_t>(groups) * c / std::max<csr_index>(chunks, 1));
          p.chunks = chunks;
        } else if (p.rows.encoding == spmv_encoding::column_blocks) {
          p.split = p.rows.panel;
          p.chunks = static_cast<strata::index_t>(p.split.size()) - 1;
          if (format == spmv_format::automatic) keep_blocks_if_faster(p, a, std::move(local));
        } else {
          p.split = std::move(local);
        }
      } else {
        // A device reads fewer bytes per nonzero over its own memory as the host does; the
        // encoded arrays also make its copy of the rows smaller.
        p.rows = encode_rows(a, p.first, p.last, format);
        auto const encoding = p.rows.encoding;
        auto const rows = static_cast<std::size_t>(p.last - p.first);
        auto const k0 = a.row_ptr[static_cast<std::size_t>(p.first)];
        auto const nnz = static_cast<std::size_t>(a.row_ptr[static_cast<std::size_t>(p.last)] - k0);
        auto const n = std::max<std::size_t>(nnz, 1);
        auto& d = p.where.where;
        p.q = std::make_unique<strata::queue>(p.where);
        p.d_split = {d, local.size()};
        p.d_row_ptr = {d, rows + 1};
        if (encoding != spmv_encoding::value_indexed_offsets) p.d_col = {d, n};
        if (encoding == spmv_encoding::csr) {
          p.d_val = {d, n};
        } else {
          p.d_value_index = {d, n};
          p.d_table = {d, p.rows.values.size()};
        }
        if (encoding == spmv_encoding::value_indexed_offsets) p.d_offset = {d, n};
        p.d_x = {d, std::max<std::size_t>(static_cast<std::size_t>(a.cols), 1)};
        p.d_y = {d, std::max<std::size_t>(rows, 1)};
        staging.push_back(std::move(local));
        auto& rebased = staging.emplace_back(rows + 1);
        for (std::size_t r = 0; r <= rows; ++r)
          rebased[r] = a.row_ptr[static_cast<std::size_t>(p.first) + r] - k0;
        auto& split_host = staging[staging.size() - 2];
        copies.push_back(p.q->copy(
            p.d_split.data(), host_ptr(split_host.data(), state_->host_memory), split_host.size()));
        copies.push_back(
            p.q->copy(p.d_row_ptr.data(), host_ptr(rebased.data(), state_->host_memory), rows + 1));
        auto const host = state_->host_memory;
        if (nnz > 0) {
          if (encoding != spmv_encoding::value_indexed_offsets)
            copies.push_back(p.q->copy(p.d_col.data(), host_ptr(a.col.data() + k0, host), nnz));
          if (encoding == spmv_encoding::csr) {
            copies.push_back(p.q->copy(p.d_val.data(), host_ptr(a.val.data() + k0, host), nnz));
          } else {
            copies.push_back(
                p.q->copy(p.d_value_index.data(), host_ptr(p.rows.value_index.data(), host), nnz));
            copies.push_back(p.q->copy(p.d_table.data(), host_ptr(p.rows.values.data(), host),
                                       p.rows.values.size()));
          }
          if (encoding == spmv_encoding::value_indexed_offsets)
            copies.push_back(
                p.q->copy(p.d_offset.data(), host_ptr(p.rows.offset.data(), host), nnz));
        }
      }
    }
  } catch (...) {
    for (auto& e : copies) try {
        e.wait();
      } catch (...) {  // the first failure is the one to report
      }
    throw;
  }
  strata::wait_all(copies);
  // A device part's encoded rows now live on the device: the host's copy can go.
  for (auto& p : state_->parts)
    if (p.device) {
      p.rows.value_index = {};
      p.rows.offset = {};
    }
}

partitioned_spmv::~partitioned_spmv() = default;
partitioned_spmv::partitioned_spmv(partitioned_spmv&&) noexcept = default;
partitioned_spmv& partitioned_spmv::operator=(partitioned_spmv&&) noexcept = default;

void partitioned_spmv::multiply(double const* x, double* y) {
  auto const& a = *state_->a;
  std::vector<strata::event> done;
  // Devices first: their copies and kernels proceed while the host parts compute.
  for (auto& p : state_->parts) {
    if (!p.device || p.last == p.first) continue;
    auto const rows = static_cast<std::size_t>(p.last - p.first);
    p.q->copy(p.d_x.data(), host_ptr(x, state_->host_memory), static_cast<std::size_t>(a.cols));
    auto const work = strata::divide_work(p.where, p.chunks);
    launch_encoded(
        p.rows.encoding, [&](auto kernel, auto... args) { p.q->launch(work, kernel, args...); },
        p.chunks, p.d_split.data(), p.d_row_ptr.data(), p.d_col.data(), p.d_val.data(),
        p.d_value_index.data(), p.d_table.data(), p.d_offset.data(), p.first, p.d_x.data(),
        p.d_y.data());
    done.push_back(p.q->copy(host_ptr(y + p.first, state_->host_memory), p.d_y.data(), rows));
  }
  for (auto& p : state_->parts)
    if (!p.device && p.last != p.first) done.push_back(launch_host(p, a, x, y + p.first));
  strata::wait_all(done);
}

std::vector<spmv_part_info> partitioned_spmv::parts() const {
  std::vector<spmv_part_info> out;
  for (auto const& p : state_->parts)
    out.push_back({p.where.where, p.first, p.last, p.device, p.rows.encoding, p.rows.bytes});
  return out;
}

}  // namespace apps
