// The hybrid 2-D stencil scheme (hybrid-2d-stencil-scheme §8):
// - hybrid-jacobi: Jacobi sweeps on the host alone (against a hand-written OpenMP Jacobi),
//   then on the host plus 1 and 2 sim devices with cut lines from each device's measured
//   speed, against the ideal: the sum of the devices' single-device throughputs (ratio =
//   achieved / ideal; ratio_without_early_corpus: the same with hybrid_options::
//   early_corpus off, every iteration's kernels launched after the last one ended); and dynamic
//   re-partitioning (§9): a sim device's speed halves mid-run, and the throughput 50 iterations
//   later is compared with the ideal at the new speeds (and with the same run at static cuts, and
//   at cuts re-calibrated from scratch). Both again as `paced/...`: the host strip on one PU and
//   the sim devices paced at a quarter of their speed, so that the devices compute side by side
//   (not on the same cores) and the ideal is reachable on a 2-core machine. The mixes and
//   the single-device runs behind their ideal are solved in turns (report_paired_mixes).
// - hybrid-shortest-path: the 8-neighbour path cost on a synthetic terrain over the host
//   and a sim device, with and without change flags: frontier bytes sent and time; and 30
//   sweeps on the host strip (one PU) with 1 and 2 paced sim devices at calibrated cuts
//   against the ideal, and re-partitioning after a device's speed halves, as
//   hybrid-jacobi's paced rows.
// Both run on their own two sim devices of different speeds and links (hybrid_devices)
// unless STRATA_SIM_DEVICES names others.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "stencil_kernels.hpp"
#include "tensor/peer.hpp"

