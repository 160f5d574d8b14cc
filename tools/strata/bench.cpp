#include "commands.hpp"

#include <strata/error.hpp>

#include <nlohmann/json.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness.hpp"

extern char** environ;

namespace strata::cli {

#if STRATA_HAVE_DIST
namespace {
// `--ranks 1,2,4`: the counts to run at, in order. A wrong item is named with what was
// expected, as the other options' errors are (run.cpp turns it into exit 1).
std::vector<int> parse_rank_counts(std::string const& text) {
  auto bad = [&](std::string const& why) {
    return invalid_argument("bench --ranks=\"" + text + "\": " + why +
                            "; expected a rank count from 1 to 1024 or a comma-separated "
                            "list of them, e.g. --ranks 4 or --ranks 1,2,4");
  };
  std::vector<int> counts;
  std::size_t begin = 0;
  for (int item = 1;; ++item) {
    auto const end = std::min(text.find(',', begin), text.size());
    std::string const part = text.substr(begin, end - begin);
    if (part.empty())
      throw bad(text.empty() ? std::string("the list is empty")
                             : "item " + std::to_string(item) + " is empty");
    long value = 0;
    auto const [rest, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec == std::errc::result_out_of_range)
      value = part[0] == '-' ? -1 : 1025;
    else if (ec != std::errc{} || rest != part.data() + part.size())
      throw bad("\"" + part + "\" is not a whole number");
    if (value < 1) throw bad(part + " is not a rank count (at least 1 rank)");
    if (value > 1024) throw bad(part + " is more than 1024 ranks");
    counts.push_back(static_cast<int>(value));
    if (end == text.size()) return counts;
    begin = end + 1;
  }
}

// The same strata-bench command under mpiexec with `ranks` ranks on this machine
// (oversubscribed if it has fewer cores; as root where CI runs so).
template <class Opts>
std::vector<std::string> mpi_command(Opts const& o, int ranks) {
  ::setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 0);
  // For the ranks' metadata line (below): how to run it again includes the rank count.
  ::setenv("STRATA_BENCH_RANKS", std::to_string(ranks).c_str(), 1);
  if (::geteuid() == 0) {
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
    ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  }
  std::vector<char> self(4096);
  auto len = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (len <= 0) throw error("bench --ranks: cannot find this program's path (/proc/self/exe)");
  std::vector<std::string> args{STRATA_MPIEXEC,
                                "-n",
                                std::to_string(ranks),
                                std::string(self.data(), static_cast<std::size_t>(len)),
                                o.name,
                                "--repeats",
                                std::to_string(o.run.repeats)};
  if (o.run.json) args.push_back("--json");
  if (o.run.quick) args.push_back("--quick");
  if (!o.run.progress) args.push_back("--no-progress");
  return args;
}

std::vector<char*> argv_of(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

// `strata bench --ranks N NAME ...`: mpiexec takes this process's place.
template <class Opts>
[[noreturn]] void relaunch_under_mpi(Opts const& o, int ranks) {
  auto args = mpi_command(o, ranks);
  std::fflush(stdout);
  ::execv(STRATA_MPIEXEC, argv_of(args).data());
  throw error(std::string("bench --ranks: could not start ") + STRATA_MPIEXEC + ": " +
              std::strerror(errno));
}

// `strata bench --ranks 1,2,4 NAME ...`: one mpiexec per count, one after the other, each
// writing to this stdout, so that `--json > f.jsonl` holds every count (each run starts
// with its own metadata line). The first run that fails stops the rest.
template <class Opts>
void run_each_rank_count(Opts const& o, std::vector<int> const& counts) {
  for (std::size_t i = 0; i < counts.size(); ++i) {
    auto args = mpi_command(o, counts[i]);
    if (o.run.progress)
      std::fprintf(stderr, "strata bench: --ranks %d (%zu of %zu counts)\n", counts[i], i + 1,
                   counts.size());
    std::fflush(stdout);  // ours before the child's
    std::fflush(stderr);
    pid_t pid = 0;
    if (int rc =
            ::posix_spawn(&pid, STRATA_MPIEXEC, nullptr, nullptr, argv_of(args).data(), environ);
        rc != 0)
      throw error(std::string("bench --ranks: could not start ") + STRATA_MPIEXEC + ": " +
                  std::strerror(rc));
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
      if (errno != EINTR)
        throw error(std::string("bench --ranks: waiting for mpiexec: ") + std::strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      int const code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      auto list = [&](std::size_t from, std::size_t to) {
        std::string text;
        for (std::size_t j = from; j < to; ++j)
          text += (j > from ? "," : "") + std::to_string(counts[j]);
        return text;
      };
      throw error(
          "bench --ranks=\"" + o.ranks + "\": the run at " + std::to_string(counts[i]) +
          " rank(s) failed (exit " + std::to_string(code) + "; its messages are above)" +
          (i > 0 ? "; the runs at " + list(0, i) + " completed" : std::string()) +
          (i + 1 < counts.size() ? "; not run: " + list(i + 1, counts.size()) : std::string()));
    }
  }
}
}  // namespace
#endif

void configure_bench(CLI::App& cmd_app) {
  struct opts {
    std::string name;
    bool list = false;
    bench::options run;
    std::string ranks;  // "4" or "1,2,4"
  };
  auto o = std::make_shared<opts>();
  auto* cmd = &cmd_app;
  auto* name = cmd->add_option("name", o->name, "Benchmark to run, or 'all'");
  cmd->add_flag("--list", o->list,
                "List the benchmarks (with --json: one {\"name\",\"description\"} line each)");
  cmd->add_flag("--json", o->run.json, "One JSON object per comparison");
  cmd->add_option("--repeats", o->run.repeats,
                  "Timed runs per side (the minimum is the figure; the JSON has the spread too)")
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--quick", o->run.quick, "Small problems (a smoke test, not a measurement)");
  cmd->add_flag("!--no-progress", o->run.progress,
                "No \"[k/n] benchmark\" lines on stderr (stdout never has them)");
  CLI::Option* ranks = nullptr;
#if STRATA_HAVE_DIST
  ranks = cmd->add_option("--ranks", o->ranks,
                          "Run under mpiexec with this many ranks (the dist-* benchmarks); "
                          "a comma list (1,2,4) runs each count in turn into one output")
              ->type_name("N[,N...]");
#endif
  cmd->callback([o, name, ranks] {
    if (name->count() > 0 && o->name.empty())
      throw invalid_argument(
          "bench: the benchmark name is empty; expected a name from `strata bench --list` or "
          "'all'");
    // No name lists the benchmarks; under --json as JSON lines, so that a program asking
    // for JSON gets JSON (and a list is never taken for results: no "bench" key). Before
    // --ranks: a list needs no mpiexec (relaunched, it lost --list and failed per rank).
    if (o->list || o->name.empty()) {
      for (auto const& b : bench::registry()) {
        if (o->run.json) {
          nlohmann::ordered_json line{{"name", b.name}, {"description", b.description}};
          std::printf(
              "%s\n",
              line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
        } else {
          std::printf("%-10s %s\n", b.name.c_str(), b.description.c_str());
        }
      }
      return;
    }
#if STRATA_HAVE_DIST
    if (ranks->count() > 0) {
      auto const counts = parse_rank_counts(o->ranks);
      if (counts.size() == 1) return relaunch_under_mpi(*o, counts[0]);
      return run_each_rank_count(*o, counts);
    }
#else
    (void)ranks;
#endif
    // What the metadata line says ran: enough to run it again.
    char const* relaunched = std::getenv("STRATA_BENCH_RANKS");
    o->run.argv_text = "strata bench " +
                       (relaunched ? "--ranks " + std::string(relaunched) + " " : std::string()) +
                       o->name + (o->run.json ? " --json" : "") + (o->run.quick ? " --quick" : "") +
                       " --repeats " + std::to_string(o->run.repeats);
    if (!bench::run(o->name, o->run))
      throw invalid_argument("bench: no benchmark named '" + o->name +
                             "'; see `strata bench --list`");
  });
}

}  // namespace strata::cli
