#include "harness.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <thread>

namespace strata::bench {

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
  int level = 0;
  std::uint64_t bytes = 0;
  for (auto const& c : rt_.machine().descendants(place_type::cache)) {
    if (c.info().cache_level > level) {
      level = c.info().cache_level;
      bytes = 0;
    }
    if (c.info().cache_level == level) bytes += c.capacity();
  }
  return bytes;
}

void context::report(result const& r) {
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
    if (!r.note.empty()) j["note"] = r.note;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::string extra;
    for (auto const& [k, v] : r.extra) extra += fmt::format("  {}={:.4g}", k, v);
    std::printf("%-10s %-14s strata %10.3e s   %-22s %10.3e s   ratio %6.3f%s%s\n", r.bench.c_str(),
                r.variant.c_str(), r.strata_s, r.peer.c_str(), r.peer_s, r.ratio(),
                r.limit ? fmt::format("  limit {:.3f}", *r.limit).c_str() : "", extra.c_str());
    if (!r.note.empty()) std::printf("%-10s note: %s\n", "", r.note.c_str());
  }
  std::fflush(stdout);
}

void context::skip(std::string const& bench, std::string const& reason) {
  if (options_.json) {
    nlohmann::ordered_json j;
    j["bench"] = bench;
    j["skipped"] = reason;
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%-10s skipped: %s\n", bench.c_str(), reason.c_str());
  }
  std::fflush(stdout);
}

std::pair<double, double> compare(int repeats, std::function<void()> const& strata_side,
                                  std::function<void()> const& peer_side) {
  using clock = std::chrono::steady_clock;
  auto time = [](auto const& fn) {
    // Let the other side's idle threads stop spinning first (libgomp spins for about a
    // millisecond after a parallel region, Strata's workers for 50 us): a side must not
    // be charged for CPU the other one is still burning.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto t0 = clock::now();
    fn();
    return std::chrono::duration<double>(clock::now() - t0).count();
  };
  time(strata_side);
  time(peer_side);
  double best_strata = std::numeric_limits<double>::infinity(), best_peer = best_strata;
  for (int r = 0; r < repeats; ++r) {
    // Alternate which side goes first so that neither always inherits a warm cache.
    if (r % 2 == 0) {
      best_strata = std::min(best_strata, time(strata_side));
      best_peer = std::min(best_peer, time(peer_side));
    } else {
      best_peer = std::min(best_peer, time(peer_side));
      best_strata = std::min(best_strata, time(strata_side));
    }
  }
  return {best_strata, best_peer};
}

bool run(std::string const& name, options const& o) {
  // The sim benchmarks need emulated devices; STRATA_SIM_DEVICES overrides these.
  runtime_options ro;
  if (!std::getenv("STRATA_SIM_DEVICES")) ro.sim_devices = "4:bw=6GB/s,lat=10us";
  runtime rt(ro);
  context ctx(o, rt);
  bool any = false;
  for (auto const& b : registry())
    if (name == "all" || b.name == name) {
      b.run(ctx);
      any = true;
    }
  return any;
}

}  // namespace strata::bench
