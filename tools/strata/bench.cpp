#include "commands.hpp"

#include <strata/error.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "harness.hpp"

namespace strata::cli {

void add_bench_command(CLI::App& app) {
  struct opts {
    std::string name;
    bool list = false;
    bench::options run;
  };
  auto o = std::make_shared<opts>();
  auto* cmd = app.add_subcommand("bench", "Run a benchmark against its peer (see --list)");
  cmd->add_option("name", o->name, "Benchmark to run, or 'all'");
  cmd->add_flag("--list", o->list, "List the benchmarks");
  cmd->add_flag("--json", o->run.json, "One JSON object per comparison");
  cmd->add_option("--repeats", o->run.repeats, "Timed runs per side (the minimum is kept)")
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--quick", o->run.quick, "Small problems (a smoke test, not a measurement)");
  cmd->callback([o] {
    if (o->list || o->name.empty()) {
      for (auto const& b : bench::registry())
        std::printf("%-10s %s\n", b.name.c_str(), b.description.c_str());
      return;
    }
    if (!bench::run(o->name, o->run))
      throw invalid_argument("bench: no benchmark named '" + o->name +
                             "'; see `strata bench --list`");
  });
}

}  // namespace strata::cli
