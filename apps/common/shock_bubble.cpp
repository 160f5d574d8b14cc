#include "shock_bubble.hpp"

#include <algorithm>
#include <cmath>

namespace apps {

image schlieren(std::vector<conserved<double>> const& u, strata::index_t rows,
                strata::index_t cols) {
  auto rho = [&](strata::index_t i, strata::index_t j) {
    i = std::clamp<strata::index_t>(i, 0, rows - 1);
    j = std::clamp<strata::index_t>(j, 0, cols - 1);
    return u[static_cast<std::size_t>(i * cols + j)].r;
  };
  std::vector<double> grad(static_cast<std::size_t>(rows * cols));
  double top = 0;
  for (strata::index_t i = 0; i < rows; ++i)
    for (strata::index_t j = 0; j < cols; ++j) {
      double const gx = rho(i, j + 1) - rho(i, j - 1), gy = rho(i + 1, j) - rho(i - 1, j);
      double const g = std::sqrt(gx * gx + gy * gy);
      grad[static_cast<std::size_t>(i * cols + j)] = g;
      top = std::max(top, g);
    }
  image img;
  img.width = static_cast<int>(cols);
  img.height = static_cast<int>(rows);
  img.rgb.resize(static_cast<std::size_t>(rows * cols) * 3);
  for (strata::index_t i = 0; i < rows; ++i)
    for (strata::index_t j = 0; j < cols; ++j) {
      double const s =
          top > 0 ? std::exp(-12.0 * grad[static_cast<std::size_t>(i * cols + j)] / top) : 1;
      auto const v = static_cast<std::uint8_t>(std::lround(255 * s));
      auto* p = img.pixel(static_cast<int>(j), static_cast<int>(rows - 1 - i));
      p[0] = v;
      p[1] = v;
      p[2] = static_cast<std::uint8_t>(std::min(255.0, 40.0 + 215.0 * s));
    }
  return img;
}

}  // namespace apps
