// `strata report`: `strata bench --json` output (files, or a run it starts) made into
// DIR/index.html with one plot per benchmark (docs/bench.md). This side checks the input
// line by line and gathers what the page shows besides the numbers (place tree, software);
// tools/strata/strata_report.py draws the plots with matplotlib and writes the page.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <strata/error.hpp>
#include <strata/machine.hpp>
#include <strata/runtime.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "build_info.hpp"
#include "commands.hpp"

extern char** environ;

namespace strata::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

struct report_options {
  std::vector<std::string> files;
  std::string out;
  bool run = false;
  bool quick = false;
  int repeats = 0;  // 0: bench's own default
  std::string bench = "all";
};

// Runs `args` (args[0] a path) with stdout to `stdout_file` if given; returns its status.
int spawn_and_wait(std::vector<std::string> args, std::string const& stdout_file = {}) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!stdout_file.empty())
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_file.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int const rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw error(fmt::format("report: cannot start {}: {}", args[0], std::strerror(rc)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw error(fmt::format("report: waiting for {}: {}", args[0], std::strerror(errno)));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ..."
// becomes "column 5: syntax error ..." (the file's line number is given separately).
std::string json_reason(std::string const& what) {
  auto col = what.find("column ");
  if (col != std::string::npos) return what.substr(col);
  auto close = what.find("] ");
  return close == std::string::npos ? what : what.substr(close + 2);
}

// A value as a message shows it: compact, what is not UTF-8 replaced, at most 60 characters.
std::string shown(json const& v) {
  auto text = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() <= 60) return text;
  std::size_t cut = 57;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // whole chars
  return text.substr(0, cut) + "...";
}

void need_string(json const& j, char const* key, std::string const& where) {
  if (!j.contains(key) || !j[key].is_string())
    throw parse_error(
        fmt::format("{}: \"{}\" is missing or not a string; expected a line of "
                    "`strata bench --json`",
                    where, key));
}

void need_number(json const& j, char const* key, std::string const& where, bool positive) {
  if (!j.contains(key))
    throw parse_error(fmt::format("{}: \"{}\" is missing or not a number", where, key));
  if (!j[key].is_number())
    throw parse_error(fmt::format("{}: \"{}\" is {} (a JSON {}); expected a number", where, key,
                                  shown(j[key]), j[key].type_name()));
  double const v = j[key].get<double>();
  if (!std::isfinite(v) || (positive && v <= 0))
    throw parse_error(fmt::format("{}: \"{}\" is {}; expected a {} number", where, key, v,
                                  positive ? "positive" : "finite"));
}

// One file: runs separated by metadata lines (a file may hold several runs appended).
std::vector<json> read_runs(std::string const& path) {
  // A folder opens as a stream and then fails to read ("reading DIR failed").
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    throw invalid_argument(fmt::format(
        "report: {} is a folder; expected a JSON-lines file of `strata bench --json`", path));
  std::ifstream in(path);
  if (!in)
    throw invalid_argument(fmt::format("report: cannot read {}: {}", path, std::strerror(errno)));
  std::vector<json> runs;
  auto fresh = [&] {
    json r;
    r["source"] = path;
    r["meta"] = nullptr;
    r["records"] = json::array();
    r["skipped"] = json::array();
    return r;
  };
  json run = fresh();
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto const where = fmt::format("{}:{}", path, n);
    json j;
    try {
      // No line of `strata bench` nests deeper than a few levels; a deeply nested one
      // would overflow the stack later (nlohmann copies recursively: 50,000 nested arrays
      // crashed the report) or in the plotting script.
      constexpr int max_depth = 32;
      j = json::parse(line, [&](int depth, json::parse_event_t, json&) {
        if (depth > max_depth)
          throw parse_error(
              fmt::format("{}: JSON nested more than {} levels deep; expected a "
                          "line of `strata bench --json`",
                          where, max_depth));
        return true;
      });
    } catch (json::parse_error const& e) {
      throw parse_error(fmt::format("{}: not valid JSON at {}", where, json_reason(e.what())));
    } catch (json::exception const& e) {
      // Valid JSON that cannot be read, such as a number beyond a double (1e400).
      throw parse_error(
          fmt::format("{}: cannot read the JSON: {}; expected a line of "
                      "`strata bench --json`",
                      where, json_reason(e.what())));
    }
    if (!j.is_object())
      throw parse_error(
          fmt::format("{}: a JSON {} where a JSON object was expected", where, j.type_name()));
    if (j.contains("meta")) {
      if (!j["meta"].is_object())
        throw parse_error(fmt::format("{}: \"meta\" is not an object", where));
      // The page lists the libraries as name and version.
      if (auto const& libs = j["meta"].value("libraries", json()); !libs.is_null()) {
        bool const ok =
            libs.is_object() &&
            std::all_of(libs.begin(), libs.end(), [](json const& v) { return v.is_string(); });
        if (!ok)
          throw parse_error(
              fmt::format("{}: \"meta\".\"libraries\" is {}; expected an object of library "
                          "names and version strings, such as {{\"fmt\":\"9.1.0\"}}",
                          where, shown(libs)));
      }
      if (!run["records"].empty() || !run["skipped"].empty())
        runs.push_back(std::exchange(run, fresh()));
      run["meta"] = j["meta"];
      continue;
    }
    need_string(j, "bench", where);
    if (j.contains("skipped")) {
      run["skipped"].push_back({{"bench", j["bench"]}, {"reason", j["skipped"]}});
      continue;
    }
    need_string(j, "variant", where);
    need_string(j, "peer", where);
    need_number(j, "size", where, false);
    need_number(j, "strata_s", where, true);
    need_number(j, "peer_s", where, true);
    if (j.contains("limit") && !j["limit"].is_null()) need_number(j, "limit", where, true);
    // What the scaling tables read (a count of ranks, the rates beside the seconds).
    if (j.contains("ranks")) {
      need_number(j, "ranks", where, true);
      if (double const r = j["ranks"].get<double>(); r != std::floor(r) || r > 1e6)
        throw parse_error(
            fmt::format("{}: \"ranks\" is {}; expected a whole number of ranks", where, r));
    }
    for (char const* key : {"strata_gflops", "peer_gflops"})
      if (j.contains(key)) need_number(j, key, where, true);
    // The counts a scaling curve is drawn against (null: not given), and the rates and
    // spreads the plots read: numbers where present.
    for (char const* key : {"threads", "devices", "sim_devices"})
      if (j.contains(key) && !j[key].is_null()) need_number(j, key, where, false);
    for (char const* key :
         {"strata_gbps", "peer_gbps", "ratio_min", "ratio_q1", "ratio_median", "ratio_q3",
          "ratio_max", "strata_q1_s", "strata_median_s", "strata_q3_s", "strata_max_s", "peer_q1_s",
          "peer_median_s", "peer_q3_s", "peer_max_s"})
      if (j.contains(key)) need_number(j, key, where, false);
    if (!j.contains("ratio")) j["ratio"] = j["peer_s"].get<double>() / j["strata_s"].get<double>();
    need_number(j, "ratio", where, true);
    j["line"] = n;
    run["records"].push_back(std::move(j));
  }
  if (in.bad()) throw error(fmt::format("report: reading {} failed", path));
  if (!run["records"].empty() || !run["skipped"].empty() || !run["meta"].is_null())
    runs.push_back(std::move(run));
  if (runs.empty() || std::all_of(runs.begin(), runs.end(), [](json const& r) {
        return r["records"].empty() && r["skipped"].empty();
      }))
    throw parse_error(
        fmt::format("{}: no benchmark lines (expected the output of `strata bench "
                    "all --json`)",
                    path));
  return runs;
}

