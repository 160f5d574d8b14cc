// Minimal path costs over a terrain from a target point by the hybrid stencil scheme
// (hybrid-2d-stencil-scheme §2: 8 neighbours, 3-D Euclidean step cost, iterate until no
// cost changes; §7: SRTM elevations). The terrain is SRTM .hgt tiles (mosaicked), any
// raster through GDAL when this build has it, or a seeded fractal; the grid is cut into
// horizontal strips over the host CPU place and the sim devices. Prints the seed's tables
// (§8, Tables 1-3), solves with every device at the optimal cut lines (optionally
// re-partitioning as speeds change, §9), checks the costs against Dijkstra, prints the
// path from each --from cell back to the target and draws terrain and costs as PNG.
// Public API only (apps/common holds the shared code).
//
//   shortest_path [--hgt FILE]... | [--gdal FILE] | [--fractal N] [--seed S]
//                 [--downsample K] [--target R,C] [--from R,C]... [--png PREFIX]
//                 [--contour M] [--sweeps S] [--cut-step K] [--no-tables] [--rebalance]
//                 [--slow-down D@I=S] [--cuts R1,...] [--no-check]
//                 [--strata-sim-devices=2:speed=0.5]
//
// Exits 1 with a message for bad arguments or files, 2 when the costs differ from
// Dijkstra's.
#include "cli.hpp"
#include "hybrid_tables.hpp"
#include "render.hpp"
#include "stencil_kernels.hpp"
#include "terrain.hpp"

#include <strata/strata.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <vector>

namespace {

char const* const help =
    "usage: shortest_path [options] [--strata-sim-devices=SPEC]\n"
    "  minimal path costs over a terrain from a target point (8 neighbours, 3-D step\n"
    "  cost), over the host CPU and sim devices (hybrid 2-D stencil scheme)\n"
    "  --hgt FILE           an SRTM .hgt tile; several are mosaicked (named N45E006.hgt...)\n"
    "  --gdal FILE          any raster GDAL reads (only in builds with GDAL)\n"
    "  --fractal N          an N x N synthetic fractal terrain (the default, N = 257;\n"
    "                       N <= 16385, a 2 GB height field)\n"
    "  --seed S             the fractal's seed (default 1)\n"
    "  --relief M           the fractal's height range in metres (default 2000; 0 to 1e7)\n"
    "  --downsample K       keep every K-th point (cell size times K)\n"
    "  --target R,C         the target cell (default: the centre)\n"
    "  --from R,C           print and draw the path from this cell (default: cell 0,0)\n"
    "  --png PREFIX         write PREFIX-terrain.png and PREFIX-cost.png\n"
    "  --contour M          iso-cost lines every M > 0 metres of cost (default: 12 lines)\n"
    "  --sweeps S           sweeps per timed run in the tables (default 20)\n"
    "  --cut-step K         rows between the tables' cut lines (default rows / 32)\n"
    "  --no-tables          skip Tables 1-3 (the cut lines then come from a short measurement)\n"
    "  --rebalance          re-partition during the solve when strip times diverge\n"
    "  --slow-down D@I=S    sim device D runs at speed S from iteration I on\n"
    "  --cuts R1,R2,...     the solve's cut lines (rows where strips 2, 3, ... start) instead\n"
    "                       of the optimal ones from the measured speeds\n"
    "  --no-check           skip the Dijkstra reference\n"
    "  --help               this text\n";

apps::args const cli(help);

}  // namespace

