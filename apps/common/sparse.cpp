#include "sparse.hpp"

#include "cli.hpp"

#include <strata/strata.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <string_view>

namespace apps {

double csr_matrix::bytes() const {
  return static_cast<double>(row_ptr.size() * sizeof(csr_index) + col.size() * sizeof(csr_index) +
                             val.size() * sizeof(double));
}

csr_matrix csr_from_triplets(csr_index rows, csr_index cols, std::vector<triplet> entries) {
  if (rows < 0 || cols < 0)
    throw strata::invalid_argument("csr_from_triplets: " + std::to_string(rows) + " x " +
                                   std::to_string(cols) + " is not a matrix size");
  if (entries.size() > static_cast<std::size_t>(std::numeric_limits<csr_index>::max()))
    throw strata::invalid_argument("csr_from_triplets: " + std::to_string(entries.size()) +
                                   " entries; the 32-bit CSR indices hold at most 2^31-1");
  csr_matrix a;
  a.rows = rows;
  a.cols = cols;
  std::vector<std::int64_t> count(static_cast<std::size_t>(rows) + 1, 0);
  for (auto const& e : entries) {
    if (e.row < 0 || e.row >= rows || e.col < 0 || e.col >= cols)
      throw strata::invalid_argument(
          "csr_from_triplets: entry (" + std::to_string(e.row) + ", " + std::to_string(e.col) +
          ") lies outside the " + std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
    ++count[static_cast<std::size_t>(e.row) + 1];
  }
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) count[r + 1] += count[r];
  // Scatter into rows (a counting sort), then sort each row by column and sum duplicates.
  std::vector<std::pair<csr_index, double>> by_row(entries.size());
  {
    auto next = count;
    for (auto const& e : entries)
      by_row[static_cast<std::size_t>(next[static_cast<std::size_t>(e.row)]++)] = {e.col, e.value};
  }
  entries = {};
  a.row_ptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  a.col.reserve(by_row.size());
  a.val.reserve(by_row.size());
  for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
    auto first = by_row.begin() + count[r], last = by_row.begin() + count[r + 1];
    std::sort(first, last, [](auto const& x, auto const& y) { return x.first < y.first; });
    for (auto it = first; it != last; ++it) {
      if (!a.col.empty() && static_cast<std::int64_t>(a.col.size()) > a.row_ptr[r] &&
          a.col.back() == it->first)
        a.val.back() += it->second;
      else {
        a.col.push_back(it->first);
        a.val.push_back(it->second);
      }
    }
    a.row_ptr[r + 1] = static_cast<csr_index>(a.col.size());
  }
  return a;
}

namespace {

// Splits a line into whitespace-separated fields (Matrix Market separates by blanks).
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class mtx_parser {
 public:
  mtx_parser(std::istream& in, std::string name) : in_(in), name_(std::move(name)) {}

  [[noreturn]] void fail(std::string const& what) const {
    throw strata::parse_error(name_ + ":" + std::to_string(line_no_) + ": " + what);
  }

  // The next line that is not a comment or blank; false at the end of the input.
  bool next_data_line(std::vector<std::string_view>& out) {
    while (std::getline(in_, line_)) {
      ++line_no_;
      auto f = fields(line_);
      if (f.empty() || f[0].front() == '%') continue;
      out = std::move(f);
      return true;
    }
    if (in_.bad()) fail("read error");
    return false;
  }

  template <class T>
  T integer(std::string_view s, char const* what) const {
    T v{};
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size())
      fail(std::string("'") + std::string(s) + "' is not " + what);
    return v;
  }