// "1024/natural/ranks2" -> "1024/natural": the problem, which each rank count ran.
std::string without_ranks(std::string const& variant) {
  std::string out;
  std::size_t begin = 0;
  while (begin <= variant.size()) {
    auto const end = std::min(variant.find('/', begin), variant.size());
    auto const part = std::string_view(variant).substr(begin, end - begin);
    bool const is_ranks = part.size() > 5 && part.starts_with("ranks") &&
                          part.find_first_not_of("0123456789", 5) == std::string_view::npos;
    if (!is_ranks) out += (out.empty() ? "" : "/") + std::string(part);
    begin = end + 1;
  }
  return out.empty() ? variant : out;
}

// Strong scaling across every run read (`strata bench --ranks 1,2,4` writes one run per
// count, and counts may come from different files): for each benchmark whose lines span
// two or more `ranks`, one table per problem and peer, a row per rank count. Where several
// lines give one count, each side's fastest is taken (the minimum, as within a run), and
// the row says how many lines there were and which gave its figures. Efficiency is
// t_min * P_min / (t_P * P) against the smallest count present, which need not be 1 rank.
json scaling_tables(json const& runs) {
  struct side {
    double s = 0;
    json gflops;  // null where the line has no rate: no flop count is made up here
    std::string from;
  };
  struct point {
    side strata, peer;
    int lines = 0;
  };
  struct table {
    std::string problem, peer;
    std::map<long, point> points;  // by rank count, so the rows come out in order
  };
  struct bench {
    std::string name;
    std::vector<table> tables;  // in the order of their first line
    std::set<long> counts;
  };
  std::vector<bench> benches;
  auto take = [](side& best, json const& rec, char const* s_key, char const* gflops_key,
                 std::string from, bool first) {
    double const s = rec[s_key].get<double>();
    if (!first && s >= best.s) return;
    best = {s, rec.contains(gflops_key) ? rec[gflops_key] : json(nullptr), std::move(from)};
  };
  for (auto const& run : runs)
    for (auto const& rec : run["records"]) {
      if (!rec.contains("ranks")) continue;
      auto const name = rec["bench"].get<std::string>();
      auto b = std::find_if(benches.begin(), benches.end(),
                            [&](bench const& x) { return x.name == name; });
      if (b == benches.end()) b = benches.insert(benches.end(), bench{name, {}, {}});
      auto const problem = without_ranks(rec["variant"].get<std::string>());
      auto const peer = rec["peer"].get<std::string>();
      auto t = std::find_if(b->tables.begin(), b->tables.end(),
                            [&](table const& x) { return x.problem == problem && x.peer == peer; });
      if (t == b->tables.end()) t = b->tables.insert(b->tables.end(), table{problem, peer, {}});
      auto const ranks = std::lround(rec["ranks"].get<double>());
      b->counts.insert(ranks);
      auto& p = t->points[ranks];
      auto const from =
          fmt::format("{}:{}", run["source"].get<std::string>(), rec["line"].get<int>());
      bool const first = p.lines++ == 0;
      take(p.strata, rec, "strata_s", "strata_gflops", from, first);
      take(p.peer, rec, "peer_s", "peer_gflops", from, first);
    }
  json out = json::array();
  for (auto const& b : benches) {
    if (b.counts.size() < 2) continue;
    json entry;
    entry["bench"] = b.name;
    entry["tables"] = json::array();
    entry["one_count"] = json::array();  // problems measured at one count: no scaling
    for (auto const& t : b.tables) {
      auto const& [base_ranks, base] = *t.points.begin();
      if (t.points.size() < 2) {
        entry["one_count"].push_back(
            fmt::format("{} vs {} ({} ranks)", t.problem, t.peer, base_ranks));
        continue;
      }
      json rows = json::array();
      for (auto const& [ranks, p] : t.points) {
        double const scale = static_cast<double>(ranks) / static_cast<double>(base_ranks);
        rows.push_back({{"ranks", ranks},
                        {"lines", p.lines},
                        {"strata_s", p.strata.s},
                        {"strata_gflops", p.strata.gflops},
                        {"strata_efficiency", base.strata.s / (scale * p.strata.s)},
                        {"peer_s", p.peer.s},
                        {"peer_gflops", p.peer.gflops},
                        {"peer_efficiency", base.peer.s / (scale * p.peer.s)},
                        {"ratio", p.peer.s / p.strata.s},
                        {"strata_from", p.strata.from},
                        {"peer_from", p.peer.from}});
      }
      entry["tables"].push_back(
          {{"problem", t.problem}, {"peer", t.peer}, {"base_ranks", base_ranks}, {"rows", rows}});
    }
    out.push_back(std::move(entry));
  }
  return out;
}

