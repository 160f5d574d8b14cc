// The benchmark harness behind `strata bench` (DESIGN.md, "Benchmarks and their
// contract"): each benchmark compares Strata with the peer a user would otherwise pick,
// both sides in one process, interleaved, keeping the minimum of repeated runs (and their
// spread), and reports one JSON object per comparison after a first line of run metadata
// (docs/bench.md).
#pragma once

#include <strata/strata.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::bench {

/// How repeated timings spread: min, quartiles, median, max over `n` runs.
struct spread {
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0;
  int n = 0;
  static spread of(std::vector<double> samples);
  spread scaled(double k) const { return {min * k, q1 * k, median * k, q3 * k, max * k, n}; }
};

/// One comparison: {"bench", "size", "strata_s", "peer", "peer_s", "ratio", "limit", ...}.
struct result {
  std::string bench;
  std::string variant;  // what Strata ran, e.g. "threads/2" (backend/threads)
  double size = 0;      // problem size in the bench's unit (bytes, launches, elements)
  double strata_s = 0;
  std::string peer;
  double peer_s = 0;
  std::optional<double> limit;  // fraction of the hardware bound reached, where one applies
  std::vector<std::pair<std::string, double>> extra;
  std::string note;  // what a reader must know to compare the sides (e.g. not bit-identical)
  // Spread of each side's timed runs and of the ratio of the runs taken side by side.
  // `context::report` fills them from the `compare` whose minima these figures are, so
  // that benchmarks need not pass them; one left empty is left out of the JSON.
  std::optional<spread> strata_spread, peer_spread, ratio_spread;
  double ratio() const { return peer_s / strata_s; }
};

struct options {
  int repeats = 20;
  bool json = false;
  bool quick = false;     // smaller problems, for smoke tests
  bool progress = true;   // "[k/n] name" lines on stderr (never on stdout: it may be JSON)
  std::string argv_text;  // the command line, for the metadata line
};

class context {
 public:
  context(options o, runtime& rt) : options_(o), rt_(rt) {}
  options const& opts() const noexcept { return options_; }
  runtime& rt() const noexcept { return rt_; }
  /// Thread counts to measure at: 1 and every host PU (e.g. {1, 2}).
  std::vector<int> thread_counts() const;
  /// The place with the first `threads` host PUs.
  place cpus(int threads) const;
  /// Bytes of the largest cache level, summed over its instances (the "last level").
  std::uint64_t last_level_cache() const;
  void report(result const& r);
  /// Says that benchmark `bench` could not run here and why (a JSON line with "skipped").
  void skip(std::string const& bench, std::string const& reason);

 private:
  options options_;
  runtime& rt_;
};

/// Times `strata_side` and `peer_side` alternately `repeats` times after one warm-up run
/// each; returns the minimum seconds of each. Every run's time is kept too (per thread,
/// for the benchmark in progress): `context::report` finds its spread from them.
/// `before_each`, if given, runs before every run, untimed, after the wait for a quiet
/// process (the distributed benchmarks' ranks meet there: each rank waits for quiet on
/// its own, for 5-30 ms, and a run that started while its peer still slept would time
/// the skew).
std::pair<double, double> compare(int repeats, std::function<void()> const& strata_side,
                                  std::function<void()> const& peer_side,
                                  std::function<void()> const& before_each);
std::pair<double, double> compare(int repeats, std::function<void()> const& strata_side,
                                  std::function<void()> const& peer_side);

struct benchmark {
  std::string name;
  std::string description;
  std::function<void(context&)> run;
  // The emulated devices it needs, when not the harness's default (STRATA_SIM_DEVICES
  // overrides both): the runtime is made afresh for it.
  std::string sim_devices;
};

std::vector<benchmark>& registry();

struct registrar {
  registrar(std::string name, std::string description, std::function<void(context&)> run,
            std::string sim_devices = {}) {
    registry().push_back(
        {std::move(name), std::move(description), std::move(run), std::move(sim_devices)});
  }
};

/// The run's metadata as the first JSON line carries it: {"meta": {"strata_version",
/// "commit", "compiler", "flags", "build_type", "date", "host", "libraries", "machine",
/// ...}} (docs/bench.md). `machine` is `strata info`'s text of `rt`'s machine.
std::string metadata_json(runtime& rt, options const& o);

/// Runs benchmark `name` (or every one for "all"); returns false if none matched.
bool run(std::string const& name, options const& o);

}  // namespace strata::bench
