// The SpMV application's parts (apps/common): the Matrix Market reader on every variant
// of the format and on malformed files (rejected with the line number), the generators,
// and the partitioned product on host places and sim devices against a naive dense
// product.
#include "sparse.hpp"
#include "places.hpp"
#include "spmv.hpp"

#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace {

using apps::csr_index;
using apps::csr_matrix;

// A directory of its own for the files one test writes, removed afterwards.
class mtx_files : public ::testing::Test {
 protected:
  void SetUp() override {
    auto const* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("strata_apps_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(std::string const& name, std::string const& text) {
    auto path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

std::vector<std::vector<double>> dense(csr_matrix const& a) {
  std::vector<std::vector<double>> d(static_cast<std::size_t>(a.rows),
                                     std::vector<double>(static_cast<std::size_t>(a.cols), 0.0));
  for (std::size_t r = 0; r < d.size(); ++r)
    for (auto k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
      d[r][static_cast<std::size_t>(a.col[static_cast<std::size_t>(k)])] =
          a.val[static_cast<std::size_t>(k)];
  return d;
}

// CSR invariants: row_ptr monotone from 0 to nnz, each row's columns sorted and unique.
void expect_well_formed(csr_matrix const& a) {
  ASSERT_EQ(a.row_ptr.size(), static_cast<std::size_t>(a.rows) + 1);
  EXPECT_EQ(a.row_ptr.front(), 0);
  EXPECT_EQ(a.row_ptr.back(), a.nnz());
  EXPECT_EQ(a.col.size(), a.val.size());
  for (std::size_t r = 0; r < static_cast<std::size_t>(a.rows); ++r)
    for (auto k = a.row_ptr[r] + 1; k < a.row_ptr[r + 1]; ++k)
      EXPECT_LT(a.col[static_cast<std::size_t>(k) - 1], a.col[static_cast<std::size_t>(k)]);
}

TEST_F(mtx_files, RealGeneralWithCommentsAndBlankLines) {
  apps::matrix_market_header h;
  auto a = apps::read_matrix_market_file(write("a.mtx",
                                               "%%MatrixMarket matrix coordinate real general\n"
                                               "% a comment\n"
                                               "%\n"
                                               "\n"
                                               "3 4 5\n"
                                               "1 1 1.5\n"
                                               "3 4 -2e-1\n"
                                               "  2   3\t7\n"
                                               "% a comment between entries\n"
                                               "1 4 4\n"
                                               "3 1 0.25\n"),
                                         &h);
  EXPECT_EQ(h.field, "real");
  EXPECT_EQ(h.symmetry, "general");
  expect_well_formed(a);
  EXPECT_EQ(a.rows, 3);
  EXPECT_EQ(a.cols, 4);
  std::vector<std::vector<double>> want = {{1.5, 0, 0, 4}, {0, 0, 7, 0}, {0.25, 0, 0, -0.2}};
  EXPECT_EQ(dense(a), want);
}

TEST_F(mtx_files, IntegerPatternAndCaseInsensitiveHeader) {
  auto a = apps::read_matrix_market_file(
      write("i.mtx", "%%MatrixMarket MATRIX Coordinate Integer GENERAL\n2 2 2\n1 2 -3\n2 1 12\n"));
  std::vector<std::vector<double>> want_i = {{0, -3}, {12, 0}};
  EXPECT_EQ(dense(a), want_i);
  auto p = apps::read_matrix_market_file(
      write("p.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 3 3\n1 3\n2 2\n1 1\n"));
  std::vector<std::vector<double>> want_p = {{1, 0, 1}, {0, 1, 0}};
  EXPECT_EQ(dense(p), want_p);
  auto d = apps::read_matrix_market_file(
      write("d.mtx", "%%MatrixMarket matrix coordinate double general\n1 1 1\n1 1 2.5\n"));
  EXPECT_EQ(d.val, std::vector<double>{2.5});
}

TEST_F(mtx_files, SymmetricAndSkewSymmetricAreMirrored) {
  auto s = apps::read_matrix_market_file(write(
      "s.mtx",
      "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 2\n2 1 -1\n3 2 5\n3 3 1\n"));
  std::vector<std::vector<double>> want_s = {{2, -1, 0}, {-1, 0, 5}, {0, 5, 1}};
  EXPECT_EQ(dense(s), want_s);
  expect_well_formed(s);
  auto k = apps::read_matrix_market_file(write(
      "k.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 4\n3 1 -1\n"));
  std::vector<std::vector<double>> want_k = {{0, -4, 1}, {4, 0, 0}, {-1, 0, 0}};
  EXPECT_EQ(dense(k), want_k);
  auto p = apps::read_matrix_market_file(
      write("ps.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 2\n2 1\n2 2\n"));
  std::vector<std::vector<double>> want_p = {{0, 1}, {1, 1}};
  EXPECT_EQ(dense(p), want_p);
}

TEST_F(mtx_files, DuplicatesAreSummedAndEmptyRowsKept) {
  auto a = apps::read_matrix_market_file(write(
      "dup.mtx", "%%MatrixMarket matrix coordinate real general\n4 2 3\n4 2 1\n1 1 2\n4 2 0.5\n"));
  expect_well_formed(a);
  EXPECT_EQ(a.nnz(), 2);
  std::vector<std::vector<double>> want = {{2, 0}, {0, 0}, {0, 0}, {0, 1.5}};
  EXPECT_EQ(dense(a), want);
  auto empty = apps::read_matrix_market_file(
      write("empty.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 0\n"));
  EXPECT_EQ(empty.nnz(), 0);
  EXPECT_EQ(empty.rows, 3);
}

// Each malformed file is rejected with strata::parse_error naming "file:line:".
TEST_F(mtx_files, MalformedFilesNameTheLine) {
  struct bad_case {
    char const* name;
    char const* text;
    int line;
    char const* says;
  };
  std::vector<bad_case> cases = {
      {"empty", "", 0, "empty file"},
      {"noheader", "3 3 1\n1 1 1\n", 1, "expected the header"},
      {"array", "%%MatrixMarket matrix array real general\n2 2\n", 1, "'coordinate'"},
      {"complex", "%%MatrixMarket matrix coordinate complex general\n", 1, "field 'complex'"},
      {"hermitian", "%%MatrixMarket matrix coordinate real hermitian\n", 1, "symmetry"},
      {"shortheader", "%%MatrixMarket matrix coordinate real\n", 1, "expected 5"},
      {"nosize", "%%MatrixMarket matrix coordinate real general\n% only a comment\n", 2,
       "size line"},
      {"badsize", "%%MatrixMarket matrix coordinate real general\n%\n3 x 2\n", 3, "column count"},
      {"sizefields", "%%MatrixMarket matrix coordinate real general\n3 3\n", 2, "expected 3"},
      {"row0", "%%MatrixMarket matrix coordinate real general\n3 3 1\n0 1 1.0\n", 3, "1-based"},
      {"colbig", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n2 4 1.0\n", 4,
       "outside the 3 x 3"},
      {"novalue", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1\n", 3, "expected 3"},
      {"badvalue", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1.5x\n", 3,
       "not a real number"},
      {"badint", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 2.5\n", 3,
       "not an integer"},
      {"patternvalue", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 2\n", 3,
       "pattern"},
      {"tooshort", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 2\n", 4,
       "after 2 of the 3 entries"},
      {"toolong", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1\n% c\n2 2 2\n", 5,
       "more entries"},
      {"upper", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 1\n1 2 1\n", 4,
       "above the diagonal"},
      {"skewdiag", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1\n", 3,
       "diagonal entry"},
      {"nonsquare", "%%MatrixMarket matrix coordinate real symmetric\n3 2 0\n", 2,
       "must be square"},
      {"negative", "%%MatrixMarket matrix coordinate real general\n-3 3 0\n", 2, "negative"},
      // docs/apps.md: a value that is not a finite real is a parse error.
      {"nan", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 nan\n2 2 2\n3 3 1\n", 3,
       "value 'nan' is not finite"},
      {"inf", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n2 2 -inf\n", 4,
       "value '-inf' is not finite"},
      // A size line announcing 2e9 entries for three lines: no up-front 2e9-entry reserve
      // (std::bad_alloc), the missing entries are the error.
      {"hugecount", "%%MatrixMarket matrix coordinate real general\n3 3 2000000000\n1 1 1\n", 3,
       "after 1 of the 2000000000 entries"},
  };
  for (auto const& c : cases) {
    SCOPED_TRACE(c.name);
    auto path = write(std::string(c.name) + ".mtx", c.text);
    try {
      (void)apps::read_matrix_market_file(path);
      ADD_FAILURE() << "accepted " << c.name;
    } catch (strata::parse_error const& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(path + ":" + std::to_string(c.line) + ":"), std::string::npos) << what;
      EXPECT_NE(what.find(c.says), std::string::npos) << what;
    }
  }
  EXPECT_THROW((void)apps::read_matrix_market_file((dir_ / "missing.mtx").string()),
               strata::parse_error);
  // A directory opens as a stream on Linux and reads as empty: it is named as a directory.
  try {
    (void)apps::read_matrix_market_file(dir_.string());
    ADD_FAILURE() << "accepted a directory";
  } catch (strata::parse_error const& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

// A NaN anywhere makes the difference NaN (the check fails), not only in the last element:
// a later finite difference must not replace it.
TEST(SparseMatrix, MaxRelativeDifferenceKeepsANaN) {
  double const nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(apps::max_relative_difference({nan, 2, 1}, {1, 2, 1})));
  EXPECT_TRUE(std::isnan(apps::max_relative_difference({1, 2, nan}, {1, 2, 1})));
  EXPECT_TRUE(std::isnan(apps::max_relative_difference({1, 5, 1}, {nan, 2, 1})));
  EXPECT_DOUBLE_EQ(apps::max_relative_difference({1, 3, 1}, {1, 2, 1}), 0.5);
}

// The generators' sizes: their limits keep the nonzeros in 32-bit indices, and a grid
// whose rows overflow 64 bits (2^21 cubed) is refused rather than wrapped.
TEST(SparseMatrix, GeneratorLimitsAndOverflowingGrids) {
  EXPECT_EQ(apps::generator_limit("laplacian2d"), 20724);
  EXPECT_EQ(apps::generator_limit("laplacian3d"), 674);
  EXPECT_EQ(apps::generator_limit("power-law"), 2147483647);
  EXPECT_THROW((void)apps::generator_limit("dense"), strata::invalid_argument);
  try {
    (void)apps::laplacian_3d(2097152, 2097152, 2097152);
    ADD_FAILURE() << "accepted 2^63 rows";
  } catch (strata::invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("expected 1 to 2^31-1"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)apps::laplacian_3d(675, 675, 675), strata::invalid_argument);
}

TEST(SparseMatrix, TripletsOutsideTheMatrixAreRejected) {
  EXPECT_THROW((void)apps::csr_from_triplets(2, 2, {{0, 2, 1.0}}), strata::invalid_argument);
  EXPECT_THROW((void)apps::csr_from_triplets(2, 2, {{-1, 0, 1.0}}), strata::invalid_argument);
  EXPECT_THROW((void)apps::laplacian_2d(0, 3), strata::invalid_argument);
  EXPECT_THROW((void)apps::random_power_law(10, 11, 1), strata::invalid_argument);
}

TEST(SparseMatrix, GeneratedMatricesHaveTheirStructure) {
  auto l2 = apps::laplacian_2d(5, 3);
  expect_well_formed(l2);
  EXPECT_EQ(l2.rows, 15);
  EXPECT_EQ(l2.nnz(), 15 + 2 * (4 * 3 + 5 * 2));  // diagonal + both directions of each link
  auto l3 = apps::laplacian_3d(4, 3, 2);
  expect_well_formed(l3);
  EXPECT_EQ(l3.nnz(), 24 + 2 * (3 * 3 * 2 + 4 * 2 * 2 + 4 * 3 * 1));
  // Rows sum to zero inside, positive on the boundary (the Dirichlet Laplacian).
  auto d = dense(l3);
  double inner = 0;
  for (double v : d[static_cast<std::size_t>(1 * 12 + 1 * 4 + 1)]) inner += v;
  EXPECT_GT(inner, 0);  // 4 x 3 x 2 has no interior point: every row touches the boundary
  auto p = apps::random_power_law(2000, 6, 9);
  expect_well_formed(p);
  EXPECT_EQ(apps::random_power_law(2000, 6, 9).col, p.col);  // deterministic in the seed
  std::int64_t longest = 0;
  for (std::size_t r = 0; r < 2000; ++r)
    longest = std::max<std::int64_t>(longest, p.row_ptr[r + 1] - p.row_ptr[r]);
  EXPECT_GT(longest, 10 * p.nnz() / 2000);  // a heavy tail: some rows far above average
  EXPECT_NEAR(static_cast<double>(p.nnz()) / 2000, 6, 2.5);
}

// y against want: the same non-finite values where want has them (a NaN or an infinity
// in the matrix reaches its rows' sums), else within 1e-13 relative.
void expect_close(std::vector<double> const& y, std::vector<double> const& want) {
  ASSERT_EQ(y.size(), want.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(y[i])) << "row " << i;
    else if (std::isinf(want[i]))
      EXPECT_EQ(y[i], want[i]) << "row " << i;
    else
      EXPECT_LE(std::abs(y[i] - want[i]) / std::max(1.0, std::abs(want[i])), 1e-13) << "row " << i;
  }
}

// The partitioned product on every set of places, against a naive dense product (or, for
// a matrix too large to hold dense, the entries summed row by row in a plain loop).
void check_product(csr_matrix const& a, strata::place const& machine) {
  std::vector<double> x(static_cast<std::size_t>(a.cols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.5 + static_cast<double>((i * 7) % 11);
  std::vector<double> want(static_cast<std::size_t>(a.rows), 0.0);
  if (static_cast<double>(a.rows) * a.cols <= 1e6) {
    auto d = dense(a);
    for (std::size_t r = 0; r < want.size(); ++r)
      for (std::size_t c = 0; c < x.size(); ++c)
        if (d[r][c] != 0 || !std::isfinite(d[r][c])) want[r] += d[r][c] * x[c];
  } else {
    for (std::size_t r = 0; r < want.size(); ++r)
      for (auto k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
        want[r] += a.val[static_cast<std::size_t>(k)] *
                   x[static_cast<std::size_t>(a.col[static_cast<std::size_t>(k)])];
  }
  auto pus = machine.slice(strata::isa::host).processors().size();
  // Host parts read their rows encoded where the rows allow it (automatic), or as CSR.
  for (auto format : {apps::spmv_format::automatic, apps::spmv_format::csr}) {
    for (std::string name : {"host", "host@serial", "host@openmp", "sim", "host+sim"}) {
      SCOPED_TRACE(name);
      apps::partitioned_spmv product(a, apps::places_named(machine, name), format);
      for (auto const& p : product.parts())
        if (format == apps::spmv_format::csr) {
          EXPECT_EQ(p.encoding, apps::spmv_encoding::csr);
        }
      std::vector<double> y(want.size(), -7.0);
      product.multiply(x.data(), y.data());
      expect_close(y, want);
      product.multiply(x.data(), y.data());  // again: the device copies are reused
      expect_close(y, want);
    }
    if (pus >= 2) {
      apps::partitioned_spmv product(a, apps::places_named(machine, "host:2"), format);
      std::vector<double> y(want.size(), -7.0);
      product.multiply(x.data(), y.data());
      expect_close(y, want);
    }
  }
}

TEST_F(mtx_files, ProductOnHostAndSimPlacesMatchesANaiveProduct) {
  strata::runtime rt{strata::runtime_options{.sim_devices = "2:bw=20GB/s,lat=1us"}};
  std::vector<std::pair<char const*, char const*>> files = {
      {"general",
       "%%MatrixMarket matrix coordinate real general\n5 4 7\n1 1 1\n1 4 2\n2 2 3\n"
       "3 1 -1\n4 3 0.5\n5 4 9\n5 1 1\n"},
      {"symmetric",
       "%%MatrixMarket matrix coordinate real symmetric\n4 4 5\n1 1 4\n2 1 1\n"
       "3 3 2\n4 2 -1\n4 4 3\n"},
      {"skew", "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 2\n3 2 -5\n"},
      {"pattern", "%%MatrixMarket matrix coordinate pattern general\n3 5 4\n1 5\n2 1\n2 2\n3 3\n"},
      {"onerow", "%%MatrixMarket matrix coordinate real general\n1 3 2\n1 1 2\n1 3 4\n"},
  };
  for (auto const& [name, text] : files) {
    SCOPED_TRACE(name);
    check_product(apps::read_matrix_market_file(write(std::string(name) + ".mtx", text)),
                  rt.machine());
  }
  check_product(apps::laplacian_2d(9, 7), rt.machine());
  check_product(apps::laplacian_3d(5, 4, 3), rt.machine());
  check_product(apps::random_power_law(300, 5, 3), rt.machine());
}

// Every nonzero of rows [first, last) decodes to the matrix's own value (bit for bit) and
// column.
void expect_decodes(csr_matrix const& a, csr_index first, csr_index last,
                    apps::encoded_rows const& e) {
  auto const k0 = static_cast<std::size_t>(a.row_ptr[static_cast<std::size_t>(first)]);
  auto const k1 = static_cast<std::size_t>(a.row_ptr[static_cast<std::size_t>(last)]);
  ASSERT_NE(e.encoding, apps::spmv_encoding::csr);
  ASSERT_EQ(e.value_index.size(), k1 - k0);
  if (e.encoding == apps::spmv_encoding::value_indexed_offsets) {
    ASSERT_EQ(e.offset.size(), k1 - k0);
  }
  for (csr_index r = first; r < last; ++r)
    for (auto k = static_cast<std::size_t>(a.row_ptr[static_cast<std::size_t>(r)]);
         k < static_cast<std::size_t>(a.row_ptr[static_cast<std::size_t>(r) + 1]); ++k) {
      ASSERT_LT(e.value_index[k - k0], e.values.size());
      ASSERT_EQ(std::bit_cast<std::uint64_t>(e.values[e.value_index[k - k0]]),
                std::bit_cast<std::uint64_t>(a.val[k]))
          << "row " << r << " entry " << k;
      if (e.encoding == apps::spmv_encoding::value_indexed_offsets) {
        ASSERT_EQ(r + e.offset[k - k0], a.col[k]) << "row " << r << " entry " << k;
      }
    }
}

using apps::spmv_encoding;

TEST(SparseMatrix, RowsAreEncodedOnlyWhenTheyFitAndDecodeExactly) {
  // A Laplacian: two values, columns within n^2 of the diagonal.
  auto lap = apps::laplacian_3d(6, 5, 4);
  auto e = apps::encode_rows(lap, 0, lap.rows);
  EXPECT_EQ(e.encoding, spmv_encoding::value_indexed_offsets);
  EXPECT_EQ(e.values.size(), 2u);
  EXPECT_DOUBLE_EQ(e.bytes, 4.0 * (lap.rows + 1) + 3.0 * static_cast<double>(lap.nnz()));
  expect_decodes(lap, 0, lap.rows, e);
  expect_decodes(lap, 7, 50, apps::encode_rows(lap, 7, 50));  // a middle range
  auto forced = apps::encode_rows(lap, 0, lap.rows, apps::spmv_format::csr);
  EXPECT_EQ(forced.encoding, spmv_encoding::csr);
  EXPECT_TRUE(forced.value_index.empty());
  EXPECT_DOUBLE_EQ(forced.bytes, lap.bytes());
  // Rows without nonzeros have nothing to encode.
  auto empty = apps::csr_from_triplets(5, 5, {{4, 4, 1.0}});
  EXPECT_EQ(apps::encode_rows(empty, 0, 4).encoding, spmv_encoding::csr);
  EXPECT_EQ(apps::encode_rows(empty, 2, 2).encoding, spmv_encoding::csr);
  EXPECT_THROW((void)apps::encode_rows(empty, 3, 6), strata::invalid_argument);
  EXPECT_THROW((void)apps::encode_rows(empty, -1, 2), strata::invalid_argument);
  EXPECT_THROW((void)apps::encode_rows(empty, 3, 2), strata::invalid_argument);

  // 256 distinct values fit a byte, 257 do not; -0.0 and 0.0, and two NaNs with different
  // payloads, are different values (the product must multiply exactly the matrix's).
  // (Each entry at its own position: csr_from_triplets sums duplicates.)
  std::vector<apps::triplet> t;
  for (int i = 0; i < 252; ++i) t.push_back({i, i, 1.0 + i});
  t.push_back({252, 252, 0.0});
  t.push_back({253, 253, -0.0});
  t.push_back({254, 254, std::bit_cast<double>(std::uint64_t{0x7ff8000000000001})});
  t.push_back({255, 255, std::bit_cast<double>(std::uint64_t{0x7ff8000000000002})});
  for (int i = 0; i < 256; ++i) t.push_back({i, (i + 1) % 256, 1.0 + (i % 252)});  // repeats
  auto full = apps::csr_from_triplets(256, 256, t);
  auto f = apps::encode_rows(full, 0, full.rows);
  ASSERT_EQ(f.encoding, spmv_encoding::value_indexed_offsets);
  EXPECT_EQ(f.values.size(), 256u);
  expect_decodes(full, 0, full.rows, f);
  t.push_back({0, 128, 1e300});  // the 257th value
  auto over = apps::csr_from_triplets(256, 256, t);
  EXPECT_EQ(apps::encode_rows(over, 0, over.rows).encoding, spmv_encoding::csr);
  // ...unless the rows holding it are left out.
  EXPECT_NE(apps::encode_rows(over, 1, over.rows).encoding, spmv_encoding::csr);

  // Offsets are 16-bit: col - row in [-32768, 32767], else the columns stay as they are.
  auto edges = apps::csr_from_triplets(32769, 40000, {{0, 32767, 2.0}, {32768, 0, 3.0}});
  auto g = apps::encode_rows(edges, 0, edges.rows);
  EXPECT_EQ(g.encoding, spmv_encoding::value_indexed_offsets);
  expect_decodes(edges, 0, edges.rows, g);
  auto far_right = apps::csr_from_triplets(2, 40000, {{0, 32768, 2.0}, {1, 1, 3.0}});
  EXPECT_EQ(apps::encode_rows(far_right, 0, 2).encoding, spmv_encoding::value_indexed);
  expect_decodes(far_right, 0, 2, apps::encode_rows(far_right, 0, 2));
  EXPECT_EQ(apps::encode_rows(far_right, 1, 2).encoding, spmv_encoding::value_indexed_offsets);
  auto far_left = apps::csr_from_triplets(32770, 3, {{32769, 0, 2.0}});
  EXPECT_EQ(apps::encode_rows(far_left, 0, far_left.rows).encoding, spmv_encoding::value_indexed);
}

// The encoded products on matrices made to hit each encoding's edges: more rows than
// columns (a row's diagonal past x's end), offsets at both 16-bit limits, NaN, infinity
// and signed zeros, empty rows (on a 2-PU machine the tall matrix's second host:2 part
// starts in them), value-indexed rows without offsets, parts that start past row 0.
TEST(SparseMatrix, EncodedProductsMatchANaiveProduct) {
  strata::runtime rt{strata::runtime_options{.sim_devices = "2:bw=20GB/s,lat=1us"}};
  double const inf = std::numeric_limits<double>::infinity();
  // Tall: 40 rows over 3 columns; rows 10-19 empty.
  std::vector<apps::triplet> tall;
  for (int r = 0; r < 40; ++r)
    if (r < 10 || r >= 20) tall.push_back({r, r % 3, r % 2 ? -1.0 : 0.5});
  check_product(apps::csr_from_triplets(40, 3, tall), rt.machine());
  // Wide, with the 16-bit limits and the values a product must keep.
  auto limits = apps::csr_from_triplets(
      32769, 32769, {{0, 32767, 2.0}, {32768, 0, 3.0}, {5, 5, -0.0}, {6, 7, 0.0}, {100, 99, 1.5}});
  check_product(limits, rt.machine());
  auto special = apps::csr_from_triplets(6, 6, {{0, 0, inf}, {1, 1, -inf}, {2, 3, 2.0}});
  check_product(special, rt.machine());
  // A NaN reaches its own row only.
  auto with_nan = apps::csr_from_triplets(
      4, 4, {{0, 0, 1.0}, {1, 1, std::numeric_limits<double>::quiet_NaN()}, {2, 2, 1.0}});
  for (auto format : {apps::spmv_format::automatic, apps::spmv_format::csr}) {
    apps::partitioned_spmv product(with_nan, apps::places_named(rt.machine(), "host"), format);
    std::vector<double> x(4, 2.0), y(4, -7.0);
    product.multiply(x.data(), y.data());
    EXPECT_EQ(y[0], 2.0);
    EXPECT_TRUE(std::isnan(y[1]));
    EXPECT_EQ(y[2], 2.0);
    EXPECT_EQ(y[3], 0.0);
  }
  // Three parts on one place, whatever the PU count: the second and third parts' rows
  // start past 0, where the offsets are from their rows' diagonals, not the part's first.
  {
    auto const serial = apps::places_named(rt.machine(), "host@serial").front();
    auto lap = apps::laplacian_2d(30, 20);
    apps::partitioned_spmv product(lap, {serial, serial, serial});
    ASSERT_EQ(product.parts().size(), 3u);
    for (auto const& p : product.parts()) EXPECT_EQ(p.encoding, spmv_encoding::row_groups);
    EXPECT_GT(product.parts()[2].first_row, 0);
    std::vector<double> x(static_cast<std::size_t>(lap.cols)), y(x.size()), want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 5);
    apps::reference_spmv(lap, x.data(), want.data());
    product.multiply(x.data(), y.data());
    expect_close(y, want);
  }
  // Few values, columns too far from the diagonal for offsets: value_indexed, the
  // matrix's own columns, also in parts that start past row 0.
  {
    std::vector<apps::triplet> far;
    for (int r = 0; r < 60; ++r) {
      far.push_back({r, r % 2 ? 39999 - r : r, r % 3 ? 0.5 : -2.0});
      far.push_back({r, 20000 + r, 1.0});
      // Most nonzeros near the diagonal: no column blocks, whatever the L2's size.
      far.push_back({r, r + 1, 0.25});
      far.push_back({r, r + 2, 0.25});
    }
    auto wide = apps::csr_from_triplets(60, 40000, far);
    check_product(wide, rt.machine());
    auto const serial = apps::places_named(rt.machine(), "host@serial").front();
    apps::partitioned_spmv product(wide, {serial, serial, serial});
    for (auto const& p : product.parts()) EXPECT_EQ(p.encoding, spmv_encoding::value_indexed);
    EXPECT_GT(product.parts()[2].first_row, 0);
    std::vector<double> x(static_cast<std::size_t>(wide.cols)), y(60), want(60);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 7);
    apps::reference_spmv(wide, x.data(), want.data());
    product.multiply(x.data(), y.data());
    expect_close(y, want);
  }
  // Sim devices get their rows encoded too (copied to them that way).
  {
    auto lap = apps::laplacian_3d(7, 6, 5);
    apps::partitioned_spmv product(lap, apps::places_named(rt.machine(), "sim"));
    ASSERT_EQ(product.parts().size(), 2u);
    for (auto const& p : product.parts()) {
      EXPECT_TRUE(p.device);
      EXPECT_EQ(p.encoding, spmv_encoding::value_indexed_offsets);
    }
    std::vector<apps::triplet> far;
    for (int r = 0; r < 40; ++r) far.push_back({r, 39999 - r, r % 2 ? 1.0 : 3.0});
    auto wide = apps::csr_from_triplets(40, 40000, far);
    apps::partitioned_spmv vi(wide, apps::places_named(rt.machine(), "sim"));
    for (auto const& p : vi.parts()) EXPECT_EQ(p.encoding, spmv_encoding::value_indexed);
    check_product(wide, rt.machine());
  }
  // Which encoding each matrix got, on one host part.
  auto encoding_of = [&](csr_matrix const& a) {
    apps::partitioned_spmv product(a, apps::places_named(rt.machine(), "host"));
    return product.parts().front().encoding;
  };
  EXPECT_EQ(encoding_of(limits), spmv_encoding::value_indexed_offsets);
  EXPECT_EQ(encoding_of(apps::random_power_law(300, 5, 3)), spmv_encoding::csr);
}

// Column blocks, straight through encode_rows and the kernel: every block width and panel
// count on matrices made for the edges (a partial last block, empty rows and whole empty
// panels, more rows than columns and the reverse, a row range starting past 0, signed
// zeros, infinities and NaN). A row's terms must be added as CSR adds them, so y is
// compared bit for bit with csr_spmv_kernel's, both compiled here.
// The kernels run here on a Self of this file's own, so no instantiation of this file
// (compiled without -march=native: no FMA) can stand in for the library's at link time.
// (A vector, not std::ranges::iota_view: clang 14 rejects libstdc++ 12's views.)
struct one_thread_self {
  std::vector<strata::index_t> elements(strata::index_t n) const {
    std::vector<strata::index_t> all(static_cast<std::size_t>(n));
    std::iota(all.begin(), all.end(), strata::index_t{0});
    return all;
  }
};

std::vector<double> csr_kernel_product(csr_matrix const& a, csr_index first, csr_index last,
                                       std::vector<double> const& x) {
  std::vector<csr_index> split{0, last - first};
  std::vector<double> y(static_cast<std::size_t>(last - first), -7.0);
  apps::csr_spmv_kernel{}(one_thread_self{}, 1, split.data(), a.row_ptr.data() + first,
                          a.col.data(), a.val.data(), x.data(), y.data());
  return y;
}

std::vector<double> blocks_kernel_product(apps::encoded_rows const& e, csr_index rows,
                                          std::vector<double> const& x) {
  auto const panels = static_cast<strata::index_t>(e.panel.size()) - 1;
  // One guard entry past the rows: a write outside them would show.
  std::vector<double> y(static_cast<std::size_t>(rows) + 1, -7.0);
  apps::column_blocks_spmv_kernel{}(one_thread_self{}, panels, e.panel.data(), e.blocks,
                                    e.block_columns, e.tile.data(), e.row.data(), e.column.data(),
                                    e.value.data(), x.data(), y.data());
  EXPECT_EQ(y.back(), -7.0);
  y.pop_back();
  return y;
}

testing::AssertionResult same_bits(std::vector<double> const& a, std::vector<double> const& b) {
  if (a.size() != b.size())
    return testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<std::uint64_t>(a[i]) != std::bit_cast<std::uint64_t>(b[i]))
      return testing::AssertionFailure() << "element " << i << ": " << a[i] << " and " << b[i];
  return testing::AssertionSuccess();
}

TEST(SparseMatrix, ColumnBlocksAddTheSameDoublesAsCsr) {
  double const inf = std::numeric_limits<double>::infinity();
  double const nan = std::numeric_limits<double>::quiet_NaN();
  // Uniform random columns (far from the diagonal), rows [100, 400) empty, special values.
  auto scattered = [&](csr_index rows, csr_index cols, int per_row, std::uint64_t seed) {
    std::vector<apps::triplet> t;
    for (csr_index r = 0; r < rows; ++r) {
      if (r >= 100 && r < 700) continue;  // whole panels of 256 rows without a nonzero
      strata::philox4x32 g(seed, static_cast<std::uint64_t>(r));
      for (int k = 0; k < per_row; ++k)
        t.push_back({r, strata::uniform_int(g, csr_index{0}, cols - 1),
                     2.0 * strata::uniform_real<double>(g) - 1.0});
    }
    t.push_back({7, cols - 1, -0.0});
    t.push_back({150, cols - 1, -0.0});  // alone in its row: y starts at +0.0, as CSR's sum
    t.push_back({8, 0, inf});
    t.push_back({9, cols / 2, nan});
    t.push_back({rows - 1, cols - 1, 3.0});
    return apps::csr_from_triplets(rows, cols, t);
  };
  struct input {
    char const* name;
    csr_matrix a;
    csr_index first, last;
  };
  std::vector<input> inputs;
  // Panels of 65,536 rows (16-bit row offsets up to 65,535) in blocks of 65,536 columns.
  inputs.push_back({"uint16 limits", scattered(131072, 300000, 3, 3), 0, 131072});
  inputs.push_back({"uint16 limits rows [1, 131072)", scattered(131072, 300000, 3, 3), 1, 131072});
  // Panels of fewer nonzeros than a quarter of the block's columns: sorted, not counted.
  inputs.push_back({"sparse rows in wide blocks", scattered(20000, 300000, 1, 4), 0, 20000});
  inputs.push_back({"power-law", apps::random_power_law(5000, 6, 7), 0, 5000});
  inputs.push_back({"power-law rows [1234, 4321)", apps::random_power_law(5000, 6, 7), 1234, 4321});
  inputs.push_back({"tall", scattered(6000, 1100, 3, 1), 0, 6000});
  inputs.push_back({"wide", scattered(500, 70001, 40, 2), 0, 500});
  inputs.push_back({"wide rows [450, 500)", scattered(500, 70001, 40, 2), 450, 500});
  for (auto const& in : inputs) {
    std::vector<double> x(static_cast<std::size_t>(in.a.cols));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.25 + static_cast<double>((i * 5) % 17);
    auto const want = csr_kernel_product(in.a, in.first, in.last, x);
    for (csr_index width : {256, 1024, 65536}) {
      if (in.a.cols < 4 * width) continue;
      for (int panels : {1, 3, 7, 64}) {
        SCOPED_TRACE(std::string(in.name) + ", width " + std::to_string(width) + ", panels " +
                     std::to_string(panels));
        auto e = apps::encode_rows(in.a, in.first, in.last, apps::spmv_format::automatic,
                                   {width, panels});
        // Tiles of fewer than 4 nonzeros on average: no blocks. Panels: as asked, at least
        // one per `width` rows, at most the rows.
        std::int64_t const rows = in.last - in.first;
        std::int64_t const blocks = (in.a.cols + width - 1) / width;
        std::int64_t const tiles =
            blocks * std::min(rows, std::max<std::int64_t>(panels, (rows + width - 1) / width));
        std::int64_t const nnz = in.a.row_ptr[static_cast<std::size_t>(in.last)] -
                                 in.a.row_ptr[static_cast<std::size_t>(in.first)];
        if (nnz < 4 * tiles) {
          EXPECT_NE(e.encoding, spmv_encoding::column_blocks);
          continue;
        }
        ASSERT_EQ(e.encoding, spmv_encoding::column_blocks);
        EXPECT_EQ(e.blocks, blocks);
        ASSERT_GE(e.panel.size(), static_cast<std::size_t>((rows + width - 1) / width) + 1);
        EXPECT_EQ(e.panel.front(), 0);
        EXPECT_EQ(e.panel.back(), rows);
        for (std::size_t p = 0; p + 1 < e.panel.size(); ++p) {
          EXPECT_LT(e.panel[p], e.panel[p + 1]);  // none empty
          EXPECT_LE(e.panel[p + 1] - e.panel[p], width);
        }
        EXPECT_EQ(e.tile.back(), in.a.row_ptr[static_cast<std::size_t>(in.last)] -
                                     in.a.row_ptr[static_cast<std::size_t>(in.first)]);
        EXPECT_TRUE(same_bits(blocks_kernel_product(e, in.last - in.first, x), want));
      }
    }
  }
}

TEST(SparseMatrix, ColumnBlocksAreChosenForScatteredColumnsOnly) {
  auto const power = apps::random_power_law(5000, 6, 7);
  using apps::spmv_format;
  EXPECT_EQ(apps::encode_rows(power, 0, 5000, spmv_format::automatic, {256, 2}).encoding,
            spmv_encoding::column_blocks);
  // Not allowed, or forced to CSR, or x within four blocks: CSR (the values are distinct).
  EXPECT_EQ(apps::encode_rows(power, 0, 5000).encoding, spmv_encoding::csr);
  EXPECT_EQ(apps::encode_rows(power, 0, 5000, spmv_format::csr, {256, 2}).encoding,
            spmv_encoding::csr);
  EXPECT_EQ(apps::encode_rows(power, 0, 5000, spmv_format::automatic, {2048, 2}).encoding,
            spmv_encoding::csr);
  // Few values (a pattern matrix) with scattered columns: blocks before value indices (a 1 M
  // row pattern product at one thread: 14.5 ms in blocks, 25 ms value-indexed, 29 as CSR).
  // (40,000 columns: offsets from the diagonal do not fit 16 bits.)
  auto pattern = apps::random_power_law(40000, 4, 5);
  std::fill(pattern.val.begin(), pattern.val.end(), 1.0);
  EXPECT_EQ(apps::encode_rows(pattern, 0, 40000, spmv_format::automatic, {256, 2}).encoding,
            spmv_encoding::column_blocks);
  EXPECT_EQ(apps::encode_rows(pattern, 0, 40000).encoding, spmv_encoding::value_indexed);
  // 1600 scattered nonzeros in 5000 x 5000: 20 blocks x 20 panels of 256 rows hold 4 a
  // tile; 40 panels would hold 2, too few.
  std::vector<apps::triplet> sparse_far;
  for (int r = 0; r < 1600; ++r) sparse_far.push_back({r * 3, (r * 2741) % 5000, 1.0 + r});
  auto const thin = apps::csr_from_triplets(5000, 5000, sparse_far);
  EXPECT_EQ(apps::encode_rows(thin, 0, 5000, spmv_format::automatic, {256, 40}).encoding,
            spmv_encoding::csr);
  EXPECT_EQ(apps::encode_rows(thin, 0, 5000, spmv_format::automatic, {256, 1}).encoding,
            spmv_encoding::column_blocks);
  // A mesh: offsets, never blocks.
  auto const mesh = apps::laplacian_2d(100, 100);
  EXPECT_EQ(apps::encode_rows(mesh, 0, mesh.rows, spmv_format::automatic, {256, 2}).encoding,
            spmv_encoding::value_indexed_offsets);
  // Distinct values near the diagonal (within half a block): CSR, the gathers hit the cache.
  std::vector<apps::triplet> band;
  for (int r = 0; r < 5000; ++r)
    for (int d : {-100, 0, 100})
      if (r + d >= 0 && r + d < 5000) band.push_back({r, r + d, 1.0 + r * 1e-3 + d * 1e-7});
  auto const banded = apps::csr_from_triplets(5000, 5000, band);
  EXPECT_EQ(apps::encode_rows(banded, 0, 5000, spmv_format::automatic, {256, 2}).encoding,
            spmv_encoding::csr);
  // Half the nonzeros far: blocks; fewer: not.
  auto half = [](int far_per_row) {
    std::vector<apps::triplet> t;
    for (int r = 0; r < 4000; ++r) {
      for (int k = 0; k < 4 - far_per_row; ++k) t.push_back({r, (r + k) % 4000, 1.0 + r + k * 0.1});
      for (int k = 0; k < far_per_row; ++k) t.push_back({r, (r + 2000 + k) % 4000, 2.0 + r});
    }
    return apps::csr_from_triplets(4000, 4000, t);
  };
  EXPECT_EQ(apps::encode_rows(half(2), 0, 4000, spmv_format::automatic, {256, 1}).encoding,
            spmv_encoding::column_blocks);
  EXPECT_EQ(apps::encode_rows(half(1), 0, 4000, spmv_format::automatic, {256, 1}).encoding,
            spmv_encoding::csr);
  for (csr_index bad : {-256, 100, 255, 300, 1 << 17})
    EXPECT_THROW(apps::encode_rows(power, 0, 10, spmv_format::automatic, {bad, 1}),
                 strata::invalid_argument)
        << bad;
  EXPECT_EQ(apps::block_columns_for(0), 32768);  // unknown: taken as 1 MiB
  EXPECT_EQ(apps::block_columns_for(std::uint64_t{2} << 20), 65536);
  EXPECT_EQ(apps::block_columns_for(std::uint64_t{64} << 20), 65536);
  EXPECT_EQ(apps::block_columns_for(std::uint64_t{256} << 10), 8192);
  EXPECT_EQ(apps::block_columns_for(std::uint64_t{1} << 10), 256);
}

// Row groups through partitioned_spmv (host parts), against forced CSR bit for bit: a
// partial last group; groups of a mesh line's ends and of empty rows read as copied CSR;
// parts past row 0; patterns holding -0.0, infinity and a NaN, and an x with a NaN and an
// infinity; a rule-only encode_rows never picks them (the host parts' flag).
TEST(SparseMatrix, RowGroupsAddTheSameDoublesAsCsr) {
  strata::runtime rt;
  double const inf = std::numeric_limits<double>::infinity();
  double const nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<apps::triplet> band;
  for (int r = 0; r < 203; ++r) {
    if (r >= 96 && r < 112) continue;  // two groups of empty rows
    if (r > 0) band.push_back({r, r - 1, r < 150 ? -0.0 : inf});
    band.push_back({r, r, 2.5});
    if (r + 3 < 203) band.push_back({r, r + 3, r < 40 ? nan : 0.75});
  }
  std::vector<csr_matrix> matrices{apps::laplacian_2d(67, 5), apps::laplacian_3d(48, 3, 3),
                                   apps::csr_from_triplets(203, 203, band)};
  auto const serial = apps::places_named(rt.machine(), "host@serial").front();
  for (auto const& a : matrices) {
    SCOPED_TRACE(a.rows);
    EXPECT_NE(apps::encode_rows(a, 0, a.rows).encoding, spmv_encoding::row_groups);
    std::vector<double> x(static_cast<std::size_t>(a.cols));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.25 + static_cast<double>((i * 5) % 9);
    x[7] = nan;
    x[x.size() - 2] = -inf;
    std::vector<double> want(static_cast<std::size_t>(a.rows), -3.0), y(want.size());
    apps::partitioned_spmv csr(a, {serial}, apps::spmv_format::csr);
    csr.multiply(x.data(), want.data());
    for (auto const& where :
         {std::vector<strata::target>{serial}, std::vector<strata::target>{serial, serial, serial},
          apps::places_named(rt.machine(), "host")}) {
      apps::partitioned_spmv groups(a, where, apps::spmv_format::by_rule);
      for (auto const& p : groups.parts()) EXPECT_EQ(p.encoding, spmv_encoding::row_groups);
      std::fill(y.begin(), y.end(), -7.0);
      groups.multiply(x.data(), y.data());
      EXPECT_TRUE(same_bits(y, want));
    }
  }
}

// Through partitioned_spmv, on a matrix wide enough for blocks sized to any L2 (x of 2.4
// MB spans at least four blocks of at most 64 Ki columns): by the rule, host parts read
// column blocks, sim devices CSR; `automatic` times the blocks against CSR on each host
// part and keeps either (which depends on the machine); every mix gives the forced-CSR
// product's bits.
TEST(SparseMatrix, PartitionedProductsReadScatteredColumnsInBlocksOnTheHost) {
  strata::runtime rt{strata::runtime_options{.sim_devices = "2:bw=20GB/s,lat=1us"}};
  auto const a = apps::random_power_law(300000, 4, 11);
  std::vector<double> x(static_cast<std::size_t>(a.cols));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0 + static_cast<double>(i % 13) / 16;
  auto pus = rt.machine().slice(strata::isa::host).processors().size();
  std::vector<std::string> names{"host", "host@serial", "host@openmp", "host+sim"};
  if (pus >= 2) names.push_back("host:2");
  for (auto const& name : names) {
    SCOPED_TRACE(name);
    auto const where = apps::places_named(rt.machine(), name);
    apps::partitioned_spmv blocked(a, where, apps::spmv_format::by_rule),
        timed(a, where, apps::spmv_format::automatic), csr(a, where, apps::spmv_format::csr);
    for (auto const& p : blocked.parts())
      EXPECT_EQ(p.encoding, p.device ? spmv_encoding::csr : spmv_encoding::column_blocks);
    for (auto const& p : timed.parts()) {
      if (p.device || p.encoding == spmv_encoding::column_blocks)
        EXPECT_EQ(p.encoding, p.device ? spmv_encoding::csr : spmv_encoding::column_blocks);
      else  // the trial kept what the rule gives without blocks
        EXPECT_EQ(p.encoding, spmv_encoding::csr);
    }
    std::vector<double> y(x.size(), -7.0), want(x.size(), -3.0);
    csr.multiply(x.data(), want.data());
    for (auto* product : {&blocked, &timed}) {
      std::fill(y.begin(), y.end(), -7.0);
      product->multiply(x.data(), y.data());
      EXPECT_TRUE(same_bits(y, want));
      std::fill(y.begin(), y.end(), -7.0);
      product->multiply(x.data(), y.data());  // again: y is zeroed by the product itself
      EXPECT_TRUE(same_bits(y, want));
    }
  }
}

// A device whose memory runs out while the parts before it copy their rows: the error
// reaches the caller once those copies have ended (they read the constructor's staged
// row pointers and chunk bounds, which the unwinding frees: only the sanitizer build
// sees a read of freed memory, since the device buffers' release waits for the copies
// too), and the runtime goes on. The link's 20 ms latency keeps sim0's copies from
// reading their sources until well after sim1's allocation fails.
TEST(SparseMatrix, ADeviceOutOfMemoryFailsTheProductAfterTheCopiesInFlight) {
  strata::runtime rt{strata::runtime_options{.sim_devices = "2:bw=200MB/s,lat=20ms,mem=4MiB"}};
  auto sims = rt.machine().slice(strata::isa::sim).descendants(strata::place_type::device);
  ASSERT_EQ(sims.size(), 2u);
  // sim1 keeps 3.5 MiB for itself; each part of this Laplacian needs 1.6 MB encoded and
  // 3.5 MB as CSR (x, y, row_ptr and the rows), which sim0 has.
  auto hog = strata::allocate<double, strata::sim_space>(sims[1], 7 * 65536);
  auto lap = apps::laplacian_3d(40, 40, 40);
  for (auto format : {apps::spmv_format::automatic, apps::spmv_format::csr}) {
    bool failed = false;
    auto const t0 = std::chrono::steady_clock::now();
    try {
      apps::partitioned_spmv product(lap, apps::places_named(rt.machine(), "sim"), format);
    } catch (strata::out_of_memory const& e) {
      failed = true;
      EXPECT_NE(std::string(e.what()).find("sim1"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(failed);
    // The failure came after sim0's copies had ended: at least their modeled latency.
    // (Also without the constructor's wait, as the buffers' release waits; see above.)
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(20));
  }
  strata::deallocate(hog);
  check_product(apps::laplacian_2d(9, 7), rt.machine());
}

TEST(SparseMatrix, RowsSplitByNonzerosAndShares) {
  auto a = apps::random_power_law(5000, 8, 4);
  auto b = apps::split_rows(a, 0, a.rows, 4);
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b.front(), 0);
  EXPECT_EQ(b.back(), a.rows);
  double total = static_cast<double>(a.nnz() + a.rows);
  for (std::size_t p = 0; p < 4; ++p) {
    EXPECT_LE(b[p], b[p + 1]);
    double w = static_cast<double>(a.row_ptr[static_cast<std::size_t>(b[p + 1])] -
                                   a.row_ptr[static_cast<std::size_t>(b[p])] + b[p + 1] - b[p]);
    // A quarter each, give or take the longest row.
    EXPECT_NEAR(w, total / 4, static_cast<double>(a.rows));
  }
  auto uneven = apps::split_rows(a, 0, a.rows, 2, {3.0, 1.0});
  EXPECT_GT(a.row_ptr[static_cast<std::size_t>(uneven[1])], 2 * a.nnz() / 3);
  EXPECT_THROW((void)apps::split_rows(a, 0, a.rows + 1, 2), strata::invalid_argument);
}

TEST(SparseMatrix, PlaceNamesAreChecked) {
  strata::runtime rt;
  EXPECT_THROW((void)apps::places_named(rt.machine(), "sim"), strata::invalid_argument);
  EXPECT_THROW((void)apps::places_named(rt.machine(), "gpu"), strata::invalid_argument);
  EXPECT_THROW((void)apps::places_named(rt.machine(), "host:0"), strata::invalid_argument);
  EXPECT_THROW((void)apps::places_named(rt.machine(), "host:x"), strata::invalid_argument);
  EXPECT_THROW((void)apps::places_named(rt.machine(), "host@sim"), strata::invalid_argument);
  EXPECT_EQ(apps::places_named(rt.machine(), "host").size(), 1u);
}

}  // namespace
