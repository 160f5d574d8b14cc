// Parsing and printing of quantities with units: sizes, bandwidths, durations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::detail {

/// A finite number followed by a unit from the table; nullopt when malformed.
std::optional<double> parse_number(std::string_view text);     // no unit
std::optional<double> parse_bytes(std::string_view text);      // B, KB, KiB, MB, MiB, ...
std::optional<double> parse_bandwidth(std::string_view text);  // B/s, KB/s, ..., GiB/s
std::optional<double> parse_duration(std::string_view text);   // ns, us, ms, s
/// Decimal digits only (no sign, no spaces) worth lo..hi; nullopt otherwise. For settings
/// that are a plain count (STRATA_CUDA_SPIN_US, STRATA_DIST_IDLE_POLL_US).
std::optional<long> parse_count(std::string_view text, long lo, long hi);

std::string format_bytes(std::uint64_t bytes);  // "1.5 GiB", "32 KiB", "12 B"
/// The largest binary unit that divides `bytes` exactly: "4GiB", "1536MiB"; parses back.
std::string format_bytes_exact(std::uint64_t bytes);
std::string format_bandwidth(double bytes_per_second);  // "12 GB/s"
std::string format_duration(double seconds);            // "8 us"

}  // namespace strata::detail