  double real(std::string_view s) const {
    double v{};
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range)
      fail("value '" + std::string(s) + "' is out of the range of a double");
    if (ec != std::errc{} || p != s.data() + s.size())
      fail("'" + std::string(s) + "' is not a real number");
    if (!std::isfinite(v))
      fail("value '" + std::string(s) + "' is not finite; expected a real number");
    return v;
  }

  csr_matrix read(matrix_market_header* header_out) {
    if (!std::getline(in_, line_)) fail("empty file; expected a '%%MatrixMarket' header");
    ++line_no_;
    auto h = fields(line_);
    if (h.empty() || lower(h[0]) != "%%matrixmarket")
      fail("expected the header '%%MatrixMarket matrix coordinate <field> <symmetry>', found '" +
           line_ + "'");
    if (h.size() != 5)
      fail("the header has " + std::to_string(h.size()) +
           " words; expected 5: %%MatrixMarket matrix coordinate <field> <symmetry>");
    if (lower(h[1]) != "matrix")
      fail("object '" + std::string(h[1]) + "' is not supported; expected 'matrix'");
    if (lower(h[2]) != "coordinate")
      fail("format '" + std::string(h[2]) +
           "' is not supported; expected 'coordinate' (a sparse matrix)");
    std::string field = lower(h[3]), symmetry = lower(h[4]);
    if (field == "double") field = "real";
    if (field != "real" && field != "integer" && field != "pattern")
      fail("field '" + std::string(h[3]) +
           "' is not supported; expected real, double, integer or pattern");
    if (symmetry != "general" && symmetry != "symmetric" && symmetry != "skew-symmetric")
      fail("symmetry '" + std::string(h[4]) +
           "' is not supported; expected general, symmetric or skew-symmetric");
    if (header_out) *header_out = {field, symmetry};

    std::vector<std::string_view> f;
    if (!next_data_line(f)) fail("end of file; expected the size line 'rows columns nonzeros'");
    if (f.size() != 3)
      fail("the size line has " + std::to_string(f.size()) +
           " numbers; expected 3: rows columns nonzeros");
    auto const limit = static_cast<std::int64_t>(std::numeric_limits<csr_index>::max());
    auto rows = integer<std::int64_t>(f[0], "a row count");
    auto cols = integer<std::int64_t>(f[1], "a column count");
    auto nnz = integer<std::int64_t>(f[2], "a nonzero count");
    if (rows < 0 || cols < 0 || nnz < 0) fail("negative size; expected rows columns nonzeros >= 0");
    if (rows > limit || cols > limit || nnz > limit)
      fail("size " + std::to_string(rows) + " x " + std::to_string(cols) + " with " +
           std::to_string(nnz) + " nonzeros exceeds the 32-bit CSR indices (2^31-1)");
    if (symmetry != "general" && rows != cols)
      fail("a " + symmetry + " matrix must be square; the size line says " + std::to_string(rows) +
           " x " + std::to_string(cols));

    std::size_t const values = field == "pattern" ? 0 : 1;
    std::vector<triplet> entries;
    // The size line alone does not bound the memory (a file may claim 2e9 entries and
    // hold 3): reserve at most 2^20 up front and let the vector grow with what is read.
    std::int64_t const announced = symmetry == "general" ? nnz : 2 * nnz;
    entries.reserve(static_cast<std::size_t>(std::min<std::int64_t>(announced, 1 << 20)));
    for (std::int64_t k = 0; k < nnz; ++k) {
      if (!next_data_line(f))
        fail("end of file after " + std::to_string(k) + " of the " + std::to_string(nnz) +
             " entries the size line announced");
      if (f.size() != 2 + values)
        fail("entry has " + std::to_string(f.size()) + " fields; expected " +
             (values ? "3: row column value" : "2: row column (a pattern matrix)"));
      auto i = integer<std::int64_t>(f[0], "a row index");
      auto j = integer<std::int64_t>(f[1], "a column index");
      if (i < 1 || i > rows || j < 1 || j > cols)
        fail("entry (" + std::to_string(i) + ", " + std::to_string(j) + ") is outside the " +
             std::to_string(rows) + " x " + std::to_string(cols) + " matrix (indices are 1-based)");
      double v = 1.0;
      if (field == "real") v = real(f[2]);
      if (field == "integer") v = static_cast<double>(integer<std::int64_t>(f[2], "an integer"));
      auto r = static_cast<csr_index>(i - 1), c = static_cast<csr_index>(j - 1);
      if (symmetry != "general" && i < j)
        fail("entry (" + std::to_string(i) + ", " + std::to_string(j) +
             ") lies above the diagonal; a " + symmetry + " file stores the lower triangle only");
      if (symmetry == "skew-symmetric" && i == j)
        fail("diagonal entry (" + std::to_string(i) + ", " + std::to_string(j) +
             ") in a skew-symmetric file; its diagonal is zero and not stored");
      entries.push_back({r, c, v});
      if (symmetry != "general" && r != c)
        entries.push_back({c, r, symmetry == "skew-symmetric" ? -v : v});
    }
    if (next_data_line(f))
      fail("more entries than the " + std::to_string(nnz) + " the size line announced");
    return csr_from_triplets(static_cast<csr_index>(rows), static_cast<csr_index>(cols),
                             std::move(entries));
  }

 private:
  std::istream& in_;
  std::string name_;
  std::string line_;
  std::int64_t line_no_ = 0;
};

}  // namespace

