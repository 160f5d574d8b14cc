#include <strata/error.hpp>
#include <strata/exec/openmp/backend.hpp>
#include <strata/runtime.hpp>

#include "exec/cuda/spin_window.hpp"
#include "exec/exec_state.hpp"
#include "exec/trace_writer.hpp"
#include "log.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace strata {
namespace {

std::atomic<runtime*> live{nullptr};

machine_options from_environment(runtime_options const& options) {
  machine_options m;
  if (auto v = std::getenv("STRATA_TOPOLOGY")) m.topology = v;
  if (auto v = std::getenv("STRATA_SIM_DEVICES")) m.sim_devices = v;
  if (options.topology) {
    m.topology = *options.topology;
    m.topology_source = options.topology_source;
  }
  if (options.sim_devices) {
    m.sim_devices = *options.sim_devices;
    m.sim_devices_source = options.sim_devices_source;
  }
  m.cuda = options.cuda;
  return m;
}

}  // namespace

runtime::runtime(runtime_options const& options) : options_(from_environment(options)) {
  start(options);
}

runtime::runtime(int& argc, char** argv, runtime_options const& options)
    : options_(from_environment({})) {
  // Strata's flags are removed from argv so the program's own parser never sees them.
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto take = [&](std::string_view flag, std::string& value, std::string& source) {
      if (arg.rfind(flag, 0) != 0) return false;
      value = std::string(arg.substr(flag.size()));
      source = std::string(flag.substr(0, flag.size() - 1));
      return true;
    };
    if (take("--strata-topology=", options_.topology, options_.topology_source) ||
        take("--strata-sim-devices=", options_.sim_devices, options_.sim_devices_source))
      continue;
    if (arg.rfind("--strata-", 0) == 0)
      throw config_error("unknown command-line flag \"" + std::string(arg) +
                         "\"; expected --strata-topology=<source> or --strata-sim-devices=<list>");
    argv[kept++] = argv[i];
  }
  if (kept < argc) argv[kept] = nullptr;
  argc = kept;
  auto explicit_options = from_environment(options);
  if (options.topology) {
    options_.topology = explicit_options.topology;
    options_.topology_source = explicit_options.topology_source;
  }
  if (options.sim_devices) {
    options_.sim_devices = explicit_options.sim_devices;
    options_.sim_devices_source = explicit_options.sim_devices_source;
  }
  options_.cuda = options.cuda;
  start(options);
}

void runtime::start(runtime_options const& options) {
  detail::current_log_level();  // a bad STRATA_LOG fails here, not at the first message
  auto const cuda_spin = detail::cuda::spin_window();  // likewise, with or without a GPU
  if (options.cpu_backend) {
    cpu_backend_ = *options.cpu_backend;
  } else if (auto env = std::getenv("STRATA_CPU_BACKEND")) {
    auto b = parse_backend(env);
    if (!b || (*b != backend_id::serial && *b != backend_id::threads && *b != backend_id::openmp))
      throw config_error("STRATA_CPU_BACKEND=\"" + std::string(env) +
                         "\": unknown CPU backend; expected serial, threads or openmp");
    cpu_backend_ = *b;
  }
  if (cpu_backend_ == backend_id::openmp && !detail::openmp_built())
    throw config_error(
        "the default CPU backend is openmp, but this libstrata was built without OpenMP "
        "(STRATA_ENABLE_OPENMP=OFF); expected serial or threads");
  runtime* expected = nullptr;
  if (!live.compare_exchange_strong(expected, this))
    throw error(
        "a strata::runtime is already alive in this process; expected one runtime at a time "
        "(create it once in main and pass places around)");
  try {
    auto found = discover_machine(options_);
    machine_ = std::move(found.machine);
    notes_ = std::move(found.notes);
    if (options.trace)
      trace_path_ = *options.trace;
    else if (auto env = std::getenv("STRATA_TRACE"))
      trace_path_ = env;
    detail::trace_start(trace_path_, options.trace ? "runtime_options::trace" : "STRATA_TRACE");
    exec_ = std::make_unique<detail::exec_state>(machine_, options_.topology.empty());
    exec_->cuda_spin = cuda_spin;
  } catch (...) {
    detail::trace_finish();  // tracing stops with the failed start
    live.store(nullptr);
    throw;
  }
  // "No CUDA device" is what most machines are, not news at every start: debug level
  // (`strata info` and notes() show it). Other notes (a device that failed) are info.
  for (auto const& note : notes_)
    detail::log(
        note.starts_with("no CUDA device") ? detail::log_level::debug : detail::log_level::info,
        note);
}

runtime::~runtime() {
  // Pending work may still launch more work (continuations resolve targets through this
  // runtime): drain while the runtime is whole and current, then join the workers.
  if (exec_) exec_->drain();
  exec_.reset();
  detail::trace_finish();
  live.store(nullptr);
}

runtime& runtime::current() {
  auto* rt = live.load();
  if (!rt)
    throw error("no strata::runtime is alive; expected one created in main (strata::runtime rt;)");
  return *rt;
}

bool runtime::active() noexcept {
  return live.load() != nullptr;
}

void detail::check_runtime_place(place const& p, char const* operation) {
  if (!p.valid())
    throw invalid_argument(std::string(operation) +
                           ": the place is empty (default-constructed); expected a place of "
                           "runtime::machine()");
  if (!p.same_machine(runtime::current().machine()))
    throw invalid_argument(std::string(operation) + ": place '" + p.path() +
                           "' is not part of this runtime's machine; expected a place obtained "
                           "from runtime::machine()");
}

detail::exec_state& detail::current_exec() {
  auto& rt = runtime::current();
  if (!rt.exec_) throw error("the strata::runtime is shutting down; no new work can start");
  return *rt.exec_;
}

}  // namespace strata
