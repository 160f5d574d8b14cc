#include "machine/units.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <utility>

namespace strata::detail {
namespace {

using unit_table = std::array<std::pair<std::string_view, double>, 11>;

constexpr unit_table byte_units{{{"B", 1.0},
                                 {"KB", 1e3},
                                 {"MB", 1e6},
                                 {"GB", 1e9},
                                 {"TB", 1e12},
                                 {"KiB", 1024.0},
                                 {"MiB", 1048576.0},
                                 {"GiB", 1073741824.0},
                                 {"TiB", 1099511627776.0},
                                 {"K", 1024.0},
                                 {"M", 1048576.0}}};

// Splits "12.5GB/s" into 12.5 and "GB/s"; the number must be finite.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || !std::isfinite(value)) return std::nullopt;
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return std::pair{value, unit};
}

std::optional<double> scale_bytes(std::string_view unit) {
  for (auto const& [name, factor] : byte_units)
    if (unit == name) return factor;
  return std::nullopt;
}

}  // namespace

std::optional<double> parse_number(std::string_view text) {
  auto parts = split_number(text);
  if (!parts || !parts->second.empty()) return std::nullopt;
  return parts->first;
}

std::optional<long> parse_count(std::string_view text, long lo, long hi) {
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;
  long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < lo || value > hi)
    return std::nullopt;
  return value;
}

std::optional<double> parse_bytes(std::string_view text) {
  auto parts = split_number(text);
  if (!parts) return std::nullopt;
  auto factor = scale_bytes(parts->second);
  if (!factor) return std::nullopt;
  return parts->first * *factor;
}

std::optional<double> parse_bandwidth(std::string_view text) {
  auto parts = split_number(text);
  if (!parts) return std::nullopt;
  auto unit = parts->second;
  if (unit.size() < 3 || unit.substr(unit.size() - 2) != "/s") return std::nullopt;
  auto factor = scale_bytes(unit.substr(0, unit.size() - 2));
  if (!factor) return std::nullopt;
  return parts->first * *factor;
}

std::optional<double> parse_duration(std::string_view text) {
  constexpr std::array<std::pair<std::string_view, double>, 4> units{
      {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}}};
  auto parts = split_number(text);
  if (!parts) return std::nullopt;
  for (auto const& [name, factor] : units)
    if (parts->second == name) return parts->first * factor;
  return std::nullopt;
}

std::string format_bytes(std::uint64_t bytes) {
  constexpr std::array<char const*, 6> names{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  auto value = static_cast<double>(bytes);
  std::size_t u = 0;
  while (value >= 1024.0 && u + 1 < names.size()) {
    value /= 1024.0;
    ++u;
  }
  if (u == 0 || value == std::floor(value)) return fmt::format("{:.0f} {}", value, names[u]);
  return fmt::format("{:.1f} {}", value, names[u]);
}

std::string format_bytes_exact(std::uint64_t bytes) {
  constexpr std::array<char const*, 5> names{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t u = 0;
  while (bytes != 0 && bytes % 1024 == 0 && u + 1 < names.size()) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{}{}", bytes, names[u]);
}

std::string format_bandwidth(double bytes_per_second) {
  constexpr std::array<char const*, 5> names{"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
  std::size_t u = 0;
  while (bytes_per_second >= 1000.0 && u + 1 < names.size()) {
    bytes_per_second /= 1000.0;
    ++u;
  }
  return fmt::format("{:g}{}", bytes_per_second, names[u]);
}

std::string format_duration(double seconds) {
  if (seconds == 0.0) return "0s";
  if (seconds < 1e-6) return fmt::format("{:g}ns", seconds * 1e9);
  if (seconds < 1e-3) return fmt::format("{:g}us", seconds * 1e6);
  if (seconds < 1.0) return fmt::format("{:g}ms", seconds * 1e3);
  return fmt::format("{:g}s", seconds);
}

}  // namespace strata::detail