namespace strata::bench {
namespace {

// The cell updates are the apps' (apps/common/stencil_kernels.hpp): one source for the
// apps, their tests and these benchmarks.
using apps::jacobi_update;
using apps::path_update;

// Two sim devices that differ as a machine's accelerators do (issue 16: "different speeds
// and link bandwidths"): sim0 at full speed on a 12 GB/s, 8 us link; sim1 at 0.7 of it on
// a 4 GB/s, 15 us link. The calibrated cuts then differ per device, and the slower link
// carries the same frontier rows at a third of the bandwidth.
constexpr char const* hybrid_devices = "1:bw=12GB/s,lat=8us;1:bw=4GB/s,lat=15us,speed=0.7";

/// What the results' notes say of the sim devices: the harness uses STRATA_SIM_DEVICES
/// instead of hybrid_devices when it is set.
std::string devices_note() {
  char const* env = std::getenv("STRATA_SIM_DEVICES");
  return env ? "sim devices from STRATA_SIM_DEVICES=" + std::string(env)
             : "sim devices " + std::string(hybrid_devices) + " (paced: 0.25 and 0.175)";
}

std::vector<place> sims(context& ctx) {
  return ctx.rt().machine().slice(isa::sim).descendants(place_type::device);
}

/// Sim devices at a quarter of their own speeds while it lives (0.25 and 0.175 with
/// `hybrid_devices`): a paced sim kernel sleeps out
/// most of its modelled time (docs/memory.md), so a host strip on one PU and two such
/// devices compute side by side on 2 cores, as a CPU and two accelerators do.
struct paced {
  std::vector<place> devs;
  std::vector<double> speeds;
  explicit paced(std::vector<place> d) : devs(std::move(d)) {
    for (auto const& p : devs) {
      speeds.push_back(sim::speed(p));
      sim::set_speed(p, speeds.back() / 4);
    }
  }
  paced(paced const&) = delete;
  paced& operator=(paced const&) = delete;
  ~paced() {
    for (std::size_t i = 0; i < devs.size(); ++i) sim::set_speed(devs[i], speeds[i]);
  }
};

/// The shortest path's synthetic terrain (elevations in m) on an n x n grid.
std::vector<double> path_terrain(index_t n) {
  std::vector<double> z(static_cast<std::size_t>(n * n));
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j)
      z[static_cast<std::size_t>(i * n + j)] =
          300.0 * std::sin(0.02 * static_cast<double>(i)) *
              std::cos(0.03 * static_cast<double>(j)) +
          50.0 * std::sin(0.11 * static_cast<double>(i + 2 * j));
  return z;
}

/// Dynamic re-partitioning (§9) on host + 2 sim devices at calibrated cuts (`alone`, the
/// calibration's speeds): sim device 2's speed halves after iteration `change`; the
/// throughput over iterations change+31 .. change+50 (recovered within 50 iterations)
/// against the ideal at the new speeds (the sum of single-device throughputs, the slowed
/// device measured alone at its new speed), against the same run with static cuts, and
/// against cuts calibrated afresh. In rounds, as report_paired_mixes: each round measures
/// every device alone (the ideal before and after the change), then makes the run, the
/// run at static cuts and the run at fresh cuts. `solve(h, sweeps)` sets the start state
/// and runs that many sweeps of `bench`'s update (a hybrid_result); `boundary` is its
/// grid's boundary value.
template <class Solve>
void run_rebalance(context& ctx, char const* bench, std::vector<place> const& all,
                   std::vector<double> alone, index_t n, double boundary, Solve&& solve,
                   std::string const& variant, std::string const& setting) {
  bool const quick = ctx.opts().quick;
  int const rounds = quick ? 1 : 3;
  long const change = quick ? 10 : 30, after_change = 50, window = quick ? 5 : 20;
  long const total = change + after_change;
  auto const slowed = all.back();
  double const speed0 = sim::speed(slowed);
  struct restore {
    place p;
    double s;
    ~restore() { sim::set_speed(p, s); }
  } restore_speed{slowed, speed0};
  double const cells = double(n * n);
  // One device alone: cells per second over 10 sweeps, after 2 to warm up.
  auto alone_speed = [&](place const& d) {
    hybrid_stencil<double> h({n, n}, {.devices = {d}, .boundary = boundary});
    solve(h, 2);
    return cells * 10.0 / solve(h, 10).seconds;
  };
  // One run: per-iteration seconds, the speed halving after iteration `change`.
  auto run = [&](bool rebalance, std::vector<double> weights, std::vector<index_t>& cuts_after,
                 long& repartitions, std::vector<double>* per_iteration = nullptr) {
    std::vector<double> secs;
    hybrid_stencil<double> h({n, n}, {.devices = all,
                                      .weights = std::move(weights),
                                      .boundary = boundary,
                                      .rebalance = rebalance,
                                      // At 1024^2-2048^2 a strip's time is nearly proportional to
                                      // its rows: move all the way, but only past a 25% gap
                                      // (the host and the sim devices share 2 cores, so
                                      // the times are noisy) and every 10 iterations.
                                      .rebalance_every = 10,
                                      .rebalance_threshold = 0.25,
                                      .rebalance_damping = 1.0,
                                      .on_iteration = [&](hybrid_progress const& p) {
                                        secs.push_back(p.seconds);
                                        if (p.iteration == change)
                                          sim::set_speed(slowed, speed0 / 2);
                                      }});
    auto r = solve(h, total);
    sim::set_speed(slowed, speed0);
    if (r.iterations != total) throw std::runtime_error(std::string(bench) + ": stopped early");
    cuts_after = h.cuts();
    repartitions = r.repartitions;
    if (per_iteration) *per_iteration = secs;
    auto sum = [&](long first, long count) {  // iterations first+1 .. first+count
      double t = 0;
      for (long k = first; k < first + count; ++k) t += secs[static_cast<std::size_t>(k)];
      return t;
    };
    return std::pair{sum(change - window, window), sum(total - window, window)};
  };
  double const work = cells * double(window);
  std::vector<index_t> cuts_dyn, cuts_static, cuts_fresh;
  long reparts = 0, none = 0;
  double alone_slowed = 0;
  // Per round: the window's seconds before and after the change, and the ideal's.
  std::vector<double> before_dyn, after_dyn, ideal_before_t, ideal_after_t, ratios;
  std::vector<double> after_static, fresh;  // the comparisons, per round too
  // Per round: iterations after the change until the throughput over the next `span`
  // iterations first reaches 0.85 of the ideal at the new speeds (the goal: within
  // 50); after_change + 1 if it never does.
  long const span = quick ? 3 : 10;
  std::vector<double> recovered_after;
  for (int r = 0; r < rounds; ++r) {
    double ideal_before = 0, ideal_after = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      double const v = alone_speed(all[i]);
      ideal_before += v;
      if (i + 1 < all.size()) ideal_after += v;
    }
    sim::set_speed(slowed, speed0 / 2);
    alone_slowed = alone_speed(slowed);
    sim::set_speed(slowed, speed0);
    ideal_after += alone_slowed;
    std::vector<double> secs;
    auto [before, after] = run(true, alone, cuts_dyn, reparts, &secs);
    {
      double const goal = 0.85 * ideal_after / cells;  // iterations per second
      long k = 0;
      for (; k + span <= after_change; ++k) {
        double t = 0;
        for (long i = 0; i < span; ++i) t += secs[static_cast<std::size_t>(change + k + i)];
        if (double(span) / t >= goal) break;
      }
      recovered_after.push_back(double(k + span <= after_change ? k : after_change + 1));
    }
    before_dyn.push_back(before);
    after_dyn.push_back(after);
    ideal_before_t.push_back(work / ideal_before);
    ideal_after_t.push_back(work / ideal_after);
    ratios.push_back(ideal_after_t.back() / after);
    after_static.push_back(run(false, alone, cuts_static, none).second);
    // Cuts calibrated afresh for the new speeds, the device slowed from the start.
    auto alone_new = alone;
    alone_new.back() = alone_slowed;
    sim::set_speed(slowed, speed0 / 2);
    {
      hybrid_stencil<double> h({n, n},
                               {.devices = all, .weights = alone_new, .boundary = boundary});
      solve(h, 2);
      fresh.push_back(solve(h, window).seconds);
      cuts_fresh = h.cuts();
    }
    sim::set_speed(slowed, speed0);
  }
  result r{bench,
           variant,
           work,
           spread::of(after_dyn).min,
           "ideal after the slow-down (sum of single-device throughputs)",
           spread::of(ideal_after_t).min};
  r.strata_spread = spread::of(after_dyn);
  r.peer_spread = spread::of(ideal_after_t);
  r.ratio_spread = spread::of(ratios);
  r.extra = {
      {"rounds", double(rounds)},
      {"sweeps_before_change", double(change)},
      {"window_iterations", double(window)},
      {"iterations_after_change", double(after_change)},
      {"repartitions", double(reparts)},
      {"iterations_to_recover_085_median", spread::of(recovered_after).median},
      {"iterations_to_recover_085_max", spread::of(recovered_after).max},
      {"ratio_before_change_vs_ideal", spread::of(ideal_before_t).min / spread::of(before_dyn).min},
      {"ratio_static_cuts_after_vs_ideal",
       spread::of(ideal_after_t).min / spread::of(after_static).min},
      {"ratio_vs_static_cuts_after", spread::of(after_static).min / spread::of(after_dyn).min},
      {"ratio_vs_fresh_calibration", spread::of(fresh).min / spread::of(after_dyn).min}};
  for (std::size_t i = 1; i + 1 < cuts_dyn.size(); ++i) {
    r.extra.push_back({"cut_" + std::to_string(i) + "_rebalanced", double(cuts_dyn[i])});
    r.extra.push_back({"cut_" + std::to_string(i) + "_fresh", double(cuts_fresh[i])});
  }
  r.note =
      "ratio = throughput over the last iterations of the 50 after the last sim device's "
      "speed halves / the ideal at the new speeds (" +
      std::to_string(rounds) +
      " rounds, each with its own single-device, static-cut and fresh-cut runs; ratios of "
      "the minima, ratio_median of the rounds' ratios; repartitions and cuts of the last "
      "round); ratio_vs_fresh_calibration "
      "compares with cuts computed from the new speeds, the best a re-partition can reach; "
      "iterations_to_recover_085: iterations after the change until the next " +
      std::to_string(span) + " reach 0.85 of the ideal (51: never within 50); " + setting;
  ctx.report(r);
}

