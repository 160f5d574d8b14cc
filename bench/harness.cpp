#include "harness.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include "build_info.hpp"

namespace strata::bench {
namespace {

// The sim benchmarks need emulated devices; STRATA_SIM_DEVICES overrides these.
constexpr char const* default_sim_devices = "4:bw=6GB/s,lat=10us";

// Every run of every `compare` of the benchmark in progress (cleared when the next one
// starts), so that `report` can find the spread behind the minima a result carries.
struct timed_runs {
  std::vector<double> strata, peer;  // side by side: run i of each was taken together
};
thread_local std::vector<timed_runs> runs_of_this_benchmark;

// Linear interpolation between order statistics (numpy's default, "type 7").
double quantile(std::vector<double> const& sorted, double q) {
  double const pos = q * static_cast<double>(sorted.size() - 1);
  auto const lo = static_cast<std::size_t>(std::floor(pos));
  auto const hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

// Under mpiexec every rank runs the benchmarks; only rank 0 speaks.
bool is_rank0() {
  char const* r = std::getenv("OMPI_COMM_WORLD_RANK");
  return !r || std::atoi(r) == 0;
}

// Finds the side whose minimum, times one factor k for both sides, gives the reported
// figures: k = 1 where a result reports the times as measured, 1/launches where it
// reports per-operation times. A side that matches no run (a modelled peer) is constant.
void attach_spread(result& r) {
  auto close = [](double a, double b) { return std::abs(a - b) <= 1e-12 * std::abs(b); };
  for (auto it = runs_of_this_benchmark.rbegin(); it != runs_of_this_benchmark.rend(); ++it) {
    auto const s = spread::of(it->strata), p = spread::of(it->peer);
    bool const s_has = s.n > 0 && s.min > 0, p_has = p.n > 0 && p.min > 0;
    double const ks = s_has ? r.strata_s / s.min : 0, kp = p_has ? r.peer_s / p.min : 0;
    bool use_s = false, use_p = false;
    double k = 1;
    if (s_has && p_has && ks > 0 && close(ks, kp)) {
      use_s = use_p = true;
      k = ks;
    } else if (s_has && r.strata_s == s.min) {
      use_s = true;
    } else if (p_has && r.peer_s == p.min) {
      use_p = true;
    }
    if (!use_s && !use_p) continue;
    std::vector<double> ratios;
    for (std::size_t i = 0; i < std::max(it->strata.size(), it->peer.size()); ++i) {
      double const ts = use_s ? it->strata[i] * k : r.strata_s;
      double const tp = use_p ? it->peer[i] * k : r.peer_s;
      if (ts > 0) ratios.push_back(tp / ts);
    }
    if (use_s) r.strata_spread = s.scaled(k);
    if (use_p) r.peer_spread = p.scaled(k);
    if (!ratios.empty()) r.ratio_spread = spread::of(std::move(ratios));
    return;
  }
}

std::string utc_now() {
  std::time_t const t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// One JSON line: bytes that are not UTF-8 (a host name, the machine's text) become U+FFFD
// rather than an exception.
std::string dumped(nlohmann::ordered_json const& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

spread spread::of(std::vector<double> samples) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  return {samples.front(),         quantile(samples, 0.25), quantile(samples, 0.5),
          quantile(samples, 0.75), samples.back(),          static_cast<int>(samples.size())};
}

std::vector<benchmark>& registry() {
  static std::vector<benchmark> all;
  return all;
}

std::vector<int> context::thread_counts() const {
  int n = static_cast<int>(rt_.machine().slice(isa::host).processors().size());
  return n > 1 ? std::vector<int>{1, n} : std::vector<int>{1};
}

place context::cpus(int threads) const {
  auto pus = rt_.machine().slice(isa::host).processors();
  if (threads >= static_cast<int>(pus.size())) return rt_.machine();
  if (threads == 1) return pus.front();
  auto keep = std::vector<place>(pus.begin(), pus.begin() + threads);
  return rt_.machine().slice(
      [&](place const& p) { return std::find(keep.begin(), keep.end(), p) != keep.end(); });
}

std::uint64_t context::last_level_cache() const {
  return rt_.machine().last_level_cache();
}

void context::report(result const& given) {
  result r = given;
  if (!r.strata_spread && !r.peer_spread) attach_spread(r);
  if (options_.json) {
    nlohmann::ordered_json j;
    j["bench"] = r.bench;
    j["variant"] = r.variant;
    j["size"] = r.size;
    j["strata_s"] = r.strata_s;
    j["peer"] = r.peer;
    j["peer_s"] = r.peer_s;
    j["ratio"] = r.ratio();
    j["limit"] = r.limit ? nlohmann::ordered_json(*r.limit) : nlohmann::ordered_json(nullptr);
    for (auto const& [k, v] : r.extra) j[k] = v;
    // The spread after the fields readers already know, under names of their own.
    auto put = [&](char const* side, std::optional<spread> const& s, char const* unit) {
      if (!s) return;
      j[fmt::format("{}_q1{}", side, unit)] = s->q1;
      j[fmt::format("{}_median{}", side, unit)] = s->median;
      j[fmt::format("{}_q3{}", side, unit)] = s->q3;
      j[fmt::format("{}_max{}", side, unit)] = s->max;
    };
    put("strata", r.strata_spread, "_s");
    put("peer", r.peer_spread, "_s");
    if (r.ratio_spread) {
      j["ratio_min"] = r.ratio_spread->min;  // `ratio` itself is of the two minima
      put("ratio", r.ratio_spread, "");
      j["repeats"] = r.ratio_spread->n;
    }
    if (!r.note.empty()) j["note"] = r.note;
    std::printf("%s\n", dumped(j).c_str());
  } else {
    std::string extra;
    for (auto const& [k, v] : r.extra) extra += fmt::format("  {}={:.4g}", k, v);
    std::string median;
    if (r.ratio_spread && r.ratio_spread->n > 1)
      median = fmt::format("  median {:.3f} [{:.3f}, {:.3f}]", r.ratio_spread->median,
                           r.ratio_spread->q1, r.ratio_spread->q3);
    std::printf("%-10s %-14s strata %10.3e s   %-22s %10.3e s   ratio %6.3f%s%s%s\n",
                r.bench.c_str(), r.variant.c_str(), r.strata_s, r.peer.c_str(), r.peer_s, r.ratio(),
                median.c_str(), r.limit ? fmt::format("  limit {:.3f}", *r.limit).c_str() : "",
                extra.c_str());
    if (!r.note.empty()) std::printf("%-10s note: %s\n", "", r.note.c_str());
  }
  std::fflush(stdout);
}

void context::skip(std::string const& bench, std::string const& reason) {
  if (options_.json) {
    nlohmann::ordered_json j;
    j["bench"] = bench;
    j["skipped"] = reason;
    std::printf("%s\n", dumped(j).c_str());
  } else {
    std::printf("%-10s skipped: %s\n", bench.c_str(), reason.c_str());
  }
  std::fflush(stdout);
}

namespace {

double process_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// Waits until the other side's idle threads have stopped spinning, so that a side is not
// charged for CPU the other one still burns: libgomp's threads spin for several
// milliseconds after a parallel region (about 7 ms on the 2-core VM: 300,000 pauses),
// Strata's workers for 50 us. At least 5 ms, then until a 5 ms window in which this
// process used under 0.5 ms of CPU (the kernel accounts other threads' CPU per tick, up to
// 4 ms, so shorter windows can miss a spinning thread), at most 30 ms (an MPI progress
// thread may poll all along).
void quiesce() {
  using clock = std::chrono::steady_clock;
  auto const give_up = clock::now() + std::chrono::milliseconds(30);
  double before = process_cpu_ns();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    double const after = process_cpu_ns();
    if (after - before < 0.5e6 || clock::now() > give_up) return;
    before = after;
  }
}

}  // namespace

std::pair<double, double> compare(int repeats, std::function<void()> const& strata_side,
                                  std::function<void()> const& peer_side,
                                  std::function<void()> const& before_each) {
  using clock = std::chrono::steady_clock;
  auto time = [&before_each](auto const& fn) {
    quiesce();
    if (before_each) before_each();
    auto t0 = clock::now();
    fn();
    return std::chrono::duration<double>(clock::now() - t0).count();
  };
  time(strata_side);
  time(peer_side);
  timed_runs runs;
  runs.strata.resize(static_cast<std::size_t>(repeats));
  runs.peer.resize(static_cast<std::size_t>(repeats));
  for (std::size_t r = 0; r < runs.strata.size(); ++r) {
    // Alternate which side goes first so that neither always inherits a warm cache.
    if (r % 2 == 0) {
      runs.strata[r] = time(strata_side);
      runs.peer[r] = time(peer_side);
    } else {
      runs.peer[r] = time(peer_side);
      runs.strata[r] = time(strata_side);
    }
  }
  double const best_strata = *std::min_element(runs.strata.begin(), runs.strata.end());
  double const best_peer = *std::min_element(runs.peer.begin(), runs.peer.end());
  runs_of_this_benchmark.push_back(std::move(runs));
  return {best_strata, best_peer};
}

std::pair<double, double> compare(int repeats, std::function<void()> const& strata_side,
                                  std::function<void()> const& peer_side) {
  return compare(repeats, strata_side, peer_side, {});
}

std::string metadata_json(runtime& rt, options const& o) {
  nlohmann::ordered_json m;
  m["format"] = 2;  // 1: the lines without metadata and spread (before this line existed)
  m["strata_version"] = build_info::strata_version();
  m["commit"] = build_info::commit();
  m["compiler"] = build_info::compiler();
  m["build_type"] = build_info::build_type();
  m["flags"] = build_info::cxx_flags() + " " + STRATA_BENCH_FLAGS;
  m["date"] = utc_now();
  m["host"] = hostname();
  m["command"] = o.argv_text;
  m["repeats"] = o.repeats;
  m["quick"] = o.quick;
  char const* sim = std::getenv("STRATA_SIM_DEVICES");
  m["sim_devices"] = sim ? sim : default_sim_devices;
  auto& libs = m["libraries"] = nlohmann::ordered_json::object();
  // "name version|name version" from configure (bench/CMakeLists.txt).
  std::string const all = STRATA_BENCH_LIBRARIES;
  for (std::size_t at = 0; at < all.size();) {
    auto end = std::min(all.find('|', at), all.size());
    auto item = all.substr(at, end - at);
    auto space = item.find(' ');
    if (space != std::string::npos) libs[item.substr(0, space)] = item.substr(space + 1);
    at = end + 1;
  }
  m["machine"] = to_text(rt.machine());
  nlohmann::ordered_json line;
  line["meta"] = std::move(m);
  return dumped(line);
}

bool run(std::string const& name, options const& o) {
  std::vector<benchmark const*> chosen;
  for (auto const& b : registry())
    if (name == "all" || b.name == name) chosen.push_back(&b);
  if (chosen.empty()) return false;
  // One runtime for every benchmark that takes the default devices; one of its own for a
  // benchmark that names others (made when it comes, the previous one ended first).
  bool const from_env = std::getenv("STRATA_SIM_DEVICES") != nullptr;
  auto devices_for = [&](benchmark const& b) {
    return from_env ? std::string() : b.sim_devices.empty() ? default_sim_devices : b.sim_devices;
  };
  std::string current = devices_for(*chosen.front());
  auto make = [&](std::string const& devices) {
    runtime_options ro;
    if (!from_env) ro.sim_devices = devices;
    return std::make_unique<runtime>(ro);
  };
  auto rt_owned = make(current);
  auto ctx = std::make_unique<context>(o, *rt_owned);
  bool const speak = is_rank0();
  if (o.json && speak) std::printf("%s\n", metadata_json(*rt_owned, o).c_str());
  using clock = std::chrono::steady_clock;
  auto const start = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    // Progress goes to stderr, flushed per line: stdout may be JSON read by a program.
    if (o.progress && speak)
      std::fprintf(stderr, "strata bench: [%zu/%zu] %s (%.1f s elapsed)\n", k + 1, chosen.size(),
                   chosen[k]->name.c_str(), elapsed());
    runs_of_this_benchmark.clear();
    if (auto const want = devices_for(*chosen[k]); want != current) {
      ctx.reset();
      rt_owned.reset();
      rt_owned = make(want);
      ctx = std::make_unique<context>(o, *rt_owned);
      current = want;
    }
    chosen[k]->run(*ctx);
  }
  runs_of_this_benchmark.clear();
  if (o.progress && speak)
    std::fprintf(stderr, "strata bench: %zu benchmark%s in %.1f s\n", chosen.size(),
                 chosen.size() == 1 ? "" : "s", elapsed());
  return true;
}

}  // namespace strata::bench
