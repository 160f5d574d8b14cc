#include "commands.hpp"

#include <strata/error.hpp>
#include <strata/machine.hpp>
#include <strata/runtime.hpp>
#if STRATA_HAVE_DIST
#include <strata/dist/runtime.hpp>
#endif

#include <cstdio>
#include <memory>
#include <string>

namespace strata::cli {
namespace {

struct info_options {
  bool json = false;
  bool flat = false;
  std::string slice;
  std::string sim_devices;
  std::string topology;
};

place apply_slice(place const& machine, std::string const& by) {
  if (by.empty()) return machine;
  if (auto k = parse_place_kind(by)) return machine.slice(*k);
  if (auto a = parse_isa(by)) return machine.slice(*a);
  throw invalid_argument("--slice " + by +
                         ": unknown filter; expected a kind (processor, memory, group) or an "
                         "isa (host, cuda, sim)");
}

void run(info_options const& o) {
  runtime_options ro{.topology_source = "--topology", .sim_devices_source = "--sim-devices"};
  if (!o.sim_devices.empty()) ro.sim_devices = o.sim_devices;
  if (!o.topology.empty()) ro.topology = o.topology;
  runtime rt(ro);
#if STRATA_HAVE_DIST
  // Under mpiexec: the whole cluster (every rank's machine), printed once by rank 0.
  if (dist::launched_by_mpi()) {
    dist::runtime cluster(rt);
    if (cluster.rank() != 0) return;
    auto shown = apply_slice(cluster.cluster(), o.slice);
    auto text = o.json ? to_json(shown, rt.notes()) + "\n" : to_text(shown, {.collapse = !o.flat});
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
#endif
  auto shown = apply_slice(rt.machine(), o.slice);
  auto text = o.json ? to_json(shown, rt.notes()) + "\n" : to_text(shown, {.collapse = !o.flat});
  // What discovery found missing (e.g. no CUDA device, and why): said here, where the
  // machine is asked about, rather than by every program at start.
  if (!o.json)
    for (auto const& note : rt.notes()) text += "Note: " + note + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto opts = std::make_shared<info_options>();
  auto* cmd = app.add_subcommand("info", "Print this machine's place tree (like lstopo)");
  cmd->add_flag("--json", opts->json, "Print JSON for programs instead of text");
  cmd->add_flag("--flat", opts->flat, "One place per line (no '+' chains)");
  cmd->add_option("--slice", opts->slice,
                  "Show a filtered tree: processor, memory, group, host, cuda or sim");
  cmd->add_option("--sim-devices", opts->sim_devices,
                  "Emulated devices, overriding STRATA_SIM_DEVICES (e.g. 2:bw=12GB/s)");
  cmd->add_option("--topology", opts->topology,
                  "Describe another machine: synthetic:<hwloc description> or xml:<file>");
  cmd->callback([opts] { run(*opts); });
}

}  // namespace strata::cli