/// Each device alone and the host with 1 and 2 sim devices at cuts from `weights` (the
/// calibration), solved in turns for `rounds` rounds, one solve of each per round. A mix's
/// ratio in a round is against that round's ideal (the sum of the single-device throughputs
/// measured in the same round), as `compare` interleaves its two sides: this VM's speed
/// drifts by 20-30% over seconds, and single-device speeds measured once before the mixes
/// made the ideal, and every ratio, swing with it (paced/host1+1sim 0.76-1.09 in five
/// runs of session 65).
/// `ratio` is of the minima (the best ideal over the best mix, as every bench reports);
/// ratio_median and the quartiles are of the per-round ratios. With `late`, each mix is also
/// solved with hybrid_options::early_corpus off (ratio_without_early_corpus).
template <class Solve>
void report_paired_mixes(context& ctx, std::string const& bench, std::string const& prefix,
                         std::vector<place> const& all, std::vector<double> const& weights,
                         hybrid_options<double> const& base, index_t n, long sweeps, bool late,
                         Solve& solve, std::string const& setting) {
  int const rounds = ctx.opts().quick ? 1 : 5;
  double const cells = double(n * n) * double(sweeps);
  std::vector<std::unique_ptr<hybrid_stencil<double>>> alone, mixes, lates;
  for (auto const& d : all) {
    auto o = base;
    o.devices = {d};
    alone.push_back(std::make_unique<hybrid_stencil<double>>(vec<2>{n, n}, o));
  }
  for (std::size_t k : {2, 3}) {
    auto o = base;
    o.devices.assign(all.begin(), all.begin() + static_cast<long>(k));
    o.weights.assign(weights.begin(), weights.begin() + static_cast<long>(k));
    mixes.push_back(std::make_unique<hybrid_stencil<double>>(vec<2>{n, n}, o));
    if (late) {
      o.early_corpus = false;
      lates.push_back(std::make_unique<hybrid_stencil<double>>(vec<2>{n, n}, o));
    }
  }
  // [device][round] seconds alone; [mix][round] seconds of the mix and of its late twin.
  std::vector<std::vector<double>> t_alone(all.size()), t_mix(mixes.size()), t_late(lates.size());
  // One untimed solve of each first (its memory touched, as `compare` warms up).
  if (!ctx.opts().quick) {
    for (auto const& h : alone) solve(*h);
    for (auto const& h : mixes) solve(*h);
    for (auto const& h : lates) solve(*h);
  }
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t i = 0; i < alone.size(); ++i) t_alone[i].push_back(solve(*alone[i]));
    for (std::size_t m = 0; m < mixes.size(); ++m) {
      if (late) t_late[m].push_back(solve(*lates[m]));
      t_mix[m].push_back(solve(*mixes[m]));
    }
  }
  for (std::size_t m = 0; m < mixes.size(); ++m) {
    std::size_t const k = m + 2;
    std::vector<double> ideal_t, ratios;  // per round
    for (int r = 0; r < rounds; ++r) {
      double ideal = 0;
      for (std::size_t i = 0; i < k; ++i) ideal += cells / t_alone[i][static_cast<std::size_t>(r)];
      ideal_t.push_back(cells / ideal);
      ratios.push_back(ideal_t.back() / t_mix[m][static_cast<std::size_t>(r)]);
    }
    result res{bench,
               prefix + "+" + std::to_string(k - 1) + "sim",
               cells,
               spread::of(t_mix[m]).min,
               "ideal (sum of single-device throughputs)",
               spread::of(ideal_t).min};
    res.strata_spread = spread::of(t_mix[m]);
    res.peer_spread = spread::of(ideal_t);
    res.ratio_spread = spread::of(ratios);
    res.extra = {{"devices", double(k)}, {"sweeps", double(sweeps)}, {"rounds", double(rounds)}};
    if (late)
      res.extra.push_back(
          {"ratio_without_early_corpus", spread::of(ideal_t).min / spread::of(t_late[m]).min});
    for (std::size_t i = 0; i < k; ++i) {
      res.extra.push_back(
          {"alone_cells_per_s_" + std::to_string(i), cells / spread::of(t_alone[i]).min});
      res.extra.push_back({"weight_" + std::to_string(i), weights[i]});
    }
    auto const& cuts = mixes[m]->cuts();
    for (std::size_t i = 1; i + 1 < cuts.size(); ++i)
      res.extra.push_back({"cut_" + std::to_string(i), double(cuts[i])});
    res.note = "ratio = achieved / ideal, each device alone and each mix solved in turns (" +
               std::to_string(rounds) +
               " rounds; ratio of the minima, ratio_median of the rounds' ratios); cuts from "
               "the weights (a calibration run before the rounds); " +
               setting;
    ctx.report(res);
  }
}

