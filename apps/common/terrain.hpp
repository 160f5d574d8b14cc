// Elevation grids for the shortest-path application (hybrid-2d-stencil-scheme §7: NASA
// SRTM elevations of the Alps): SRTM `.hgt` tiles (one, or several mosaicked), any raster
// GDAL reads (when GDAL was found at configure time), and a seeded synthetic fractal
// terrain so the app runs with no data. Errors are strata::invalid_argument naming the
// file and what was expected.
#pragma once

#include <strata/strata.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace apps {

/// A rows x cols grid of elevations in metres, row-major, north at row 0; `cell` metres
/// between neighbouring points.
struct terrain {
  strata::index_t rows = 0, cols = 0;
  double cell = 30.0;
  std::vector<double> z;
  std::string what;  // where it came from, for output
  double at(strata::index_t i, strata::index_t j) const {
    return z[static_cast<std::size_t>(i * cols + j)];
  }
};

/// One SRTM tile: raw big-endian int16 samples, 1201 x 1201 (3 arc-seconds, ~90 m) or
/// 3601 x 3601 (1 arc-second, ~30 m), rows from north to south. Voids (-32768) take the
/// mean of their valid neighbours (0 if none). A file of any other size is refused.
terrain read_hgt(std::string const& path);

/// Several SRTM tiles named by their south-west corner (N45E006.hgt, s01w072.hgt; any
/// folder), put side by side: neighbouring tiles share their edge row or column, kept
/// once. The tiles must fill a rectangle of whole degrees and have one resolution.
terrain read_hgt_mosaic(std::vector<std::string> const& paths);

/// The tile's south-west corner from its name ("N45E006.hgt" -> 45, 6); false if the
/// name is not in that form.
bool hgt_corner(std::string const& path, int& lat, int& lon);

/// Any raster GDAL opens (GeoTIFF, ASCII grid...), band 1, cell size from its geotransform
/// (degrees taken as ~111 km). not_supported when GDAL was not found at configure time.
terrain read_gdal(std::string const& path);
/// Whether read_gdal works in this build.
bool have_gdal() noexcept;

/// The largest side fractal_terrain makes: 2^14 + 1, whose height field (the next power of
/// two plus one, squared, in doubles) is 2.1 GB.
inline constexpr strata::index_t fractal_limit = (strata::index_t{1} << 14) + 1;

/// A synthetic fractal terrain (diamond-square midpoint displacement with roughness 0.55),
/// rows x cols (each 2 to fractal_limit: strata::invalid_argument otherwise), `relief`
/// metres from lowest to highest point, the same for the same seed.
terrain fractal_terrain(strata::index_t rows, strata::index_t cols, std::uint64_t seed,
                        double relief = 2000.0, double cell = 30.0);

/// Every `k`-th point in both directions (cell size times k): real tiles are 3601^2, more
/// than a few minutes' worth of sweeps on a small machine.
terrain downsample(terrain const& t, strata::index_t k);

}  // namespace apps
