#include "commands.hpp"

#include <strata/error.hpp>

#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness.hpp"

namespace strata::cli {

#if STRATA_HAVE_DIST
namespace {
// `strata bench --ranks N NAME ...`: the same strata-bench command under mpiexec, N ranks on this
// machine (oversubscribed if it has fewer cores; as root where CI runs so).
template <class Opts>
[[noreturn]] void relaunch_under_mpi(Opts const& o) {
  ::setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
  if (::geteuid() == 0) {
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  std::vector<char> self(4096);
  auto len = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (len <= 0) throw error("bench --ranks: cannot find this program's path (/proc/self/exe)");
  std::vector<std::string> args{STRATA_MPIEXEC,
                                "-n",
                                std::to_string(o.ranks),
                                std::string(self.data(), static_cast<std::size_t>(len)),
                                o.name,
                                "--repeats",
                                std::to_string(o.run.repeats)};
  if (o.run.json) args.push_back("--json");
  if (o.run.quick) args.push_back("--quick");
  if (!o.run.progress) args.push_back("--no-progress");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(STRATA_MPIEXEC, argv.data());
  throw error(std::string("bench --ranks: could not start ") + STRATA_MPIEXEC + ": " +
              std::strerror(errno));
}
}  // namespace
#endif

void configure_bench(CLI::App& cmd_app) {
  struct opts {
    std::string name;
    bool list = false;
    bench::options run;
    int ranks = 0;
  };
  auto o = std::make_shared<opts>();
  auto* cmd = &cmd_app;
  cmd->add_option("name", o->name, "Benchmark to run, or 'all'");
  cmd->add_flag("--list", o->list, "List the benchmarks");
  cmd->add_flag("--json", o->run.json, "One JSON object per comparison");
  cmd->add_option("--repeats", o->run.repeats,
                  "Timed runs per side (the minimum is the figure; the JSON has the spread too)")
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--quick", o->run.quick, "Small problems (a smoke test, not a measurement)");
  cmd->add_flag("!--no-progress", o->run.progress,
                "No \"[k/n] benchmark\" lines on stderr (stdout never has them)");
#if STRATA_HAVE_DIST
  cmd->add_option("--ranks", o->ranks,
                  "Run under mpiexec with this many ranks (the dist-* benchmarks)")
      ->check(CLI::Range(1, 1024));
#endif
  cmd->callback([o] {
#if STRATA_HAVE_DIST
    if (o->ranks > 0) return relaunch_under_mpi(*o);
#endif
    if (o->list || o->name.empty()) {
      for (auto const& b : bench::registry())
        std::printf("%-10s %s\n", b.name.c_str(), b.description.c_str());
      return;
    }
    // What the metadata line says ran: enough to run it again.
    o->run.argv_text = "strata bench " + o->name + (o->run.json ? " --json" : "") +
                       (o->run.quick ? " --quick" : "") + " --repeats " +
                       std::to_string(o->run.repeats);
    if (!bench::run(o->name, o->run))
      throw invalid_argument("bench: no benchmark named '" + o->name +
                             "'; see `strata bench --list`");
  });
}

}  // namespace strata::cli
