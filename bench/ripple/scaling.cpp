// ripple-scaling (ripple-tensors-graphs-scheduling §8, Figures 12-13): the shock-bubble
// Euler solver of apps/common/shock_bubble.hpp split in y over 1, 2, 4 and 8 sim devices,
// strong scaling (a fixed grid, small and large) and weak scaling (cells per device fixed).
// The devices run at speed 0.15 with one unit each: a device's kernel takes 1 / 0.15 times
// the CPU time it used, so eight of them (1.2 cores of demand, leaving the host's graph,
// copies and edge kernels the rest) keep their pace on 2 cores and behave like independent
// accelerators (docs/memory.md; at 0.2 they no longer fit once the model stopped counting
// the pacing's own sleeps, session 57). Efficiency as in the seed:
// strong t1 / (N tN), weak t1 / tN; reported as the ratio against the ideal time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "harness.hpp"
#include "shock_bubble.hpp"

namespace strata::bench {
namespace {

constexpr char const* scaling_devices = "8:speed=0.15,units=1,bw=12GB/s,lat=8us";

std::vector<place> first_sims(context& ctx, std::size_t k) {
  auto devs = ctx.rt().machine().slice(isa::sim).descendants(place_type::device);
  if (devs.size() < k) return {};
  devs.resize(k);
  return devs;
}

// Seconds for `steps` time steps, after one warm-up step.
double solve_time(context& ctx, std::vector<place> const& where, index_t rows, int steps) {
  auto const host = ctx.rt().machine().slice(isa::host);
  apps::shock_bubble<double, aos> s(where, host, rows, static_cast<index_t>(where.size()));
  s.run(1);
  auto const t0 = std::chrono::steady_clock::now();
  s.run(steps);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run_scaling(context& ctx) {
  bool const quick = ctx.opts().quick;
  int const repeats = quick ? 1 : 3;
  auto const counts = std::vector<std::size_t>{1, 2, 4, 8};
  if (first_sims(ctx, 8).empty()) {
    ctx.skip("ripple-scaling", "needs 8 sim devices (it asks for " + std::string(scaling_devices) +
                                   " unless STRATA_SIM_DEVICES says otherwise)");
    return;
  }
  struct problem {
    char const* name;
    index_t rows;  // strong: the grid; weak: rows on one device
    int steps;
    bool weak;
  };
  std::vector<problem> problems =
      quick ? std::vector<problem>{{"strong-small", 32, 4, false}, {"weak", 16, 4, false}}
            : std::vector<problem>{{"strong-small", 768, 6, false},
                                   {"strong-large", 1152, 4, false},
                                   {"weak", 400, 6, true}};
  if (quick) problems[1].weak = true;
  for (auto const& p : problems) {
    // Weak: the grid grows with the devices (rows x 2 rows cells; rows ~ sqrt(k)).
    auto rows_for = [&](std::size_t k) {
      return p.weak ? static_cast<index_t>(
                          std::lround(static_cast<double>(p.rows) * std::sqrt(double(k))))
                    : p.rows;
    };
    // Every device count once per round, `repeats` rounds: a round's efficiency is against
    // its own t1, so that this VM's drift over seconds weighs on t1 and tN alike (as
    // `compare` interleaves its sides). [count][round] seconds.
    std::vector<std::vector<double>> t(counts.size());
    for (int r = 0; r < repeats; ++r)
      for (std::size_t i = 0; i < counts.size(); ++i)
        t[i].push_back(solve_time(ctx, first_sims(ctx, counts[i]), rows_for(counts[i]), p.steps));
    for (std::size_t i = 0; i < counts.size(); ++i) {
      auto const k = counts[i];
      index_t const rows = rows_for(k);
      double const per = p.weak ? 1.0 : static_cast<double>(k);  // ideal tN = t1 / per
      std::vector<double> ideal_t, eff;                          // per round
      for (std::size_t r = 0; r < t[i].size(); ++r) {
        ideal_t.push_back(t[0][r] / per);
        eff.push_back(ideal_t.back() / t[i][r]);
      }
      double const tn = spread::of(t[i]).min, ideal = spread::of(ideal_t).min;
      result res{"ripple-scaling",
                 std::string(p.name) + "/sim" + std::to_string(k),
                 double(rows) * double(2 * rows) * p.steps,
                 tn,
                 p.weak ? "ideal: t1" : "ideal: t1/N",
                 ideal};
      res.strata_spread = spread::of(t[i]);
      res.peer_spread = spread::of(ideal_t);
      res.ratio_spread = spread::of(eff);
      res.extra = {{"devices", double(k)},
                   {"rows", double(rows)},
                   {"cells_per_device", double(rows) * double(2 * rows) / double(k)},
                   {"steps", double(p.steps)},
                   {"rounds", double(repeats)},
                   {"speedup", spread::of(t[0]).min / tn},
                   {"efficiency", ideal / tn}};
      res.note = std::string("ratio = efficiency (") + (p.weak ? "t1 / tN" : "t1 / (N tN)") +
                 ", of the minima over the rounds; ratio_median of the rounds' efficiencies, "
                 "each against its own round's t1); sim devices " +
                 scaling_devices;
      ctx.report(res);
    }
  }
}

registrar scaling_r("ripple-scaling",
                    "shock-bubble Euler solver on 1/2/4/8 slow sim devices: strong (small, "
                    "large grid) and weak scaling efficiency",
                    run_scaling, scaling_devices);

}  // namespace
}  // namespace strata::bench
