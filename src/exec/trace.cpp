// Chrome trace events (the "Trace Event Format": complete events, ph "X", and flow
// events, ph "s"/"f", in microseconds), buffered per thread and written once when the
// runtime ends.
#include <strata/exec/trace.hpp>

#include "exec/trace_writer.hpp"
#include "log.hpp"

#include <cxxabi.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace strata::trace {
namespace detail {

std::atomic<bool> on{false};

namespace {

struct event_record {
  std::string name;
  char const* category;
  std::int64_t begin_ns;
  std::int64_t end_ns;
  std::string detail;
  std::uint64_t flow_in;   // ends this flow at begin_ns (0: none)
  std::uint64_t flow_out;  // a flow's tail only (name, detail unused): starts it at begin_ns
};

struct lane {
  int id;
  std::string name;
  std::string group;  // "" for host threads
  std::mutex mutex;   // the owner appends, the writer reads at the end
  std::vector<event_record> events;
};

struct tracer {
  std::mutex mutex;
  std::vector<std::shared_ptr<lane>> lanes;
  // Read by recording threads without the lock; written before tracing is switched on.
  std::atomic<std::chrono::steady_clock::rep> origin{
      std::chrono::steady_clock::now().time_since_epoch().count()};
  std::atomic<std::uint64_t> next_flow{1};
  // Lanes recorded on by name (record_on), found by (group, name).
  std::map<std::pair<std::string, std::string>, std::shared_ptr<lane>> named;
};

tracer& the_tracer() {
  static tracer t;
  return t;
}

// Under t.mutex.
std::shared_ptr<lane> new_lane(tracer& t) {
  auto l = std::make_shared<lane>();
  l->id = static_cast<int>(t.lanes.size());
  l->name = "thread " + std::to_string(l->id);
  t.lanes.push_back(l);
  return l;
}

lane& my_lane() {
  thread_local std::shared_ptr<lane> mine = [] {
    auto& t = the_tracer();
    std::lock_guard lock(t.mutex);
    return new_lane(t);
  }();
  return *mine;
}

thread_local int open_events = 0;
thread_local std::uint64_t adopted = 0;

void append(lane& l, event_record e) {
  std::lock_guard lock(l.mutex);
  l.events.push_back(std::move(e));
}

std::int64_t since_origin(std::chrono::steady_clock::time_point t) {
  return t.time_since_epoch().count() - the_tracer().origin.load(std::memory_order_relaxed);
}

}  // namespace

void record(std::string_view name, char const* category,
            std::chrono::steady_clock::time_point begin, std::chrono::steady_clock::time_point end,
            std::string_view detail, std::uint64_t flow_in) {
  append(my_lane(), {std::string(name), category, since_origin(begin), since_origin(end),
                     std::string(detail), flow_in, 0});
}

void record_on(std::string_view group, std::string_view lane_name, std::string_view name,
               char const* category, std::chrono::steady_clock::time_point begin,
               std::chrono::steady_clock::time_point end, std::string_view detail,
               std::uint64_t flow_in) {
  auto& t = the_tracer();
  std::shared_ptr<lane> l;
  {
    std::lock_guard lock(t.mutex);
    auto& found = t.named[{std::string(group), std::string(lane_name)}];
    if (!found) {
      found = new_lane(t);
      found->name = lane_name;
      found->group = group;
    }
    l = found;
  }
  append(*l, {std::string(name), category, since_origin(begin), since_origin(end),
              std::string(detail), flow_in, 0});
}

std::uint64_t flow_from_here() {
  if (!enabled()) return 0;
  if (adopted) return std::exchange(adopted, 0);  // one arrow per deferred operation
  if (open_events == 0) return 0;
  auto id = the_tracer().next_flow.fetch_add(1, std::memory_order_relaxed);
  auto now = since_origin(std::chrono::steady_clock::now());
  append(my_lane(), {{}, "flow", now, now, {}, 0, id});
  return id;
}

std::uint64_t exchange_adopted(std::uint64_t id) noexcept {
  return std::exchange(adopted, id);
}

void enter() noexcept {
  ++open_events;
}
void leave() noexcept {
  --open_events;
}

char const* type_name(std::type_info const& t) {
  static std::mutex mutex;
  static std::map<std::type_info const*, std::string> names;
  std::lock_guard lock(mutex);
  auto [it, fresh] = names.try_emplace(&t);
  if (fresh) {
    int status = 0;
    char* d = abi::__cxa_demangle(t.name(), nullptr, nullptr, &status);
    std::string n = status == 0 && d ? d : t.name();
    std::free(d);
    // Kernels are often lambdas with long names; the last component reads best.
    if (n.size() > 80) n = "..." + n.substr(n.size() - 77);
    it->second = std::move(n);
  }
  return it->second.c_str();
}

}  // namespace detail

