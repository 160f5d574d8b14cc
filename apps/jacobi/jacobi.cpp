// 2-D Jacobi relaxation to a tolerance by the hybrid stencil scheme
// (hybrid-2d-stencil-scheme §2 and [3]): a rows x cols grid, 0 inside and `--edge` on the
// boundary, cut into horizontal strips over the host CPU place and the sim devices. Prints
// the seed's tables (§8, Tables 1-3), then solves with every device at the optimal cut
// lines (optionally re-partitioning as speeds change, §9) and checks the field bitwise
// against sequential sweeps. Public API only (apps/common holds the shared code).
//
//   jacobi [--size N | --rows R --cols C] [--tolerance T] [--max-iterations K]
//          [--sweeps S] [--cut-step K] [--no-tables] [--rebalance] [--slow-down D@I=S]
//          [--cuts R1,...] [--no-check] [--strata-sim-devices=2:speed=0.5]
//
// Exits 1 with a message for bad arguments, 2 when the field differs from the reference.
#include "cli.hpp"
#include "hybrid_tables.hpp"
#include "stencil_kernels.hpp"

#include <strata/strata.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

char const* const help =
    "usage: jacobi [options] [--strata-sim-devices=SPEC]\n"
    "  2-D Jacobi relaxation to a tolerance over the host CPU and sim devices\n"
    "  (hybrid 2-D stencil scheme): the seed's tables, then a solve checked bitwise.\n"
    "  --size N             an N x N grid (default 256)\n"
    "  --rows R, --cols C   the grid's rows and columns\n"
    "  --edge V             the boundary value (default 1; the inside starts at 0)\n"
    "  --tolerance T        stop once no cell changes by more than T (default 1e-4)\n"
    "  --max-iterations K   at most K sweeps (default 100000)\n"
    "  --sweeps S           sweeps per timed run in the tables (default 20)\n"
    "  --cut-step K         rows between the tables' cut lines (default rows / 32)\n"
    "  --no-tables          skip Tables 1-3 (the cut lines then come from a short measurement)\n"
    "  --rebalance          re-partition during the solve when strip times diverge\n"
    "  --slow-down D@I=S    sim device D runs at speed S from iteration I on\n"
    "  --cuts R1,R2,...     the solve's cut lines (rows where strips 2, 3, ... start) instead\n"
    "                       of the optimal ones from the measured speeds\n"
    "  --no-check           skip the sequential reference\n"
    "  --help               this text\n";

apps::args const cli(help);

}  // namespace

