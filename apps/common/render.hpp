// Pictures of the shortest-path app's fields (hybrid-2d-stencil-scheme §7-8 show the Alps
// and their cost field): the terrain hill-shaded, the cost field in colour with iso-cost
// contours, and paths drawn over either; written and read as PNG with libpng.
#pragma once

#include "terrain.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace apps {

/// An 8-bit RGB picture, row-major, 3 bytes per pixel.
struct image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
  std::uint8_t* pixel(int x, int y) { return &rgb[3 * (static_cast<std::size_t>(y) * width + x)]; }
};

/// Writes `img` as an 8-bit RGB PNG; strata::error naming the path on failure.
void write_png(std::string const& path, image const& img);
/// Reads a PNG (any format libpng can expand to 8-bit RGB); strata::error naming the path
/// when it is missing or not a PNG.
image read_png(std::string const& path);

/// The terrain lit from the north-west at 45 degrees over hypsometric tints.
image hillshade(terrain const& t);
/// The cost field coloured from low (dark blue) to high (yellow), unreachable cells grey.
image cost_picture(std::vector<double> const& cost, strata::index_t rows, strata::index_t cols);
/// Darkens the pixels where the cost crosses a multiple of `interval` (iso-cost lines).
void draw_contours(image& img, std::vector<double> const& cost, double interval);
/// Draws the cells of `path` ((row, col) pairs) in the colour r, g, b.
void draw_path(image& img, std::vector<std::pair<strata::index_t, strata::index_t>> const& path,
               std::uint8_t r, std::uint8_t g, std::uint8_t b);

}  // namespace apps
