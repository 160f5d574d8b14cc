// strata::runtime: the RAII handle that brings Strata up (Phalanx's initialize()).
//
// It discovers the machine once and will own the backends' shared state (worker pools,
// device queues, MPI) as later layers arrive. One runtime lives at a time per process.
#pragma once

#include <strata/machine/discovery.hpp>
#include <strata/machine/place.hpp>

#include <optional>
#include <string>
#include <vector>

namespace strata {

struct runtime_options {
  /// Overrides STRATA_TOPOLOGY (see machine_options::topology).
  std::optional<std::string> topology;
  /// Overrides STRATA_SIM_DEVICES (see sim_config.hpp for the syntax).
  std::optional<std::string> sim_devices;
  /// Ask the CUDA runtime for GPUs (builds with CUDA only).
  bool cuda = true;
  /// How error messages name the two settings above (e.g. the flag they came from).
  std::string topology_source = "runtime_options::topology";
  std::string sim_devices_source = "runtime_options::sim_devices";
};

class runtime {
 public:
  /// Configuration from the environment (STRATA_TOPOLOGY, STRATA_SIM_DEVICES), then
  /// `options`, which win. Throws `strata::config_error` for malformed settings and
  /// `strata::error` if another runtime is alive.
  explicit runtime(runtime_options const& options = {});
  /// As above, and consumes Strata's own command-line flags from argv
  /// (--strata-topology=..., --strata-sim-devices=...), which win over the environment.
  runtime(int& argc, char** argv, runtime_options const& options = {});
  ~runtime();

  runtime(runtime const&) = delete;
  runtime& operator=(runtime const&) = delete;

  /// The root of the place tree (Phalanx get_global_machine()).
  place machine() const noexcept { return machine_; }
  /// Informational lines from discovery, e.g. why no CUDA device is listed.
  std::vector<std::string> const& notes() const noexcept { return notes_; }
  /// The options discovery actually used (environment and flags applied).
  machine_options const& effective_options() const noexcept { return options_; }

  /// The live runtime; throws `strata::error` when there is none.
  static runtime& current();
  static bool active() noexcept;

 private:
  void start();

  machine_options options_;
  place machine_;
  std::vector<std::string> notes_;
};

}  // namespace strata