void run_hybrid_jacobi(context& ctx) {
  index_t const n = ctx.opts().quick ? 256 : 2048;
  long const sweeps = ctx.opts().quick ? 4 : 40;
  int const reps = ctx.opts().quick ? 1 : 3;
  std::vector<double> init(static_cast<std::size_t>(n * n));
  for (std::size_t i = 0; i < init.size(); ++i) init[i] = static_cast<double>(i % 101) / 101.0;
  view<double, 2> iv(ptr<double, host_space>(init.data(), 0), vec<2>{n, n});
  auto host = ctx.cpus(static_cast<int>(ctx.thread_counts().back()));
  auto solve_once = [&](hybrid_stencil<double>& h) {
    h.set(iv);
    auto res = h.iterate(sweeps, jacobi_update{});
    if (res.iterations != sweeps) throw std::runtime_error("hybrid-jacobi: stopped early");
    return res.seconds;
  };
  auto time_solve = [&](hybrid_stencil<double>& h) {  // the calibration: best of `reps`
    double best = 1e300;
    for (int r = 0; r < reps; ++r) best = std::min(best, solve_once(h));
    return best;
  };
  // The host alone at 4096^2 (issue 16), against OpenMP sweeps that also find the largest
  // change, as a solver to a tolerance must (the seed's CPU code raises a flag per cell).
  {
    int const t = ctx.thread_counts().back();
    index_t const m = ctx.opts().quick ? 256 : 4096;
    long const host_sweeps = ctx.opts().quick ? 4 : 10;
    std::vector<double> big(static_cast<std::size_t>(m * m), 0.5);
    hybrid_stencil<double> h({m, m}, {.devices = {host}, .boundary = 0.0});
    h.set(view<double, 2>(ptr<double, host_space>(big.data(), 0), vec<2>{m, m}));
    std::size_t const w = static_cast<std::size_t>(m + 2);
    std::vector<double> pa(w * w, 0.0), pb(w * w, 0.0);  // a zero ring, as the boundary
    for (std::size_t i = 1; i + 1 < w; ++i)
      for (std::size_t j = 1; j + 1 < w; ++j) pa[i * w + j] = 0.5;
    double strata_change = 0, peer_change = 0;
    auto [ts, tp] = compare(
        ctx.opts().repeats > 3 ? 3 : ctx.opts().repeats,
        [&] { strata_change = h.iterate(host_sweeps, jacobi_update{}).max_change; },
        [&] {
          peer_change =
              omp::jacobi_with_change(m, pa.data(), pb.data(), static_cast<int>(host_sweeps), t);
        });
    if (!(strata_change > 0) || !(peer_change > 0))
      throw std::runtime_error("hybrid-jacobi: a side saw no change");
    result r{"hybrid-jacobi",
             "host/" + std::to_string(t),
             double(m * m) * double(host_sweeps),
             ts,
             "omp-jacobi-with-change/" + std::to_string(t),
             tp};
    r.extra = {{"threads", double(t)}, {"sweeps", double(host_sweeps)}};
    ctx.report(r);
  }
  auto devs = sims(ctx);
  if (devs.size() < 2) {
    ctx.skip("hybrid-jacobi", "mixes need two sim devices");
    return;
  }
  std::string const contended =
      "sim devices compute on this machine's own 2 cores, also used by the host strip, so "
      "the devices are not independent and the sum of single-device throughputs is out of "
      "reach here (the paced rows below are the setting where it is not); " +
      devices_note();
  // Each device alone: its throughput (cells per second).
  std::vector<place> all{host, devs[0], devs[1]};
  std::vector<double> alone;
  for (auto const& d : all) {
    hybrid_stencil<double> h({n, n}, {.devices = {d}, .boundary = 0.0});
    alone.push_back(double(n * n) * double(sweeps) / time_solve(h));
  }
  report_paired_mixes(ctx, "hybrid-jacobi", "host", all, alone, {.boundary = 0.0}, n, sweeps, true,
                      solve_once, contended);
  auto sweep = [&](hybrid_stencil<double>& h, long count) {
    h.set(iv);
    return h.iterate(count, jacobi_update{});
  };
  run_rebalance(ctx, "hybrid-jacobi", all, alone, n, 0.0, sweep, "rebalance/host+2sim", contended);

  // The same on devices that compute side by side, as a CPU and two accelerators do: the
  // host strip on one PU, the sim devices paced at a quarter of their speed (a paced sim
  // kernel sleeps out most of its modelled time, docs/memory.md), so the three together
  // need less than this machine's two cores and the ideal is within reach.
  paced const pace({devs[0], devs[1]});
  std::vector<place> side{ctx.cpus(1), devs[0], devs[1]};
  std::vector<double> side_alone;
  for (auto const& d : side) {
    hybrid_stencil<double> h({n, n}, {.devices = {d}, .boundary = 0.0});
    side_alone.push_back(double(n * n) * double(sweeps) / time_solve(h));
  }
  std::string const side_note =
      "host strip on 1 PU, sim devices paced at a quarter of their speeds (they sleep out most "
      "of their modelled time), so the three compute side by side on the 2 cores; " +
      devices_note();
  report_paired_mixes(ctx, "hybrid-jacobi", "paced/host1", side, side_alone, {.boundary = 0.0}, n,
                      sweeps, true, solve_once, side_note);
  run_rebalance(ctx, "hybrid-jacobi", side, side_alone, n, 0.0, sweep, "paced/rebalance/host1+2sim",
                side_note);
}

