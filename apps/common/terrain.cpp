#include "terrain.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <utility>

#ifdef STRATA_APPS_HAVE_GDAL
#include <cpl_error.h>
#include <gdal_priv.h>
#include <ogr_spatialref.h>
#endif

namespace apps {

using strata::index_t;

namespace {

[[noreturn]] void fail(std::string const& what) {
  throw strata::invalid_argument(what);
}

/// Voids (-32768 in SRTM) take the mean of their valid neighbours, 0 if none: the path
/// cost over a hole should not see a 32 km cliff.
void fill_voids(terrain& t, std::vector<char> const& is_void) {
  for (index_t i = 0; i < t.rows; ++i)
    for (index_t j = 0; j < t.cols; ++j) {
      auto k = static_cast<std::size_t>(i * t.cols + j);
      if (!is_void[k]) continue;
      double sum = 0;
      int n = 0;
      for (int di = -1; di <= 1; ++di)
        for (int dj = -1; dj <= 1; ++dj) {
          index_t a = i + di, b = j + dj;
          if (a < 0 || b < 0 || a >= t.rows || b >= t.cols) continue;
          auto nk = static_cast<std::size_t>(a * t.cols + b);
          if (is_void[nk]) continue;
          sum += t.z[nk];
          ++n;
        }
      t.z[k] = n ? sum / n : 0.0;
    }
}

/// A splitmix64 stream: the fractal terrain is the same on every machine for one seed.
struct splitmix {
  std::uint64_t s;
  double uniform() {  // in [-1, 1)
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
  }
};

}  // namespace

terrain read_hgt(std::string const& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path + ": cannot open (" + std::strerror(errno) + "); expected an SRTM .hgt tile");
  auto const bytes = static_cast<long long>(in.tellg());
  index_t n = 0;
  double cell = 0;
  if (bytes == 2LL * 1201 * 1201) {
    n = 1201, cell = 90.0;
  } else if (bytes == 2LL * 3601 * 3601) {
    n = 3601, cell = 30.0;
  } else {
    fail(path + ": " + std::to_string(bytes) +
         " bytes is not an SRTM tile; expected 2884802 (1201 x 1201, SRTM3) or 25934402 "
         "(3601 x 3601, SRTM1) big-endian 16-bit samples");
  }
  std::vector<unsigned char> raw(static_cast<std::size_t>(bytes));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(raw.data()), bytes)) fail(path + ": read failed");
  terrain t;
  t.rows = t.cols = n;
  t.cell = cell;
  t.z.resize(static_cast<std::size_t>(n * n));
  std::vector<char> is_void(t.z.size(), 0);
  for (std::size_t k = 0; k < t.z.size(); ++k) {
    auto v =
        static_cast<std::int16_t>(static_cast<std::uint16_t>(raw[2 * k] << 8 | raw[2 * k + 1]));
    is_void[k] = v == -32768;
    t.z[k] = v;
  }
  fill_voids(t, is_void);
  t.what = path + " (SRTM " + std::to_string(n) + "^2)";
  return t;
}

bool hgt_corner(std::string const& path, int& lat, int& lon) {
  auto slash = path.find_last_of('/');
  std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (name.size() < 7) return false;
  auto up = [](char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); };
  char ns = up(name[0]), ew = up(name[3]);
  if ((ns != 'N' && ns != 'S') || (ew != 'E' && ew != 'W')) return false;
  for (int k : {1, 2, 4, 5, 6})
    if (!std::isdigit(static_cast<unsigned char>(name[static_cast<std::size_t>(k)]))) return false;
  lat = std::stoi(name.substr(1, 2)) * (ns == 'S' ? -1 : 1);
  lon = std::stoi(name.substr(4, 3)) * (ew == 'W' ? -1 : 1);
  return true;
}

