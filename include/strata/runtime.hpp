// strata::runtime: the RAII handle that brings Strata up (Phalanx's initialize()).
//
// It discovers the machine once and will own the backends' shared state (worker pools,
// device queues, MPI) as later layers arrive. One runtime lives at a time per process.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/machine/discovery.hpp>
#include <strata/machine/place.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace strata {

namespace detail {
struct exec_state;
exec_state& current_exec();
/// Throws invalid_argument, naming `operation`, unless `p` is a place of the live
/// runtime's machine (a default-constructed place, or one of another machine, is not).
void check_runtime_place(place const& p, char const* operation);
}  // namespace detail

struct runtime_options {
  /// Overrides STRATA_TOPOLOGY (see machine_options::topology).
  std::optional<std::string> topology;
  /// Overrides STRATA_SIM_DEVICES (see sim_config.hpp for the syntax).
  std::optional<std::string> sim_devices;
  /// Ask the CUDA runtime for GPUs (builds with CUDA only).
  bool cuda = true;
  /// The backend for launches on host places that name none; overrides
  /// STRATA_CPU_BACKEND (serial, threads or openmp; threads by default).
  std::optional<backend_id> cpu_backend;
  /// Write a Chrome trace of all kernels, copies and jobs to this file, streamed while the
  /// runtime lives; overrides STRATA_TRACE (see strata/exec/trace.hpp). A file that cannot
  /// be opened fails the runtime's construction (config_error).
  std::optional<std::string> trace;
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

  /// The backend used for host places when a launch names none.
  backend_id default_cpu_backend() const noexcept { return cpu_backend_; }

  /// The live runtime; throws `strata::error` when there is none.
  static runtime& current();
  static bool active() noexcept;

 private:
  void start(runtime_options const& options);
  friend detail::exec_state& detail::current_exec();

  machine_options options_;
  place machine_;
  std::vector<std::string> notes_;
  backend_id cpu_backend_ = backend_id::threads;
  std::string trace_path_;
  std::unique_ptr<detail::exec_state> exec_;
};

}  // namespace strata