// The plotting script: next to this program in the build tree, under share/strata in an
// install; STRATA_REPORT_SCRIPT names another.
fs::path find_script() {
  if (char const* env = std::getenv("STRATA_REPORT_SCRIPT")) return env;
  auto const dir = self_path().parent_path();
  std::vector<fs::path> tried = {dir / "strata_report.py",
                                 dir / ".." / "share" / "strata" / "strata_report.py"};
  for (auto const& p : tried)
    if (fs::exists(p)) return fs::weakly_canonical(p);
  throw config_error(
      fmt::format("report: the plotting script is in neither {} nor {} (set "
                  "STRATA_REPORT_SCRIPT to its path)",
                  tried[0].string(), tried[1].string()));
}

std::string utc_now() {
  std::time_t const t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

void run_report(report_options const& o) {
  if (o.run == !o.files.empty())
    throw invalid_argument(
        "report: give either --run or FILE.jsonl... (the output of `strata "
        "bench all --json`)");
  if (o.run && o.bench.empty())
    throw invalid_argument(
        "report: --bench is empty; expected a benchmark name from `strata bench --list` or "
        "'all'");
  fs::path const out = o.out;
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out))
    throw invalid_argument(fmt::format("report: cannot make the output folder {}: {}", out.string(),
                                       ec ? ec.message() : "not a folder"));
  auto const script = find_script();  // before a long bench run, not after

  std::vector<std::string> inputs = o.files;
  if (o.run) {
    auto const jsonl = (out / "bench.jsonl").string();
    std::vector<std::string> args{find_bench_program().string(), o.bench, "--json"};
    if (o.quick) args.push_back("--quick");
    if (o.repeats > 0) args.insert(args.end(), {"--repeats", std::to_string(o.repeats)});
    std::fprintf(stderr, "strata report: running `strata bench %s --json%s` into %s\n",
                 o.bench.c_str(), o.quick ? " --quick" : "", jsonl.c_str());
    if (int rc = spawn_and_wait(args, jsonl); rc != 0)
      throw error(
          fmt::format("report: `strata bench {}` failed (exit {}); its output so far is "
                      "in {}",
                      o.bench, rc, jsonl));
    inputs = {jsonl};
  }

  json data;
  data["runs"] = json::array();
  bool all_have_meta = true;
  for (auto const& f : inputs)
    for (auto& r : read_runs(f)) {
      all_have_meta = all_have_meta && !r["meta"].is_null();
      data["runs"].push_back(std::move(r));
    }
  data["scaling"] = scaling_tables(data["runs"]);
  auto& made = data["report"];
  made["strata_version"] = build_info::strata_version();
  made["commit"] = build_info::commit();
  made["compiler"] = build_info::compiler();
  made["build_type"] = build_info::build_type();
  made["date"] = utc_now();
  // Files written before the metadata line existed say nothing of their machine: the
  // page then shows the one the report is made on, saying so.
  if (!all_have_meta) {
    runtime rt;
    made["machine"] = to_text(rt.machine());
  }
  auto const data_path = out / "report-data.json";
  {
    std::ofstream f(data_path);
    // Replacing what is not UTF-8 (a host or file name) rather than failing on it.
    f << data.dump(1, ' ', false, json::error_handler_t::replace) << '\n';
    if (!f)
      throw error(
          fmt::format("report: cannot write {}: {}", data_path.string(), std::strerror(errno)));
  }

  std::string python = STRATA_PYTHON3;
  if (char const* env = std::getenv("STRATA_PYTHON")) python = env;
  int const rc = spawn_and_wait({python, script.string(), data_path.string(), out.string()});
  if (rc != 0)
    throw error(
        fmt::format("report: the plotting script ({} {}) failed with exit {}; its "
                    "messages are above",
                    python, script.string(), rc));
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto o = std::make_shared<report_options>();
  auto* cmd = app.add_subcommand(
      "report", "Make DIR/index.html with plots from `strata bench --json` output");
  cmd->add_option("files", o->files, "JSON-lines files of `strata bench all --json`");
  cmd->add_option("-o,--output", o->out, "Folder for index.html (made if missing)")->required();
  auto* run =
      cmd->add_flag("--run", o->run, "Run `strata bench all --json` first (into DIR/bench.jsonl)");
  cmd->add_flag("--quick", o->quick, "With --run: small problems (a smoke test)")->needs(run);
  cmd->add_option("--repeats", o->repeats, "With --run: timed runs per side")
      ->check(CLI::Range(1, 1000))
      ->needs(run);
  cmd->add_option("--bench", o->bench, "With --run: one benchmark instead of all")->needs(run);
  cmd->callback([o] { run_report(*o); });
}

}  // namespace strata::cli
