// STRATA_SIM_DEVICES parsing. Every failure names the source, quotes the offending part
// and restates the accepted form: configuration errors are the first thing a user meets.
#include <strata/error.hpp>
#include <strata/machine/sim_config.hpp>

#include "machine/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace strata {
namespace {

constexpr std::uint32_t max_devices = 64;
constexpr std::uint32_t max_units = 256;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    auto at = s.find(sep);
    parts.push_back(trim(s.substr(0, at)));
    if (at == std::string_view::npos) return parts;
    s.remove_prefix(at + 1);
  }
}

std::optional<std::uint32_t> parse_count(std::string_view s) {
  std::uint32_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return value;
}

struct parser {
  std::string_view text;
  std::string_view source;

  [[noreturn]] void fail(std::string const& what) const {
    throw config_error(
        fmt::format("{}=\"{}\": {}. Accepted form: {}", source, text, what, sim_devices_syntax));
  }

  void apply(sim_device_spec& spec, std::string_view key, std::string_view value) const {
    auto bad = [&](char const* expected) {
      fail(fmt::format("{}={} is not valid, expected {}", key, value, expected));
    };
    if (key == "bw") {
      auto v = detail::parse_bandwidth(value);
      if (!v || !(*v >= sim_min_bandwidth))
        bad("a bandwidth with a unit (B/s, KB/s, MB/s, GB/s, GiB/s...) of at least 1B/s");
      spec.bandwidth = *v;
    } else if (key == "lat") {
      auto v = detail::parse_duration(value);
      if (!v || *v < 0 || *v > sim_max_latency)
        bad("a time with a unit (ns, us, ms, s) from 0 to 1e6s");
      spec.latency = *v;
    } else if (key == "speed") {
      auto v = detail::parse_number(value);
      if (!v || !(*v >= sim_min_speed)) bad("a factor of at least 1e-6, such as 0.5 or 2");
      spec.speed = *v;
    } else if (key == "mem") {
      auto v = detail::parse_bytes(value);
      if (!v || *v < 1 || *v > 1.8e19 || *v != std::floor(*v))
        bad("a positive whole number of bytes with a unit (B, KiB, MiB, GiB, MB, GB...)");
      spec.memory = static_cast<std::uint64_t>(*v);
    } else if (key == "units") {
      auto v = parse_count(value);
      if (!v || *v < 1 || *v > max_units)
        bad(fmt::format("a whole number of compute units from 1 to {}", max_units).c_str());
      spec.units = *v;
    } else {
      fail(fmt::format("unknown key \"{}\" (known keys: bw, lat, speed, mem, units)", key));
    }
  }

  std::vector<sim_device_spec> run() const {
    std::vector<sim_device_spec> devices;
    if (trim(text).empty()) return devices;
    for (auto group : split(text, ';')) {
      if (group.empty()) fail("an empty device group (two ';' in a row or a trailing ';')");
      auto colon = group.find(':');
      auto count_text = trim(group.substr(0, colon));
      auto count = parse_count(count_text);
      if (!count) fail(fmt::format("\"{}\" is not a device count", count_text));
      sim_device_spec spec;
      if (colon != std::string_view::npos) {
        std::vector<std::string_view> seen;
        for (auto item : split(group.substr(colon + 1), ',')) {
          auto eq = item.find('=');
          if (item.empty() || eq == std::string_view::npos)
            fail(fmt::format("\"{}\" is not a key=value setting", item));
          auto const key = trim(item.substr(0, eq));
          if (std::find(seen.begin(), seen.end(), key) != seen.end())
            fail(
                fmt::format("\"{}\" is given twice in one device group; expected each key "
                            "at most once",
                            key));
          seen.push_back(key);
          apply(spec, key, trim(item.substr(eq + 1)));
        }
      }
      if (*count > max_devices - devices.size())
        fail(fmt::format("{} devices is more than the {} a process can emulate",
                         std::uint64_t{*count} + devices.size(), max_devices));
      devices.insert(devices.end(), *count, spec);
    }
    return devices;
  }
};

}  // namespace

std::vector<sim_device_spec> parse_sim_devices(std::string_view text, std::string_view source) {
  return parser{text, source}.run();
}

std::string to_string(sim_device_spec const& spec) {
  return fmt::format("bw={},lat={},speed={:g},mem={},units={}",
                     detail::format_bandwidth(spec.bandwidth),
                     detail::format_duration(spec.latency), spec.speed,
                     detail::format_bytes_exact(spec.memory), spec.units);
}

}  // namespace strata
