// What the hybrid stencil apps share (apps/jacobi, apps/shortest_path): the devices they
// spread over, the seed's tables (hybrid-2d-stencil-scheme §8, Tables 1-3: each device
// alone, double and triple mixing around the optimal cut lines, gains over the fastest
// device), and the path back to the target on a cost field.
#pragma once

#include <strata/strata.hpp>

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace apps {

/// A device of the tables: the host CPU place (all its PUs as one device) or a sim device.
struct hybrid_device {
  std::string name;
  strata::place where;
};

/// The host CPU place, then every sim device of the machine.
std::vector<hybrid_device> hybrid_devices(strata::place const& machine);

/// Throws strata::invalid_argument unless a grid of `rows` rows gives each of `devices`
/// its strip of at least one row; `what` names the rows in the message (e.g. "--rows 2").
void check_strips(strata::index_t rows, std::vector<hybrid_device> const& devices,
                  std::string const& what);

/// Seconds that `sweeps` sweeps take on `devices` (top to bottom) cut at `cuts` (rows where
/// strips 1.. start; empty for one device). What the tables time.
using sweep_timer = std::function<double(std::vector<strata::place> const& devices,
                                         std::vector<strata::index_t> const& cuts)>;

struct table_setup {
  strata::index_t rows = 0, cols = 0;
  long sweeps = 10;              // sweeps per timed run
  strata::index_t cut_step = 0;  // rows between the columns of Tables 2-3 (0: rows / 32)
  int repeats = 3;               // runs per table entry; the fastest counts (as in §8, where
                                 // runs are averaged: here other load is the noise)
};

/// The cut lines giving each device rows in proportion to its speed (§8 "opt. cut");
/// strata::invalid_argument when there are fewer rows than speeds.
std::vector<strata::index_t> optimal_cuts(strata::index_t rows, std::vector<double> const& speeds);

/// Prints Table 1 (each device alone: cells per second, relative power), Table 2 (every
/// pair, at the optimal cut and at -2..+2 cut steps: gain over the pair's fastest device)
/// and Table 3 (the first three devices, CPU in the middle strip as in §4.1: a 5 x 5 grid
/// of cut lines around the optimal pair). Returns the single-device speeds (cells/s).
std::vector<double> print_seed_tables(std::FILE* out, std::vector<hybrid_device> const& devices,
                                      table_setup const& setup, sweep_timer const& time);

/// "R1,R2,..." (the --cuts flag of the apps): the user's cut lines (§8's cut lines chosen
/// by hand, issue 16's "explicit cut lines"), the rows where the 2nd, 3rd, ... strip starts;
/// one fewer than `devices`, increasing, each in 1..rows-1. invalid_argument otherwise.
std::vector<strata::index_t> parse_cuts(std::string const& text, strata::index_t rows,
                                        std::size_t devices);

/// "NAME@ITER=SPEED" (the --slow-down flag of the apps): sim device NAME runs at SPEED
/// from iteration ITER on, to watch dynamic re-partitioning (§9) follow it.
struct slow_down {
  std::string device;
  long iteration = 0;
  double speed = 1.0;
};
slow_down parse_slow_down(std::string const& text, std::vector<hybrid_device> const& devices);

/// A hybrid_options::on_iteration hook: applies `s` (if any) and prints every change of
/// the cut lines to `out`.
std::function<void(strata::hybrid_progress const&)> progress_hook(std::FILE* out, slow_down s);

/// "12,34" -> (12, 34); invalid_argument naming `flag` otherwise.
std::pair<strata::index_t, strata::index_t> parse_cell(std::string const& flag,
                                                       std::string const& text);

/// The path from `start` back to the target (cost 0) on a converged cost field: from each
/// cell to the neighbour Q minimizing cost(Q) + d(P, Q), i.e. the predecessor on a
/// shortest path (steepest descent of the cost). Stops where no neighbour is lower.
std::vector<std::pair<strata::index_t, strata::index_t>> trace_path(
    std::vector<double> const& cost, std::vector<double> const& z, strata::index_t rows,
    strata::index_t cols, double h, std::pair<strata::index_t, strata::index_t> start);

}  // namespace apps
