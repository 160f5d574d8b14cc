#include "hybrid_tables.hpp"

#include "stencil_kernels.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>

namespace apps {

using strata::index_t;

std::vector<hybrid_device> hybrid_devices(strata::place const& machine) {
  std::vector<hybrid_device> out;
  auto host = machine.slice(strata::isa::host);
  out.push_back({"cpu[" + std::to_string(host.processors().size()) + " PU]", host});
  for (auto const& d : machine.slice(strata::isa::sim).descendants(strata::place_type::device))
    out.push_back({d.name(), d});
  return out;
}

void check_strips(index_t rows, std::vector<hybrid_device> const& devices,
                  std::string const& what) {
  auto const n = static_cast<index_t>(devices.size());
  if (rows >= n) return;
  throw strata::invalid_argument(
      what + ": " + std::to_string(rows) + " rows are fewer than the " + std::to_string(n) +
      " devices (the host CPU and " + std::to_string(n - 1) +
      " sim devices); expected at least one row for each device's strip");
}

std::vector<index_t> optimal_cuts(index_t rows, std::vector<double> const& speeds) {
  if (rows < static_cast<index_t>(speeds.size()))
    throw strata::invalid_argument("optimal_cuts: " + std::to_string(rows) + " rows for " +
                                   std::to_string(speeds.size()) +
                                   " devices; expected at least one row each");
  std::vector<index_t> cuts;
  double total = 0, acc = 0;
  for (double s : speeds) total += s;
  for (std::size_t k = 0; k + 1 < speeds.size(); ++k) {
    acc += speeds[k];
    auto c = static_cast<index_t>(std::llround(static_cast<double>(rows) * acc / total));
    index_t const lo = cuts.empty() ? 1 : cuts.back() + 1;
    index_t const hi = rows - static_cast<index_t>(speeds.size() - 1 - k);
    cuts.push_back(std::clamp(c, lo, hi));
  }
  return cuts;
}

namespace {

double cells(table_setup const& s) {
  return static_cast<double>(s.rows) * static_cast<double>(s.cols) * static_cast<double>(s.sweeps);
}

/// Whether `cuts` leave every strip a row (cut steps near an edge may not).
bool valid(std::vector<index_t> const& cuts, index_t rows) {
  index_t prev = 0;
  for (auto c : cuts) {
    if (c <= prev || c >= rows) return false;
    prev = c;
  }
  return true;
}

}  // namespace

std::vector<double> print_seed_tables(std::FILE* out, std::vector<hybrid_device> const& devices,
                                      table_setup const& setup, sweep_timer const& timer) {
  auto time = [&](std::vector<strata::place> const& where, std::vector<index_t> const& cuts) {
    double best = std::numeric_limits<double>::infinity();
    for (int r = 0; r < std::max(1, setup.repeats); ++r) best = std::min(best, timer(where, cuts));
    return best;
  };
  index_t const step = setup.cut_step > 0 ? setup.cut_step : std::max<index_t>(1, setup.rows / 32);
  // Table 1: each device alone.
  std::vector<double> speeds;
  for (auto const& d : devices) speeds.push_back(cells(setup) / time({d.where}, {}));
  double total = 0;
  for (double s : speeds) total += s;
  std::fprintf(out, "Table 1: each device alone (%lld x %lld, %ld sweeps per run)\n",
               static_cast<long long>(setup.rows), static_cast<long long>(setup.cols),
               setup.sweeps);
  std::fprintf(out, "  %-16s %14s %16s\n", "device", "speed (pts/s)", "relative power");
  for (std::size_t k = 0; k < devices.size(); ++k)
    std::fprintf(out, "  %-16s %14.3e %15.2f%%\n", devices[k].name.c_str(), speeds[k],
                 100.0 * speeds[k] / total);
  if (devices.size() < 2) {
    std::fprintf(out, "Tables 2-3: one device only (add sim devices: --strata-sim-devices=2)\n");
    return speeds;
  }

  // Table 2: double mixing, every pair, the optimal cut and +-1, +-2 steps around it.
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t a = 0; a < devices.size(); ++a)
    for (std::size_t b = a + 1; b < devices.size(); ++b) pairs.push_back({a, b});
  std::fprintf(out,
               "Table 2: double mixing, gain over the pair's fastest device alone (cut: first "
               "row of the second device; step %lld rows)\n",
               static_cast<long long>(step));
  std::fprintf(out, "  %-8s", "");
  for (auto [a, b] : pairs) {
    std::string name = devices[a].name + "-" + devices[b].name;
    std::fprintf(out, " %22s", name.c_str());
  }
  std::fprintf(out, "\n  %-8s", "");
  for (std::size_t p = 0; p < pairs.size(); ++p)
    std::fprintf(out, " %10s %11s", "cut line", "gain");
  std::fprintf(out, "\n");
  for (int k = -2; k <= 2; ++k) {
    char label[16];
    std::snprintf(label, sizeof label, k == 0 ? "opt. cut" : "%+d", k);
    std::fprintf(out, "  %-8s", label);
    for (auto [a, b] : pairs) {
      auto cut = optimal_cuts(setup.rows, {speeds[a], speeds[b]});
      cut[0] += k * step;
      if (!valid(cut, setup.rows)) {
        std::fprintf(out, " %10s %11s", "-", "-");
        continue;
      }
      double const speed = cells(setup) / time({devices[a].where, devices[b].where}, cut);
      double const best = std::max(speeds[a], speeds[b]);
      std::fprintf(out, " %10lld %10.2f%%", static_cast<long long>(cut[0]),
                   100.0 * (speed / best - 1.0));
    }
    std::fprintf(out, "\n");
  }
  if (devices.size() < 3) return speeds;

