// Configuration of emulated `sim` devices (STRATA_SIM_DEVICES).
//
// A sim device is an accelerator emulated on the host: its own memory place, compute
// units, and a link to the host with a bandwidth and latency model. It exists to test and
// plan multi-device code (partitioning, halos, overlap, load balance) on machines without
// GPUs; it is an emulator, not a performance model of any real device.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

struct sim_device_spec {
  double bandwidth = 12e9;            // bytes per second over the host link (`bw`)
  double latency = 8e-6;              // seconds per transfer (`lat`)
  double speed = 1.0;                 // compute speed relative to one host core (`speed`)
  std::uint64_t memory = 1ull << 30;  // bytes of device memory (`mem`)
  std::uint32_t units = 1;            // compute units, i.e. worker threads (`units`)

  bool operator==(sim_device_spec const&) const = default;
};

/// The bounds of the settings: beyond them the emulation's times would overflow (or take
/// longer than any run), so the parser rejects them. sim::set_speed keeps to the same
/// minimum speed.
inline constexpr double sim_min_bandwidth = 1.0;  // bytes per second
inline constexpr double sim_max_latency = 1e6;    // seconds (about 11.6 days)
inline constexpr double sim_min_speed = 1e-6;

/// The accepted form, for messages and docs.
inline constexpr char const* sim_devices_syntax =
    "N[:key=value,...][;N[:key=value,...]...] with keys, each at most once per group, "
    "bw=<bandwidth of at least 1B/s, e.g. 12GB/s>, lat=<time from 0 to 1e6s, e.g. 8us>, "
    "speed=<factor of at least 1e-6, e.g. 0.5>, mem=<whole number of bytes with a unit, "
    "e.g. 4GiB>, units=<compute units, 1-256>; for example \"2\" or "
    "\"2:bw=12GB/s,lat=8us,speed=0.5\"";

/// Parses a device list such as "2" or "2:bw=12GB/s,lat=8us,speed=0.5;1:speed=2". Groups
/// separated by ';' give N devices each with the listed settings (defaults otherwise).
/// An empty text means no devices. Throws `strata::config_error` naming `source` (the
/// variable or option the text came from), what was wrong and the expected form.
std::vector<sim_device_spec> parse_sim_devices(std::string_view text,
                                               std::string_view source = "STRATA_SIM_DEVICES");

/// "bw=12GB/s,lat=8us,speed=1,mem=1GiB,units=1": the spec in the syntax it is parsed from.
std::string to_string(sim_device_spec const& spec);

}  // namespace strata