/// The shortest path's sweeps on the host strip (one PU) and 1 or 2 paced sim devices at
/// cuts from their single-device speeds, against the ideal (the sum of those throughputs),
/// as hybrid-jacobi's paced rows: a fixed number of sweeps from one target, every cell
/// updated in each.
void run_hybrid_path_mixes(context& ctx) {
  auto devs = sims(ctx);
  if (devs.size() < 2) {
    ctx.skip("hybrid-shortest-path", "mixes need two sim devices");
    return;
  }
  index_t const n = ctx.opts().quick ? 96 : 1024;
  long const sweeps = ctx.opts().quick ? 4 : 30;
  int const reps = ctx.opts().quick ? 1 : 3;
  double const h = 30.0, inf = std::numeric_limits<double>::infinity();
  std::vector<double> z = path_terrain(n);
  std::vector<double> cost(z.size(), inf);
  cost[static_cast<std::size_t>((n / 5) * n + n / 3)] = 0;
  view<double, 2> const cv(ptr<double, host_space>(cost.data(), 0), vec<2>{n, n});
  view<double, 2> const zv(ptr<double, host_space>(z.data(), 0), vec<2>{n, n});
  auto solve_once = [&](hybrid_stencil<double>& hs) {
    tensor<double, 2> elevation(hs.devices(), hs.spec());
    copy(elevation, zv).wait();
    hs.set(cv);
    auto const res = hs.iterate(sweeps, path_update{}, elevation, h);
    if (res.iterations != sweeps) throw std::runtime_error("hybrid-shortest-path: stopped early");
    return res.seconds;
  };
  paced const pace({devs[0], devs[1]});
  std::vector<place> const side{ctx.cpus(1), devs[0], devs[1]};
  double const cells = double(n * n) * double(sweeps);
  std::vector<double> alone;  // the calibration: each device alone, best of `reps`
  for (auto const& d : side) {
    hybrid_stencil<double> hs({n, n}, {.devices = {d}, .boundary = inf});
    double best = 1e300;
    for (int r = 0; r < reps; ++r) best = std::min(best, solve_once(hs));
    alone.push_back(cells / best);
  }
  std::string const note =
      "host strip on 1 PU, sim devices paced at a quarter of their speeds, so the three "
      "compute side by side on the 2 cores; " +
      devices_note();
  report_paired_mixes(ctx, "hybrid-shortest-path", "paced/host1", side, alone, {.boundary = inf}, n,
                      sweeps, false, solve_once, note);
  // Re-partitioning as hybrid-jacobi's: the elevations are an extra tensor of the solve,
  // re-cut with the strips.
  auto sweep = [&](hybrid_stencil<double>& hs, long count) {
    tensor<double, 2> elevation(hs.devices(), hs.spec());
    copy(elevation, zv).wait();
    hs.set(cv);
    return hs.iterate(count, path_update{}, elevation, h);
  };
  run_rebalance(ctx, "hybrid-shortest-path", side, alone, n, inf, sweep,
                "paced/rebalance/host1+2sim", note);
}