namespace {

int app_main(int argc, char** argv) {
  strata::runtime rt(argc, argv);
  long long rows = 256, cols = 256, max_iterations = 100000, sweeps = 20, cut_step = 0;
  double edge = 1.0, tolerance = 1e-4;
  bool tables = true, rebalance = false, check = true;
  std::string slow, cuts_text;
  bool cuts_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> char const* {
      if (i + 1 >= argc) cli.fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(help, stdout);
      return 0;
    } else if (arg == "--size") {
      rows = cols = cli.whole(arg, value(), 2);
    } else if (arg == "--rows") {
      rows = cli.whole(arg, value(), 2);
    } else if (arg == "--cols") {
      cols = cli.whole(arg, value(), 1);
    } else if (arg == "--edge") {
      // The 4-neighbour sum must stay finite (1e308 made every cell inf: "converged").
      edge = cli.real(arg, value(), -1e300, 1e300);
    } else if (arg == "--tolerance") {
      tolerance = cli.real(arg, value());
      if (!(tolerance > 0)) cli.fail("--tolerance must be positive");
    } else if (arg == "--max-iterations") {
      max_iterations = cli.whole(arg, value(), 1);
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
  auto devices = apps::hybrid_devices(rt.machine());
  apps::check_strips(rows, devices,
                     "the " + std::to_string(rows) + " x " + std::to_string(cols) + " grid");
  apps::slow_down slowed;
  if (!slow.empty()) slowed = apps::parse_slow_down(slow, devices);
  std::vector<strata::index_t> user_cuts;
  if (cuts_given) user_cuts = apps::parse_cuts(cuts_text, rows, devices.size());
  strata::vec<2> const extent{rows, cols};
  auto const n = static_cast<std::size_t>(rows * cols);
  std::vector<double> init(n, 0.0);
  strata::view<double, 2> init_view(strata::ptr<double, strata::host_space>(init.data(), 0),
                                    extent);
  std::printf("jacobi: %lld x %lld grid, edge %g, tolerance %g, %zu devices:", rows, cols, edge,
              tolerance, devices.size());
  for (auto const& d : devices) std::printf(" %s", d.name.c_str());
  std::printf("\n");

  std::vector<strata::place> all;
  for (auto const& d : devices) all.push_back(d.where);
  std::vector<double> speeds;
  if (tables) {
    apps::table_setup setup{rows, cols, static_cast<long>(sweeps), cut_step};
    speeds = apps::print_seed_tables(
        stdout, devices, setup,
        [&](std::vector<strata::place> const& where, std::vector<strata::index_t> const& cuts) {
          strata::hybrid_stencil<double> h(extent,
                                           {.devices = where, .cuts = cuts, .boundary = edge});
          h.set(init_view);
          h.iterate(1, apps::jacobi_update{});  // warm-up: first touch, first frontiers
          h.set(init_view);
          return h.iterate(sweeps, apps::jacobi_update{}).seconds;
        });
  } else if (user_cuts.empty()) {
    strata::hybrid_stencil<double> h(extent, {.devices = all, .boundary = edge});
    speeds = h.measure_speeds(3, apps::jacobi_update{});
  }

  // The solve: every device, at the optimal cut lines.
  strata::hybrid_stencil<double> h(
      extent, {.devices = all,
               .cuts = user_cuts.empty() ? apps::optimal_cuts(rows, speeds) : user_cuts,
               .boundary = edge,
               .tolerance = tolerance,
               .max_iterations = static_cast<long>(max_iterations),
               .rebalance = rebalance,
               .on_iteration = apps::progress_hook(stdout, slowed)});
  std::printf("solve on every device, strips start at rows");
  for (std::size_t k = 0; k + 1 < h.cuts().size(); ++k)
    std::printf(" %lld", static_cast<long long>(h.cuts()[k]));
  std::printf("%s\n", rebalance ? " (re-partitioned as speeds change)" : "");
  h.set(init_view);
  auto r = h.solve(apps::jacobi_update{});
  std::printf("  %ld iterations, %s, last largest change %.3e, %.3f s (%.3e pts/s)\n", r.iterations,
              r.converged ? "converged" : "NOT converged", r.max_change, r.seconds,
              static_cast<double>(n) * static_cast<double>(r.iterations) / r.seconds);
  std::printf("  frontiers sent %zu, skipped %zu, %.2f MB; %ld re-partitions moved %lld rows\n",
              r.frontiers_sent, r.frontiers_skipped, static_cast<double>(r.bytes_sent) / 1e6,
              r.repartitions, static_cast<long long>(r.rows_moved));
  bool ok = true;
  if (check) {
    std::vector<double> out(n);
    h.get(strata::view<double, 2>(strata::ptr<double, strata::host_space>(out.data(), 0), extent));
    auto ref = apps::jacobi_reference(init, rows, cols, edge, r.iterations);
    std::size_t differ = 0;
    for (std::size_t k = 0; k < n; ++k) differ += out[k] != ref[k];
    ok = differ == 0;
    std::printf(
        "  sequential reference, %ld sweeps: %s\n", r.iterations,
        ok ? "bitwise equal" : ("WRONG: " + std::to_string(differ) + " cells differ").c_str());
  }
  return ok ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main("jacobi", argc, argv, app_main);
}