csr_matrix read_matrix_market(std::istream& in, std::string const& name,
                              matrix_market_header* header) {
  return mtx_parser(in, name).read(header);
}

csr_matrix read_matrix_market_file(std::string const& path, matrix_market_header* header) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw strata::parse_error(path + ": is a directory; expected a Matrix Market file");
  std::ifstream in(path);
  if (!in) throw strata::parse_error(path + ": cannot be opened for reading");
  return read_matrix_market(in, path, header);
}

namespace {

csr_index checked_product(std::int64_t n, char const* what) {
  if (n < 1 || n > std::numeric_limits<csr_index>::max())
    throw strata::invalid_argument(std::string(what) + ": " + std::to_string(n) +
                                   " rows; expected 1 to 2^31-1");
  return static_cast<csr_index>(n);
}

}  // namespace

long long generator_limit(std::string const& name) {
  long long const most = std::numeric_limits<csr_index>::max();
  long long n = 1;
  if (name == "laplacian2d") {
    while ((n + 1) * (n + 1) * 5 <= most) ++n;
  } else if (name == "laplacian3d") {
    while ((n + 1) * (n + 1) * (n + 1) * 7 <= most) ++n;
  } else if (name == "power-law") {
    n = most;
  } else {
    throw strata::invalid_argument("generator_limit: '" + name +
                                   "' is not laplacian2d, laplacian3d or power-law");
  }
  return n;
}

csr_matrix laplacian_2d(csr_index nx, csr_index ny) {
  if (nx < 1 || ny < 1)
    throw strata::invalid_argument("laplacian_2d: grid " + std::to_string(nx) + " x " +
                                   std::to_string(ny) + "; expected at least 1 x 1");
  auto n = checked_product(std::int64_t{nx} * ny, "laplacian_2d");
  if (std::int64_t{n} * 5 > std::numeric_limits<csr_index>::max())
    throw strata::invalid_argument("laplacian_2d: too many nonzeros for 32-bit CSR indices");
  csr_matrix a;
  a.rows = a.cols = n;
  a.row_ptr.reserve(static_cast<std::size_t>(n) + 1);
  a.col.reserve(static_cast<std::size_t>(n) * 5);
  a.val.reserve(static_cast<std::size_t>(n) * 5);
  auto add = [&](csr_index c, double v) {
    a.col.push_back(c);
    a.val.push_back(v);
  };
  for (csr_index y = 0; y < ny; ++y)
    for (csr_index x = 0; x < nx; ++x) {
      csr_index r = y * nx + x;
      if (y > 0) add(r - nx, -1);
      if (x > 0) add(r - 1, -1);
      add(r, 4);
      if (x + 1 < nx) add(r + 1, -1);
      if (y + 1 < ny) add(r + nx, -1);
      a.row_ptr.push_back(static_cast<csr_index>(a.col.size()));
    }
  return a;
}