namespace {

int app_main(int argc, char** argv) {
  using strata::index_t;
  strata::runtime rt(argc, argv);
  std::vector<std::string> hgt;
  std::string gdal, png, slow, cuts_text;
  bool cuts_given = false;
  long long fractal = 257, seed = 1, downsample = 1, sweeps = 20, cut_step = 0;
  double relief = 2000, contour = 0;
  bool tables = true, rebalance = false, check = true, has_target = false;
  std::pair<index_t, index_t> target{0, 0};
  std::vector<std::pair<index_t, index_t>> from;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> char const* {
      if (i + 1 >= argc) cli.fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(help, stdout);
      return 0;
    } else if (arg == "--hgt") {
      hgt.push_back(value());
    } else if (arg == "--gdal") {
      gdal = value();
    } else if (arg == "--fractal") {
      fractal = cli.whole(arg, value(), 2, apps::fractal_limit);
    } else if (arg == "--seed") {
      seed = cli.whole(arg, value(), 0);
    } else if (arg == "--relief") {
      relief = cli.real(arg, value(), 0, 1e7);
    } else if (arg == "--downsample") {
      downsample = cli.whole(arg, value(), 1);
    } else if (arg == "--target") {
      target = apps::parse_cell(arg, value());
      has_target = true;
    } else if (arg == "--from") {
      from.push_back(apps::parse_cell(arg, value()));
    } else if (arg == "--png") {
      png = value();
    } else if (arg == "--contour") {
      contour = cli.real_above(arg, value(), 0);
    } else if (arg == "--sweeps") {
      sweeps = cli.whole(arg, value(), 1);
    } else if (arg == "--cut-step") {
      cut_step = cli.whole(arg, value(), 1);
    } else if (arg == "--no-tables") {
      tables = false;
    } else if (arg == "--rebalance") {
      rebalance = true;
    } else if (arg == "--slow-down") {
      slow = value();
    } else if (arg == "--cuts") {
      cuts_text = value();
      cuts_given = true;
    } else if (arg == "--no-check") {
      check = false;
    } else {
      cli.fail("unknown argument '" + arg + "'");
    }
  }
  if (!hgt.empty() && !gdal.empty()) cli.fail("--hgt and --gdal: give one source");
  apps::terrain land =
      !hgt.empty() ? apps::read_hgt_mosaic(hgt)
      : !gdal.empty()
          ? apps::read_gdal(gdal)
          : apps::fractal_terrain(fractal, fractal, static_cast<std::uint64_t>(seed), relief);
  land = apps::downsample(land, downsample);
  index_t const rows = land.rows, cols = land.cols;
  if (!has_target) target = {rows / 2, cols / 2};
  if (from.empty()) from.push_back({0, 0});
  for (auto const& c : from)
    if (c.first < 0 || c.second < 0 || c.first >= rows || c.second >= cols)
      cli.fail("--from " + std::to_string(c.first) + "," + std::to_string(c.second) +
               " is outside the " + std::to_string(rows) + " x " + std::to_string(cols) + " grid");
  if (target.first < 0 || target.second < 0 || target.first >= rows || target.second >= cols)
    cli.fail("--target is outside the " + std::to_string(rows) + " x " + std::to_string(cols) +
             " grid");
  double lo = 1e300, hi = -1e300;
  for (double z : land.z) lo = std::min(lo, z), hi = std::max(hi, z);
  auto devices = apps::hybrid_devices(rt.machine());
  apps::check_strips(rows, devices, "the terrain (" + land.what + ")");
  apps::slow_down slowed;
  if (!slow.empty()) slowed = apps::parse_slow_down(slow, devices);
  std::vector<strata::index_t> user_cuts;
  if (cuts_given) user_cuts = apps::parse_cuts(cuts_text, rows, devices.size());
  std::printf(
      "shortest_path: %s: %lld x %lld, cell %.0f m, elevations %.0f..%.0f m, target "
      "(%lld, %lld); %zu devices:",
      land.what.c_str(), static_cast<long long>(rows), static_cast<long long>(cols), land.cell, lo,
      hi, static_cast<long long>(target.first), static_cast<long long>(target.second),
      devices.size());
  for (auto const& d : devices) std::printf(" %s", d.name.c_str());
  std::printf("\n");

  double const inf = std::numeric_limits<double>::infinity();
  strata::vec<2> const extent{rows, cols};
  std::vector<double> start(land.z.size(), inf);
  start[static_cast<std::size_t>(target.first * cols + target.second)] = 0;
  strata::view<double, 2> start_view(strata::ptr<double, strata::host_space>(start.data(), 0),
                                     extent);
  strata::view<double, 2> z_view(strata::ptr<double, strata::host_space>(land.z.data(), 0), extent);
  // The elevations, cut into the stencil's strips; outside the grid they do not matter
  // (the costs there are +inf).
  auto elevations = [&](strata::hybrid_stencil<double> const& h) {
    strata::tensor<double, 2> z(h.devices(), h.spec());
    strata::set_boundary(z, strata::boundary::constant<double>{0.0});
    strata::copy(z, z_view).wait();
    return z;
  };

  std::vector<strata::place> all;
  for (auto const& d : devices) all.push_back(d.where);
  std::vector<double> speeds;
  if (tables) {
    apps::table_setup setup{rows, cols, static_cast<long>(sweeps), cut_step};
    speeds = apps::print_seed_tables(
        stdout, devices, setup,
        [&](std::vector<strata::place> const& where, std::vector<index_t> const& cuts) {
          strata::hybrid_stencil<double> h(extent,
                                           {.devices = where, .cuts = cuts, .boundary = inf});
          auto z = elevations(h);
          h.set(start_view);
          h.iterate(1, apps::path_update{}, z, land.cell);  // warm-up
          h.set(start_view);
          return h.iterate(sweeps, apps::path_update{}, z, land.cell).seconds;
        });
  } else if (user_cuts.empty()) {
    strata::hybrid_stencil<double> h(extent, {.devices = all, .boundary = inf});
    speeds = h.measure_speeds(3, apps::path_update{}, elevations(h), land.cell);
  }