void run_hybrid_path(context& ctx) {
  index_t const n = ctx.opts().quick ? 96 : 512;
  double const h = 30.0, inf = std::numeric_limits<double>::infinity();
  auto devs = sims(ctx);
  if (devs.empty()) {
    ctx.skip("hybrid-shortest-path", "needs a sim device");
    return;
  }
  std::vector<place> mixd{ctx.cpus(ctx.thread_counts().back()), devs[0]};
  std::vector<double> z = path_terrain(n);
  std::vector<double> cost(z.size(), inf);
  index_t const ti = n / 5, tj = n / 3;  // the target: away from the cut between the strips
  cost[static_cast<std::size_t>(ti * n + tj)] = 0;
  view<double, 2> cv(ptr<double, host_space>(cost.data(), 0), vec<2>{n, n});
  hybrid_result res[2];
  double secs[2];
  std::vector<double> out[2];
  for (int skip = 0; skip < 2; ++skip) {
    hybrid_stencil<double> hs(
        {n, n}, {.devices = mixd, .boundary = inf, .skip_unchanged_frontiers = skip == 1});
    tensor<double, 2> elevation(hs.devices(), hs.spec());
    copy(elevation, view<double, 2>(ptr<double, host_space>(z.data(), 0), vec<2>{n, n})).wait();
    hs.set(cv);
    res[skip] = hs.solve(path_update{}, elevation, h);
    secs[skip] = res[skip].seconds;
    out[skip].resize(cost.size());
    hs.get(view<double, 2>(ptr<double, host_space>(out[skip].data(), 0), vec<2>{n, n}));
    if (!res[skip].converged) throw std::runtime_error("hybrid-shortest-path: no convergence");
  }
  if (out[0] != out[1])
    throw std::runtime_error("hybrid-shortest-path: skipping frontiers changed the result");
  result r{"hybrid-shortest-path",
           "host+sim/skip-unchanged",
           double(n * n),
           secs[1],
           "host+sim/send-every-frontier",
           secs[0]};
  r.extra = {{"iterations", double(res[1].iterations)},
             {"bytes_sent", double(res[1].bytes_sent)},
             {"bytes_sent_without_flags", double(res[0].bytes_sent)},
             {"frontiers_skipped", double(res[1].frontiers_skipped)}};
  r.note =
      "same costs both ways (checked); bytes_sent vs bytes_sent_without_flags is the "
      "seed's point: unchanged frontiers are not sent; host + the first of the " +
      devices_note();
  ctx.report(r);
  run_hybrid_path_mixes(ctx);
}

registrar hybrid_jacobi_r("hybrid-jacobi",
                          "hybrid stencil Jacobi: host vs OpenMP; host + 1/2 sim devices with "
                          "measured-speed cuts vs the sum of single-device throughputs; dynamic "
                          "re-partitioning after a sim device's speed halves",
                          run_hybrid_jacobi, hybrid_devices);
registrar hybrid_path_r("hybrid-shortest-path",
                        "hybrid stencil shortest path on host + sim: frontier bytes and time "
                        "with and without change flags; host + 1/2 paced sim devices with "
                        "measured-speed cuts vs the sum of single-device throughputs; dynamic "
                        "re-partitioning after a sim device's speed halves",
                        run_hybrid_path, hybrid_devices);

}  // namespace
}  // namespace strata::bench
