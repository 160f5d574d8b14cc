#include "render.hpp"

#include <png.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

namespace apps {

using strata::index_t;

namespace {

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using file_ptr = std::unique_ptr<std::FILE, file_closer>;

[[noreturn]] void png_fail(png_structp png, png_const_charp message) {
  // libpng's errors longjmp by default; the message is kept and reported by the caller.
  auto* why = static_cast<std::string*>(png_get_error_ptr(png));
  *why = message;
  png_longjmp(png, 1);
}

std::uint8_t to_byte(double v) {
  return static_cast<std::uint8_t>(std::clamp(v, 0.0, 1.0) * 255.0 + 0.5);
}

}  // namespace

void write_png(std::string const& path, image const& img) {
  file_ptr f(std::fopen(path.c_str(), "wb"));
  if (!f) throw strata::error(path + ": cannot create (" + std::strerror(errno) + ")");
  std::string why;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &why, png_fail, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    throw strata::error(path + ": libpng could not start");
  }
  std::vector<png_bytep> rows(static_cast<std::size_t>(img.height));
  for (int y = 0; y < img.height; ++y)
    rows[static_cast<std::size_t>(y)] = const_cast<png_bytep>(
        img.rgb.data() + 3 * static_cast<std::size_t>(y) * static_cast<std::size_t>(img.width));
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw strata::error(path + ": writing the PNG failed: " + why);
  }
  png_init_io(png, f.get());
  png_set_IHDR(png, info, static_cast<png_uint_32>(img.width), static_cast<png_uint_32>(img.height),
               8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_set_rows(png, info, rows.data());
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&png, &info);
}

image read_png(std::string const& path) {
  file_ptr f(std::fopen(path.c_str(), "rb"));
  if (!f) throw strata::error(path + ": cannot open (" + std::strerror(errno) + ")");
  unsigned char sig[8] = {};
  if (std::fread(sig, 1, 8, f.get()) != 8 || png_sig_cmp(sig, 0, 8) != 0)
    throw strata::error(path + ": not a PNG file");
  std::string why;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &why, png_fail, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw strata::error(path + ": libpng could not start");
  }
  image img;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw strata::error(path + ": reading the PNG failed: " + why);
  }
  png_init_io(png, f.get());
  png_set_sig_bytes(png, 8);
  // Any colour type and depth, expanded to 8-bit RGB without alpha.
  png_read_png(png, info,
               PNG_TRANSFORM_STRIP_16 | PNG_TRANSFORM_PACKING | PNG_TRANSFORM_EXPAND |
                   PNG_TRANSFORM_STRIP_ALPHA | PNG_TRANSFORM_GRAY_TO_RGB,
               nullptr);
  img.width = static_cast<int>(png_get_image_width(png, info));
  img.height = static_cast<int>(png_get_image_height(png, info));
  png_bytepp rows = png_get_rows(png, info);
  img.rgb.resize(3 * static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height));
  for (int y = 0; y < img.height; ++y)
    std::memcpy(img.pixel(0, y), rows[y], 3 * static_cast<std::size_t>(img.width));
  png_destroy_read_struct(&png, &info, nullptr);
  return img;
}

image hillshade(terrain const& t) {
  image img{static_cast<int>(t.cols), static_cast<int>(t.rows), {}};
  img.rgb.resize(3 * static_cast<std::size_t>(t.rows * t.cols));
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double z : t.z) lo = std::min(lo, z), hi = std::max(hi, z);
  double const range = hi > lo ? hi - lo : 1.0;
  // Sun from the north-west (azimuth 315 degrees), 45 degrees above the horizon.
  double const sun_x = -std::sqrt(0.5) * std::sqrt(0.5), sun_y = -sun_x, sun_z = std::sqrt(0.5);
  auto z = [&](index_t i, index_t j) {
    return t.at(std::clamp<index_t>(i, 0, t.rows - 1), std::clamp<index_t>(j, 0, t.cols - 1));
  };
  for (index_t i = 0; i < t.rows; ++i)
    for (index_t j = 0; j < t.cols; ++j) {
      // Surface normal from central differences (x east, y north; row 0 is north).
      double const dzdx = (z(i, j + 1) - z(i, j - 1)) / (2 * t.cell);
      double const dzdy = (z(i - 1, j) - z(i + 1, j)) / (2 * t.cell);
      double const norm = std::sqrt(dzdx * dzdx + dzdy * dzdy + 1);
      double light = (-dzdx * sun_x - dzdy * sun_y + sun_z) / norm;
      light = 0.35 + 0.65 * std::max(0.0, light);
      // Hypsometric tint: green lowlands, brown slopes, white summits.
      double const h = (t.at(i, j) - lo) / range;
      double r = 0, g = 0, b = 0;
      if (h < 0.5) {
        double const s = h / 0.5;
        r = 0.25 + 0.35 * s, g = 0.55 - 0.1 * s, b = 0.25 + 0.05 * s;
      } else {
        double const s = (h - 0.5) / 0.5;
        r = 0.6 + 0.4 * s, g = 0.45 + 0.55 * s, b = 0.3 + 0.7 * s;
      }
      auto* p = img.pixel(static_cast<int>(j), static_cast<int>(i));
      p[0] = to_byte(r * light), p[1] = to_byte(g * light), p[2] = to_byte(b * light);
    }
  return img;
}

image cost_picture(std::vector<double> const& cost, index_t rows, index_t cols) {
  image img{static_cast<int>(cols), static_cast<int>(rows), {}};
  img.rgb.resize(3 * static_cast<std::size_t>(rows * cols));
  double hi = 0;
  for (double c : cost)
    if (std::isfinite(c)) hi = std::max(hi, c);
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) {
      double const c = cost[static_cast<std::size_t>(i * cols + j)];
      auto* p = img.pixel(static_cast<int>(j), static_cast<int>(i));
      if (!std::isfinite(c)) {
        p[0] = p[1] = p[2] = 128;
        continue;
      }
      double const s = hi > 0 ? c / hi : 0;  // dark blue -> teal -> yellow
      p[0] = to_byte(0.1 + 0.9 * s * s), p[1] = to_byte(0.1 + 0.8 * s),
      p[2] = to_byte(0.45 + 0.4 * s - 0.75 * s * s);
    }
  return img;
}

void draw_contours(image& img, std::vector<double> const& cost, double interval) {
  if (!(interval > 0)) return;
  auto band = [&](int x, int y) {
    double c = cost[static_cast<std::size_t>(y) * static_cast<std::size_t>(img.width) +
                    static_cast<std::size_t>(x)];
    return std::isfinite(c) ? std::floor(c / interval) : -1.0;
  };
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      double const b = band(x, y);
      bool const edge =
          (x + 1 < img.width && band(x + 1, y) != b) || (y + 1 < img.height && band(x, y + 1) != b);
      if (!edge) continue;
      auto* p = img.pixel(x, y);
      for (int k = 0; k < 3; ++k) p[k] = static_cast<std::uint8_t>(p[k] / 3);
    }
}

void draw_path(image& img, std::vector<std::pair<index_t, index_t>> const& path, std::uint8_t r,
               std::uint8_t g, std::uint8_t b) {
  for (auto [i, j] : path) {
    if (i < 0 || j < 0 || i >= img.height || j >= img.width) continue;
    auto* p = img.pixel(static_cast<int>(j), static_cast<int>(i));
    p[0] = r, p[1] = g, p[2] = b;
  }
}

}  // namespace apps