csr_matrix laplacian_3d(csr_index nx, csr_index ny, csr_index nz) {
  if (nx < 1 || ny < 1 || nz < 1)
    throw strata::invalid_argument("laplacian_3d: grid " + std::to_string(nx) + " x " +
                                   std::to_string(ny) + " x " + std::to_string(nz) +
                                   "; expected at least 1 x 1 x 1");
  // nx ny alone fits 62 bits; over the limit it stays over it (no overflow of nx ny nz).
  std::int64_t const plane_rows = std::int64_t{nx} * ny;
  auto n = checked_product(
      plane_rows > std::numeric_limits<csr_index>::max() ? plane_rows : plane_rows * nz,
      "laplacian_3d");
  if (std::int64_t{n} * 7 > std::numeric_limits<csr_index>::max())
    throw strata::invalid_argument("laplacian_3d: too many nonzeros for 32-bit CSR indices");
  csr_matrix a;
  a.rows = a.cols = n;
  a.row_ptr.reserve(static_cast<std::size_t>(n) + 1);
  a.col.reserve(static_cast<std::size_t>(n) * 7);
  a.val.reserve(static_cast<std::size_t>(n) * 7);
  auto add = [&](csr_index c, double v) {
    a.col.push_back(c);
    a.val.push_back(v);
  };
  csr_index const plane = nx * ny;
  for (csr_index z = 0; z < nz; ++z)
    for (csr_index y = 0; y < ny; ++y)
      for (csr_index x = 0; x < nx; ++x) {
        csr_index r = z * plane + y * nx + x;
        if (z > 0) add(r - plane, -1);
        if (y > 0) add(r - nx, -1);
        if (x > 0) add(r - 1, -1);
        add(r, 6);
        if (x + 1 < nx) add(r + 1, -1);
        if (y + 1 < ny) add(r + nx, -1);
        if (z + 1 < nz) add(r + plane, -1);
        a.row_ptr.push_back(static_cast<csr_index>(a.col.size()));
      }
  return a;
}

csr_matrix random_power_law(csr_index n, double average, std::uint64_t seed) {
  if (n < 1) throw strata::invalid_argument("random_power_law: " + std::to_string(n) + " rows");
  if (!(average >= 1.0) || average > n)
    throw strata::invalid_argument("random_power_law: average " + apps::number_text(average) +
                                   " nonzeros per row; expected 1 to the row count " +
                                   std::to_string(n));
  // Pareto row lengths x_min * u^(-1/a) with tail index a = 1.5 have mean x_min * a / (a - 1).
  double const a = 1.5, x_min = average * (a - 1) / a;
  std::vector<triplet> entries;
  entries.reserve(static_cast<std::size_t>(average * n * 1.1));
  for (csr_index r = 0; r < n; ++r) {
    strata::philox4x32 g(seed, static_cast<std::uint64_t>(r));
    double u = strata::uniform_real_nonzero<double>(g);
    double len = std::min<double>(n, std::max(1.0, std::floor(x_min * std::pow(u, -1.0 / a))));
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(len); ++k)
      entries.push_back({r, strata::uniform_int(g, csr_index{0}, n - 1),
                         2.0 * strata::uniform_real<double>(g) - 1.0});
    if (entries.size() > static_cast<std::size_t>(std::numeric_limits<csr_index>::max()))
      throw strata::invalid_argument("random_power_law: too many nonzeros for 32-bit indices");
  }
  return csr_from_triplets(n, n, std::move(entries));
}

void reference_spmv(csr_matrix const& a, double const* x, double* y) {
  for (csr_index r = 0; r < a.rows; ++r) {
    double s = 0;
    for (csr_index k = a.row_ptr[static_cast<std::size_t>(r)];
         k < a.row_ptr[static_cast<std::size_t>(r) + 1]; ++k)
      s += a.val[static_cast<std::size_t>(k)] * x[a.col[static_cast<std::size_t>(k)]];
    y[r] = s;
  }
}

double max_relative_difference(std::vector<double> const& a, std::vector<double> const& b) {
  if (a.size() != b.size())
    throw strata::invalid_argument("max_relative_difference: sizes " + std::to_string(a.size()) +
                                   " and " + std::to_string(b.size()) + " differ");
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    double d = std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i]));
    if (std::isnan(d)) return d;  // a NaN is the worst, whatever follows
    worst = std::max(worst, d);
  }
  return worst;
}

}  // namespace apps