  strata::hybrid_stencil<double> h(
      extent, {.devices = all,
               .cuts = user_cuts.empty() ? apps::optimal_cuts(rows, speeds) : user_cuts,
               .boundary = inf,
               .rebalance = rebalance,
               .on_iteration = apps::progress_hook(stdout, slowed)});
  std::printf("solve on every device, strips start at rows");
  for (std::size_t k = 0; k + 1 < h.cuts().size(); ++k)
    std::printf(" %lld", static_cast<long long>(h.cuts()[k]));
  std::printf("%s\n", rebalance ? " (re-partitioned as speeds change)" : "");
  h.set(start_view);
  auto r = h.solve(apps::path_update{}, elevations(h), land.cell);
  std::printf("  %ld iterations, %s, %.3f s (%.3e pts/s)\n", r.iterations,
              r.converged ? "converged (no cost changed)" : "NOT converged", r.seconds,
              static_cast<double>(rows * cols) * static_cast<double>(r.iterations) / r.seconds);
  std::printf(
      "  frontiers sent %zu, skipped %zu (unchanged), %.2f MB; %ld re-partitions moved "
      "%lld rows\n",
      r.frontiers_sent, r.frontiers_skipped, static_cast<double>(r.bytes_sent) / 1e6,
      r.repartitions, static_cast<long long>(r.rows_moved));
  std::vector<double> cost(land.z.size());
  h.get(strata::view<double, 2>(strata::ptr<double, strata::host_space>(cost.data(), 0), extent));

  bool ok = true;
  if (check) {
    auto ref = apps::dijkstra(land.z, rows, cols, land.cell, target.first, target.second);
    double worst = 0;
    for (std::size_t k = 0; k < cost.size(); ++k) {
      // Equal costs (unreachable cells: both +inf) differ by 0, not by inf - inf.
      double const d = cost[k] == ref[k] ? 0.0 : std::abs(cost[k] - ref[k]);
      double const rel = ref[k] > 0 && std::isfinite(ref[k]) ? d / ref[k] : d;
      if (std::isnan(rel)) {  // a NaN is the worst, whatever follows
        worst = rel;
        break;
      }
      worst = std::max(worst, rel);
    }
    ok = worst <= 1e-12;
    std::printf("  Dijkstra on the same 8-neighbour graph: largest relative difference %.1e %s\n",
                worst, ok ? "ok" : "WRONG");
  }
  double top = 0;
  for (double c : cost)
    if (std::isfinite(c)) top = std::max(top, c);
  if (!(contour > 0)) contour = top > 0 ? top / 12 : 1.0;
  auto terrain_png = apps::hillshade(land);
  auto cost_png = apps::cost_picture(cost, rows, cols);
  apps::draw_contours(terrain_png, cost, contour);
  apps::draw_contours(cost_png, cost, contour);
  for (auto const& f : from) {
    auto path = apps::trace_path(cost, land.z, rows, cols, land.cell, f);
    auto const& end = path.back();
    std::printf("  path from (%lld, %lld): cost %.1f m, %zu cells, ends at (%lld, %lld)%s\n   ",
                static_cast<long long>(f.first), static_cast<long long>(f.second),
                cost[static_cast<std::size_t>(f.first * cols + f.second)], path.size(),
                static_cast<long long>(end.first), static_cast<long long>(end.second),
                end == target ? " = target" : " (not the target: unreachable?)");
    for (std::size_t k = 0; k < path.size(); ++k) {
      if (path.size() > 12 && k == 6) {
        std::printf(" ... (%zu more)", path.size() - 12);
        k = path.size() - 6;
      }
      std::printf(" (%lld,%lld)", static_cast<long long>(path[k].first),
                  static_cast<long long>(path[k].second));
    }
    std::printf("\n");
    apps::draw_path(terrain_png, path, 220, 20, 20);
    apps::draw_path(cost_png, path, 255, 255, 255);
  }
  apps::draw_path(terrain_png, {target}, 255, 255, 0);
  if (!png.empty()) {
    apps::write_png(png + "-terrain.png", terrain_png);
    apps::write_png(png + "-cost.png", cost_png);
    std::printf(
        "  wrote %s-terrain.png (hill-shaded, iso-cost lines every %.0f m, paths) and "
        "%s-cost.png (%lld x %lld)\n",
        png.c_str(), contour, png.c_str(), static_cast<long long>(cols),
        static_cast<long long>(rows));
  }
  return ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("shortest_path", argc, argv, app_main);
}
