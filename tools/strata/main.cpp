// The `strata` command line: `strata info`, `strata bench`, `strata report`, `strata help`.
#include <strata/config.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "build_info.hpp"
#include "commands.hpp"

namespace {

// Every setting Strata reads, for `strata --help` (README.md has the same table; the
// test cli.settings_documented checks both against the sources).
constexpr char const* settings_table = R"(Environment variables and flags:
  STRATA_SIM_DEVICES=N[:k=v,...]  emulated devices, e.g. 2:bw=12GB/s,lat=8us,speed=0.5
  --strata-sim-devices=...        the same, for programs that pass argv to strata::runtime
  STRATA_TOPOLOGY=SOURCE          another machine: synthetic:<hwloc description> or xml:<file>
  --strata-topology=SOURCE        the same, as a program flag
  STRATA_CPU_BACKEND=NAME         backend of host launches that name none: serial, threads
                                  (default) or openmp
  STRATA_HUGE_PAGES=0             host allocations of 8 MiB or more without the
                                  transparent-huge-page advice (default 1: with it)
  STRATA_TRACE=FILE               write a Chrome trace (chrome://tracing, Perfetto) to FILE
  STRATA_LOG=LEVEL                messages on stderr: quiet, info (default) or debug
  STRATA_CUDA_SPIN_US=N           CUDA: how long a GPU's completion worker polls before
                                  it sleeps in the driver (us, default 1000, 0 = no poll)
  STRATA_DIST_IDLE_POLL_US=N      strata::dist: longest sleep (and nap) of the MPI thread (us)
  STRATA_DIST_DIRECT=0            strata::dist: copies, puts, gets and atomics between
                                  ranks on one node as messages, not direct access
                                  (read: process_vm_readv reads for copies, no mapping
                                  of the peers' memory)
  STRATA_DIST_RINGS=0             strata::dist: active messages between ranks on one
                                  node through MPI, not shared-memory rings (default 1)
  STRATA_DIST_FAILURE_GRACE=S     strata::dist: seconds a rank that failed alone waits
                                  for the others before it ends the job (default 10)
  STRATA_SHARE_NODE=0             under mpiexec without binding, every rank sees the whole
                                  node (default: its share of the PUs)
  STRATA_BENCH_LARGE=1            strata bench: also n = 8192 in dist-summa and dist-fft
  STRATA_BENCH_OMP_DEPEND_FANOUT=1  strata bench: run the slow OpenMP depend peer of wide
                                  graph-fanout too
  STRATA_BENCH_RANKS=N            strata bench: set by --ranks for the ranks it starts
                                  (their metadata's command says --ranks N)
  STRATA_PYTHON=PATH              strata report: the Python with matplotlib
  STRATA_REPORT_SCRIPT=PATH       strata report: another plotting script
)";

std::string version_text() {
  std::string backends = "serial threads";
  if (STRATA_ENABLE_OPENMP) backends += " openmp";
  backends += " sim";
  if (STRATA_ENABLE_CUDA) backends += " cuda";
  std::string t = std::string("strata ") + strata::version() + "\n";
  t += "  commit       " + strata::build_info::commit() + "\n";
  t += "  compiler     " + strata::build_info::compiler() + " (" +
       strata::build_info::build_type() + ")\n";
  t += std::string("  backends     ") + backends + "\n";
  t += std::string("  CUDA         ") + STRATA_CONFIG_CUDA + "\n";
  t += std::string("  MPI          ") + STRATA_CONFIG_MPI + "\n";
  t += std::string("  shared libs  ") + STRATA_CONFIG_SHARED + "\n";
  t += std::string("  native arch  ") + STRATA_CONFIG_NATIVE + " (STRATA_NATIVE_ARCH)\n";
  t += std::string("  strata-bench ") + STRATA_CONFIG_BENCH;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Strata: one programming model for a heterogeneous machine", "strata"};
  app.set_version_flag("--version", version_text(), "Print the version and build configuration");
  app.footer(settings_table);
  app.require_subcommand(1);
  strata::cli::add_info_command(app);
  strata::cli::add_bench_command(app);
  strata::cli::add_report_command(app);
  app.add_subcommand("help", "Print this help, or a subcommand's (strata help SUBCOMMAND)");

  // The first argument picks a subcommand; CLI11 alone would answer a wrong one with "A
  // subcommand is required", so a wrong one is named here. `strata help [X]` is
  // `strata [X] --help`.
  std::vector<std::string> names;
  for (auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  std::string expected;
  for (std::size_t k = 0; k < names.size(); ++k)
    expected += (k == 0 ? "" : k + 1 == names.size() ? " or " : ", ") + names[k];
  std::vector<char*> args(argv, argv + argc);
  std::string help_flag = "--help";
  if (argc == 1) {
    std::fprintf(stderr, "strata: a subcommand is required: %s (see strata --help)\n",
                 expected.c_str());
    return static_cast<int>(CLI::ExitCodes::RequiredError);
  }
  auto const known = [&](std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  auto const unknown_subcommand = [&](char const* name) {
    std::fprintf(stderr, "strata: unknown subcommand '%s'; expected %s (see strata --help)\n", name,
                 expected.c_str());
    return static_cast<int>(CLI::ExitCodes::ExtrasError);
  };
  if (argc > 1) {
    std::string_view const first = argv[1];
    if (first == "help") {
      // `strata help X` names X as `strata X` would: a wrong one is not the top-level help.
      if (argc > 2 && !known(argv[2])) return unknown_subcommand(argv[2]);
      args.erase(args.begin() + 1);
      args.insert(args.begin() + (argc > 2 ? 2 : 1), help_flag.data());
    } else if (first.starts_with("-") && first != "-h" && first != "--help" &&
               first != "--version") {
      std::fprintf(stderr,
                   "strata: unknown option '%s'; expected a subcommand (%s) or --help, "
                   "--version\n",
                   argv[1], expected.c_str());
      return static_cast<int>(CLI::ExitCodes::ExtrasError);
    } else if (!first.starts_with("-") && !known(first)) {
      return unknown_subcommand(argv[1]);
    }
  }
  return strata::cli::run(app, static_cast<int>(args.size()), args.data());
}