void name_this_thread(std::string name, std::string group) {
  if (!enabled()) return;
  auto& l = detail::my_lane();
  std::lock_guard lock(l.mutex);
  l.name = std::move(name);
  l.group = std::move(group);
}

}  // namespace strata::trace

namespace strata::detail {

void trace_start(std::string const& path) {
  if (path.empty()) return;
  auto& t = trace::detail::the_tracer();
  {
    std::lock_guard lock(t.mutex);
    for (auto& l : t.lanes) {
      std::lock_guard ll(l->mutex);
      l->events.clear();
    }
    t.origin.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                   std::memory_order_relaxed);
  }
  trace::detail::on.store(true, std::memory_order_release);
}

void trace_finish(std::string const& path) noexcept {
  if (path.empty() || !trace::enabled()) return;
  trace::detail::on.store(false, std::memory_order_relaxed);
  auto& t = trace::detail::the_tracer();
  nlohmann::json events = nlohmann::json::array();
  std::size_t count = 0;
  {
    std::lock_guard lock(t.mutex);
    // One trace "process" per lane group: the host's threads first, then each device.
    std::map<std::string, int> pids{{"", 0}};
    events.push_back(
        {{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", "host"}}}});
    for (auto& l : t.lanes) {
      std::lock_guard ll(l->mutex);
      auto [it, fresh] = pids.try_emplace(l->group, static_cast<int>(pids.size()));
      int const pid = it->second;
      if (fresh)
        events.push_back(
            {{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", l->group}}}});
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", pid},
                        {"tid", l->id},
                        {"args", {{"name", l->name}}}});
      for (auto const& e : l->events) {
        double const ts = static_cast<double>(e.begin_ns) / 1e3;
        if (e.flow_out) {
          // The arrow's tail, bound to the event enclosing it on this lane.
          events.push_back({{"ph", "s"},
                            {"name", "launch"},
                            {"cat", "flow"},
                            {"id", e.flow_out},
                            {"pid", pid},
                            {"tid", l->id},
                            {"ts", ts}});
          continue;
        }
        nlohmann::json ev = {{"ph", "X"},
                             {"name", e.name},
                             {"cat", e.category},
                             {"pid", pid},
                             {"tid", l->id},
                             {"ts", ts},
                             {"dur", static_cast<double>(e.end_ns - e.begin_ns) / 1e3}};
        if (!e.detail.empty()) ev["args"] = {{"detail", e.detail}};
        events.push_back(std::move(ev));
        ++count;
        if (e.flow_in)
          // The arrow's head: "bp":"e" binds it to the event starting here.
          events.push_back({{"ph", "f"},
                            {"bp", "e"},
                            {"name", "launch"},
                            {"cat", "flow"},
                            {"id", e.flow_in},
                            {"pid", pid},
                            {"tid", l->id},
                            {"ts", ts}});
      }
      l->events.clear();
    }
  }
  // Runs in the runtime's destructor: nothing here may throw (names that are not UTF-8
  // are replaced, not an error).
  std::ofstream out(path);
  try {
    out << nlohmann::json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (std::exception const& e) {
    log(log_level::info, std::string("STRATA_TRACE: could not write the trace: ") + e.what());
    return;
  }
  if (!out)
    log(log_level::info, "STRATA_TRACE: could not write " + path);
  else
    log(log_level::info, fmt::format("trace: {} events written to {}", count, path));
}

}  // namespace strata::detail