  // Table 3: triple mixing with the CPU between the two accelerators (§4.1: data moves
  // only between the CPU and each device).
  std::size_t const top = 1, middle = 0, bottom = 2;
  auto opt = optimal_cuts(setup.rows, {speeds[top], speeds[middle], speeds[bottom]});
  double const fastest = std::max({speeds[0], speeds[1], speeds[2]});
  std::vector<strata::place> three{devices[top].where, devices[middle].where,
                                   devices[bottom].where};
  std::fprintf(out,
               "Table 3: triple mixing %s-%s-%s, gain over the fastest device alone "
               "(rows: cut %s|%s, columns: cut %s|%s)\n",
               devices[top].name.c_str(), devices[middle].name.c_str(),
               devices[bottom].name.c_str(), devices[middle].name.c_str(),
               devices[bottom].name.c_str(), devices[top].name.c_str(),
               devices[middle].name.c_str());
  std::fprintf(out, "  %-10s", "");
  for (int k1 = -2; k1 <= 2; ++k1)
    std::fprintf(out, " %10lld", static_cast<long long>(opt[0] + k1 * step));
  std::fprintf(out, "\n");
  for (int k2 = -2; k2 <= 2; ++k2) {
    std::fprintf(out, "  %-10lld", static_cast<long long>(opt[1] + k2 * step));
    for (int k1 = -2; k1 <= 2; ++k1) {
      std::vector<index_t> cut{opt[0] + k1 * step, opt[1] + k2 * step};
      if (!valid(cut, setup.rows)) {
        std::fprintf(out, " %10s", "-");
        continue;
      }
      double const speed = cells(setup) / time(three, cut);
      std::fprintf(out, " %9.2f%%", 100.0 * (speed / fastest - 1.0));
    }
    std::fprintf(out, "\n");
  }
  return speeds;
}

std::vector<index_t> parse_cuts(std::string const& text, index_t rows, std::size_t devices) {
  auto bad = [&](std::string const& why) {
    std::string even;  // an example: equal strips
    for (std::size_t k = 1; k < devices; ++k)
      even += (k > 1 ? "," : "") +
              std::to_string(rows * static_cast<index_t>(k) / static_cast<index_t>(devices));
    return strata::invalid_argument(
        "--cuts '" + text + "': " + why + "; expected " + std::to_string(devices - 1) +
        " increasing row numbers in 1.." + std::to_string(rows - 1) +
        ", comma-separated (where the 2nd, 3rd, ... of the " + std::to_string(devices) +
        " strips start)" + (even.empty() ? std::string() : ", e.g. --cuts " + even));
  };
  if (devices < 2)
    throw strata::invalid_argument("--cuts '" + text + "': " + std::to_string(devices) +
                                   " device, so there is no cut line to give; expected no --cuts");
  std::vector<index_t> cuts;
  for (std::size_t at = 0; at <= text.size();) {
    auto const comma = std::min(text.find(',', at), text.size());
    std::string const part = text.substr(at, comma - at);
    char* end = nullptr;
    errno = 0;
    long long const v = std::strtoll(part.c_str(), &end, 10);
    // Digits only (strtoll would take a leading space or sign).
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || *end != '\0' ||
        errno == ERANGE)
      throw bad("'" + part + "' is not a row");
    if (v < 1 || v > rows - 1) throw bad("row " + part + " is outside the grid's inner rows");
    if (!cuts.empty() && v <= cuts.back()) throw bad("rows must increase (no empty strip)");
    cuts.push_back(static_cast<index_t>(v));
    at = comma + 1;
  }
  if (cuts.size() + 1 != devices)
    throw bad(std::to_string(cuts.size()) + " cut lines for " + std::to_string(devices) +
              " devices");
  return cuts;
}