terrain read_hgt_mosaic(std::vector<std::string> const& paths) {
  if (paths.empty()) fail("read_hgt_mosaic: no tiles given");
  if (paths.size() == 1) return read_hgt(paths[0]);
  std::map<std::pair<int, int>, std::string> at;  // (lat, lon) -> path
  int lat0 = 1000, lat1 = -1000, lon0 = 1000, lon1 = -1000;
  for (auto const& p : paths) {
    int lat = 0, lon = 0;
    if (!hgt_corner(p, lat, lon))
      fail(p + ": a mosaic needs tiles named by their south-west corner, e.g. N45E006.hgt");
    if (!at.emplace(std::pair{lat, lon}, p).second) fail(p + ": the tile is given twice");
    lat0 = std::min(lat0, lat), lat1 = std::max(lat1, lat);
    lon0 = std::min(lon0, lon), lon1 = std::max(lon1, lon);
  }
  auto const tiles_y = lat1 - lat0 + 1, tiles_x = lon1 - lon0 + 1;
  if (static_cast<std::size_t>(tiles_y * tiles_x) != at.size())
    fail("read_hgt_mosaic: " + std::to_string(at.size()) + " tiles do not fill the " +
         std::to_string(tiles_y) + " x " + std::to_string(tiles_x) +
         " degree rectangle they span; expected every tile of it");
  terrain out;
  index_t n = 0;
  for (auto const& [corner, path] : at) {
    terrain t = read_hgt(path);
    if (n == 0) {
      n = t.rows;
      out.cell = t.cell;
      out.rows = (n - 1) * tiles_y + 1;
      out.cols = (n - 1) * tiles_x + 1;
      out.z.assign(static_cast<std::size_t>(out.rows * out.cols), 0.0);
    } else if (t.rows != n) {
      fail(path + ": " + std::to_string(t.rows) + "^2 samples among tiles of " + std::to_string(n) +
           "^2; expected one resolution");
    }
    // North at row 0: the northernmost tiles come first; shared edges are written twice
    // with the same samples.
    index_t const r0 = (lat1 - corner.first) * (n - 1), c0 = (corner.second - lon0) * (n - 1);
    for (index_t i = 0; i < n; ++i)
      std::copy_n(t.z.begin() + static_cast<long>(i * n), n,
                  out.z.begin() + static_cast<long>((r0 + i) * out.cols + c0));
  }
  out.what = std::to_string(at.size()) + " SRTM tiles (" + std::to_string(tiles_y) + " x " +
             std::to_string(tiles_x) + " degrees)";
  return out;
}

bool have_gdal() noexcept {
#ifdef STRATA_APPS_HAVE_GDAL
  return true;
#else
  return false;
#endif
}

terrain read_gdal(std::string const& path) {
#ifdef STRATA_APPS_HAVE_GDAL
  GDALAllRegister();
  CPLErrorReset();
  // Quiet: GDAL would print its own message to stderr; ours names the file and carries it.
  CPLPushErrorHandler(CPLQuietErrorHandler);
  struct unquiet {
    ~unquiet() { CPLPopErrorHandler(); }
  } restore;
  auto* ds = static_cast<GDALDataset*>(GDALOpen(path.c_str(), GA_ReadOnly));
  if (!ds)
    fail(path + ": GDAL cannot open it as a raster (" + CPLGetLastErrorMsg() +
         "); expected a file in a raster format GDAL reads (GeoTIFF, ASCII grid, ...)");
  struct closer {
    GDALDataset* d;
    ~closer() { GDALClose(d); }
  } close{ds};
  if (ds->GetRasterCount() < 1) fail(path + ": no raster band; expected an elevation band");
  terrain t;
  t.rows = ds->GetRasterYSize();
  t.cols = ds->GetRasterXSize();
  if (t.rows < 2 || t.cols < 2)
    fail(path + ": " + std::to_string(t.rows) + " x " + std::to_string(t.cols) +
         " samples; expected at least 2 x 2");
  t.z.resize(static_cast<std::size_t>(t.rows * t.cols));
  auto* band = ds->GetRasterBand(1);
  if (band->RasterIO(GF_Read, 0, 0, static_cast<int>(t.cols), static_cast<int>(t.rows), t.z.data(),
                     static_cast<int>(t.cols), static_cast<int>(t.rows), GDT_Float64, 0, 0,
                     nullptr) != CE_None)
    fail(path + ": GDAL could not read band 1 (" + CPLGetLastErrorMsg() + ")");
  // Voids: the band's no-data value, and NaN or infinite samples (float rasters mark holes
  // with NaN, which no == finds).
  int has_nodata = 0;
  double const nodata = band->GetNoDataValue(&has_nodata);
  std::vector<char> is_void(t.z.size(), 0);
  for (std::size_t k = 0; k < t.z.size(); ++k)
    is_void[k] = !std::isfinite(t.z[k]) || (has_nodata && t.z[k] == nodata);
  fill_voids(t, is_void);
  // Cell size in metres. A geographic raster's spacing is in degrees: its north-south
  // spacing times ~111.32 km (exact in that direction; east-west degrees shrink with
  // latitude, and the solver takes one spacing for both). A projected one's is in its
  // linear unit. Without a reference system: spacings under 1 are taken as degrees.
  double gt[6];
  t.cell = 30.0;
  if (ds->GetGeoTransform(gt) == CE_None) {
    double const dx = std::abs(gt[1]), dy = std::abs(gt[5]) > 0 ? std::abs(gt[5]) : dx;
    OGRSpatialReference const* srs = ds->GetSpatialRef();
    if (srs && srs->IsGeographic())
      t.cell = dy * 111320.0;
    else if (srs && srs->IsProjected())
      t.cell = dx * srs->GetLinearUnits();
    else
      t.cell = dx < 1.0 ? dy * 111320.0 : dx;
  }
  if (!(t.cell > 0) || !std::isfinite(t.cell))
    fail(path + ": cell size " + std::to_string(t.cell) + "; expected a positive spacing");
  t.what = path + " (GDAL " + ds->GetDriverName() + ")";
  return t;
#else
  throw strata::not_supported(path +
                              ": this build has no GDAL (install libgdal-dev and reconfigure); "
                              ".hgt tiles are read without it");
#endif
}

