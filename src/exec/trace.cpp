// Chrome trace events (the "Trace Event Format": complete events, ph "X", microseconds),
// buffered per thread and written once when the runtime ends.
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
};

struct lane {
  int id;
  std::string name;
  std::mutex mutex;  // the owner appends, the writer reads at the end
  std::vector<event_record> events;
};

struct tracer {
  std::mutex mutex;
  std::vector<std::shared_ptr<lane>> lanes;
  // Read by recording threads without the lock; written before tracing is switched on.
  std::atomic<std::chrono::steady_clock::rep> origin{
      std::chrono::steady_clock::now().time_since_epoch().count()};
};

tracer& the_tracer() {
  static tracer t;
  return t;
}

lane& my_lane() {
  thread_local std::shared_ptr<lane> mine = [] {
    auto& t = the_tracer();
    std::lock_guard lock(t.mutex);
    auto l = std::make_shared<lane>();
    l->id = static_cast<int>(t.lanes.size());
    l->name = "thread " + std::to_string(l->id);
    t.lanes.push_back(l);
    return l;
  }();
  return *mine;
}

}  // namespace

void record(std::string_view name, char const* category,
            std::chrono::steady_clock::time_point begin, std::chrono::steady_clock::time_point end,
            std::string_view detail) {
  auto& l = my_lane();
  auto origin = the_tracer().origin.load(std::memory_order_relaxed);
  std::lock_guard lock(l.mutex);
  l.events.push_back({std::string(name), category, begin.time_since_epoch().count() - origin,
                      end.time_since_epoch().count() - origin, std::string(detail)});
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

void name_this_thread(std::string name) {
  if (!enabled()) return;
  auto& l = detail::my_lane();
  std::lock_guard lock(l.mutex);
  l.name = std::move(name);
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
    for (auto& l : t.lanes) {
      std::lock_guard ll(l->mutex);
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", 0},
                        {"tid", l->id},
                        {"args", {{"name", l->name}}}});
      for (auto const& e : l->events) {
        nlohmann::json ev = {{"ph", "X"},
                             {"name", e.name},
                             {"cat", e.category},
                             {"pid", 0},
                             {"tid", l->id},
                             {"ts", static_cast<double>(e.begin_ns) / 1e3},
                             {"dur", static_cast<double>(e.end_ns - e.begin_ns) / 1e3}};
        if (!e.detail.empty()) ev["args"] = {{"detail", e.detail}};
        events.push_back(std::move(ev));
        ++count;
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