slow_down parse_slow_down(std::string const& text, std::vector<hybrid_device> const& devices) {
  auto at = text.find('@'), eq = text.find('=');
  auto bad = [&](std::string const& why) {
    return strata::invalid_argument("--slow-down '" + text + "': " + why +
                                    "; expected NAME@ITERATION=SPEED, e.g. sim1@50=0.5");
  };
  if (at == std::string::npos || eq == std::string::npos || eq < at) throw bad("malformed");
  slow_down s;
  s.device = text.substr(0, at);
  char* end = nullptr;
  std::string const it = text.substr(at + 1, eq - at - 1), sp = text.substr(eq + 1);
  errno = 0;
  s.iteration = std::strtol(it.c_str(), &end, 10);
  if (it.empty() || *end != '\0' || s.iteration < 0 || errno == ERANGE) throw bad("bad iteration");
  s.speed = std::strtod(sp.c_str(), &end);
  if (sp.empty() || *end != '\0' || !(s.speed > 0) || !std::isfinite(s.speed))
    throw bad("bad speed");
  for (auto const& d : devices)
    if (d.name == s.device) {
      if (d.where.isa() != strata::isa::sim) throw bad(d.name + " is not a sim device");
      return s;
    }
  throw bad("no device named " + s.device);
}

std::function<void(strata::hybrid_progress const&)> progress_hook(std::FILE* out, slow_down s) {
  auto last = std::make_shared<std::vector<index_t>>();
  std::optional<strata::place> where;
  if (!s.device.empty())
    for (auto const& d : hybrid_devices(strata::runtime::current().machine()))
      if (d.name == s.device) where = d.where;
  return [out, s, where, last](strata::hybrid_progress const& p) {
    if (where && p.iteration == s.iteration) {
      strata::sim::set_speed(*where, s.speed);
      std::fprintf(out, "    iteration %ld: %s now runs at speed %g\n", p.iteration,
                   s.device.c_str(), s.speed);
    }
    if (!last->empty() && *last != p.cuts) {
      std::fprintf(out, "    iteration %ld: re-partitioned, strips start at rows", p.iteration);
      for (std::size_t k = 0; k + 1 < p.cuts.size(); ++k)
        std::fprintf(out, " %lld", static_cast<long long>(p.cuts[k]));
      std::fprintf(out, "\n");
    }
    *last = p.cuts;
  };
}

std::pair<index_t, index_t> parse_cell(std::string const& flag, std::string const& text) {
  auto comma = text.find(',');
  char* end1 = nullptr;
  char* end2 = nullptr;
  std::string const a = text.substr(0, comma);
  std::string const b = comma == std::string::npos ? "" : text.substr(comma + 1);
  errno = 0;  // ERANGE: a number beyond 64 bits, which strtoll clamps
  long long i = std::strtoll(a.c_str(), &end1, 10), j = std::strtoll(b.c_str(), &end2, 10);
  if (comma == std::string::npos || a.empty() || b.empty() || *end1 != '\0' || *end2 != '\0' ||
      errno == ERANGE)
    throw strata::invalid_argument(flag + " '" + text + "': expected ROW,COL");
  return {static_cast<index_t>(i), static_cast<index_t>(j)};
}

std::vector<std::pair<index_t, index_t>> trace_path(std::vector<double> const& cost,
                                                    std::vector<double> const& z, index_t rows,
                                                    index_t cols, double h,
                                                    std::pair<index_t, index_t> start) {
  if (start.first < 0 || start.second < 0 || start.first >= rows || start.second >= cols)
    throw strata::invalid_argument("trace_path: start (" + std::to_string(start.first) + ", " +
                                   std::to_string(start.second) + ") outside the " +
                                   std::to_string(rows) + " x " + std::to_string(cols) + " grid");
  auto at = [&](std::vector<double> const& v, index_t i, index_t j) {
    return v[static_cast<std::size_t>(i * cols + j)];
  };
  std::vector<std::pair<index_t, index_t>> path{start};
  auto [i, j] = start;
  for (index_t steps = 0; steps < rows * cols && at(cost, i, j) > 0; ++steps) {
    double best = std::numeric_limits<double>::infinity();
    index_t bi = i, bj = j;
    for (int di = -1; di <= 1; ++di)
      for (int dj = -1; dj <= 1; ++dj) {
        index_t const a = i + di, b = j + dj;
        if ((di == 0 && dj == 0) || a < 0 || b < 0 || a >= rows || b >= cols) continue;
        if (!(at(cost, a, b) < at(cost, i, j))) continue;
        double const via = at(cost, a, b) + step_cost(di, dj, h, at(z, a, b) - at(z, i, j));
        if (via < best) best = via, bi = a, bj = b;
      }
    if (bi == i && bj == j) break;  // no lower neighbour: unreachable or a local stop
    i = bi, j = bj;
    path.push_back({i, j});
  }
  return path;
}

}  // namespace apps