terrain fractal_terrain(index_t rows, index_t cols, std::uint64_t seed, double relief,
                        double cell) {
  if (rows < 2 || cols < 2)
    fail("fractal_terrain: " + std::to_string(rows) + " x " + std::to_string(cols) +
         "; expected at least 2 x 2");
  if (rows > fractal_limit || cols > fractal_limit)
    fail("fractal_terrain: " + std::to_string(rows) + " x " + std::to_string(cols) +
         "; expected at most " + std::to_string(fractal_limit) + " x " +
         std::to_string(fractal_limit) + " (its height field is a power of two plus one square)");
  index_t n = 1;
  while (n + 1 < std::max(rows, cols)) n *= 2;
  index_t const side = n + 1;
  std::vector<double> h(static_cast<std::size_t>(side * side), 0.0);
  auto at = [&](index_t i, index_t j) -> double& {
    return h[static_cast<std::size_t>(i * side + j)];
  };
  splitmix rng{seed};
  for (index_t i : {index_t{0}, n})
    for (index_t j : {index_t{0}, n}) at(i, j) = rng.uniform();
  double amp = 1.0;
  for (index_t step = n; step > 1; step /= 2, amp *= 0.55) {
    index_t const half = step / 2;
    for (index_t i = half; i < side; i += step)  // diamond: square centres
      for (index_t j = half; j < side; j += step)
        at(i, j) = 0.25 * (at(i - half, j - half) + at(i - half, j + half) +
                           at(i + half, j - half) + at(i + half, j + half)) +
                   amp * rng.uniform();
    for (index_t i = 0; i < side; i += half)  // square: edge midpoints
      for (index_t j = (i / half) % 2 == 0 ? half : 0; j < side; j += step) {
        double sum = 0;
        int k = 0;
        if (i >= half) sum += at(i - half, j), ++k;
        if (i + half < side) sum += at(i + half, j), ++k;
        if (j >= half) sum += at(i, j - half), ++k;
        if (j + half < side) sum += at(i, j + half), ++k;
        at(i, j) = sum / k + amp * rng.uniform();
      }
  }
  terrain t;
  t.rows = rows;
  t.cols = cols;
  t.cell = cell;
  t.z.resize(static_cast<std::size_t>(rows * cols));
  double lo = 1e300, hi = -1e300;
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) {
      lo = std::min(lo, at(i, j));
      hi = std::max(hi, at(i, j));
    }
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j)
      t.z[static_cast<std::size_t>(i * cols + j)] =
          std::round((at(i, j) - lo) / (hi > lo ? hi - lo : 1.0) * relief);
  t.what = "fractal terrain " + std::to_string(rows) + " x " + std::to_string(cols) + ", seed " +
           std::to_string(seed);
  return t;
}

terrain downsample(terrain const& t, index_t k) {
  if (k < 1) fail("downsample: step " + std::to_string(k) + "; expected >= 1");
  if (k == 1) return t;
  terrain out;
  out.rows = (t.rows + k - 1) / k;
  out.cols = (t.cols + k - 1) / k;
  out.cell = t.cell * static_cast<double>(k);
  out.z.resize(static_cast<std::size_t>(out.rows * out.cols));
  for (index_t i = 0; i < out.rows; ++i)
    for (index_t j = 0; j < out.cols; ++j)
      out.z[static_cast<std::size_t>(i * out.cols + j)] = t.at(i * k, j * k);
  out.what = t.what + ", every " + std::to_string(k) + "th point";
  return out;
}

}  // namespace apps
