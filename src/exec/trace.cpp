// Chrome trace events (the "Trace Event Format": complete events, ph "X", flow events,
// ph "s"/"f", and counters, ph "C", in microseconds), buffered per lane and streamed to
// the file: a flusher thread writes what the lanes hold every flush_period, and the
// runtime's end writes the rest. The file is in the format's JSON Array form, written
// as "[" then ",\n"-separated events, so a file cut short by a crash still loads (the
// format allows the closing "]" to be missing; a JSON parser needs it appended).
// No document is built in memory: each event is formatted into a small buffer and
// written, so a long trace costs neither a second copy nor a noexcept path that could
// terminate on bad_alloc.
#include <strata/error.hpp>
#include <strata/exec/trace.hpp>

#include "exec/cuda/nvtx.hpp"
#include "exec/trace_writer.hpp"
#include "log.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace strata::trace {
namespace detail {

std::atomic<bool> on{false};

namespace {

// How often the flusher thread writes what the lanes hold: what a crash can lose.
constexpr auto flush_period = std::chrono::milliseconds(100);

enum class kind : std::uint8_t {
  complete,  // "X": name, category, begin..end, detail; ends flow_in at begin (0: none)
  flow_out,  // "s": the tail of arrow `flow` at begin
  counter,   // "C": counter `name`, series `detail`, `value` at begin
};

struct event_record {
  kind type;
  std::string name;
  char const* category;
  std::int64_t begin_ns;
  std::int64_t end_ns;
  std::string detail;
  std::uint64_t flow;
  double value;
};

struct lane {
  int id;
  std::string name;
  std::string group;  // "" for host threads
  std::mutex mutex;   // the owner appends, the writer takes the events
  std::vector<event_record> events;
  // The writer's (under the writer's mutex): what it last wrote as this lane's metadata.
  std::string written_name;
  int written_pid = -1;
};

// The open trace file and what has been written to it (all under `mutex`).
struct writer {
  std::mutex mutex;
  std::FILE* file = nullptr;
  std::string path;
  bool first = true;    // no event written yet (the next one takes no leading comma)
  bool failed = false;  // a write failed: said once, nothing more is written
  std::size_t count = 0;
  std::map<std::string, int> pids;  // lane group -> trace pid
  int rank = -1;                    // the MPI rank of this process (-1: not one of several)
  // The flusher thread and its stop flag (under stop_mutex).
  std::thread flusher;
  std::mutex stop_mutex;
  std::condition_variable stop_cv;
  bool stop = false;
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
  // Spans also become NVTX ranges (a CUDA build under a profiler); events are buffered
  // only while `to_file`.
  std::atomic<bool> nvtx{false};
  std::atomic<bool> to_file{false};
  writer out;
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

std::shared_ptr<lane> const& my_lane_ptr() {
  thread_local std::shared_ptr<lane> mine = [] {
    auto& t = the_tracer();
    std::lock_guard lock(t.mutex);
    return new_lane(t);
  }();
  return mine;
}

lane& my_lane() {
  return *my_lane_ptr();
}

thread_local int open_events = 0;
thread_local flow_origin adopted;

void say(std::string_view message) {
  strata::detail::log(strata::detail::log_level::info, message);
}

bool buffering() noexcept {
  return the_tracer().to_file.load(std::memory_order_relaxed);
}

void append(lane& l, event_record e) {
  std::lock_guard lock(l.mutex);
  l.events.push_back(std::move(e));
}

std::int64_t since_origin(std::chrono::steady_clock::time_point t) {
  return t.time_since_epoch().count() - the_tracer().origin.load(std::memory_order_relaxed);
}

// --- writing ------------------------------------------------------------------------------

// A JSON string literal: quotes, backslashes and control characters escaped, and bytes
// that are not UTF-8 replaced by U+FFFD (a kernel name is whatever the compiler said).
void put_string(std::string& out, std::string_view s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    auto const c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20) {
        fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // The length of a well-formed sequence starting here (0: not one).
    std::size_t n = c >= 0xc2 && c <= 0xdf   ? 2
                    : c >= 0xe0 && c <= 0xef ? 3
                    : c >= 0xf0 && c <= 0xf4 ? 4
                                             : 0;
    if (n && i + n <= s.size()) {
      for (std::size_t k = 1; k < n; ++k)
        if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) n = 0;
    } else {
      n = 0;
    }
    if (n) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out += '"';
}

// Under w.mutex: starts the next event (the separator, then the event's opening).
void open_event(writer& w, std::string& out) {
  out += w.first ? "\n{" : ",\n{";
  w.first = false;
  ++w.count;
}

void put_metadata(writer& w, std::string& out, char const* what, int pid, int tid,
                  std::string_view name) {
  open_event(w, out);
  fmt::format_to(std::back_inserter(out), "\"ph\":\"M\",\"name\":\"{}\",\"pid\":{}", what, pid);
  if (tid >= 0) fmt::format_to(std::back_inserter(out), ",\"tid\":{}", tid);
  out += ",\"args\":{\"name\":";
  put_string(out, name);
  out += "}}";
}

std::string rank_prefix(writer const& w) {
  return w.rank >= 0 ? fmt::format("rank {} ", w.rank) : std::string();
}

// Under w.mutex: the trace process of a lane group (announced when first seen). One per
// group: the host's threads, then each device. Ranks of one run get disjoint pids, so
// their files can be loaded together.
int pid_of(writer& w, std::string& out, std::string const& group) {
  auto [it, fresh] = w.pids.try_emplace(group, static_cast<int>(w.pids.size()));
  int const pid = (w.rank >= 0 ? w.rank * 1000 : 0) + it->second;
  if (fresh)
    put_metadata(w, out, "process_name", pid, -1,
                 rank_prefix(w) + (group.empty() ? "host" : group));
  return pid;
}

void put_event(writer& w, std::string& out, event_record const& e, int pid, int tid) {
  double const ts = static_cast<double>(e.begin_ns) / 1e3;
  auto o = std::back_inserter(out);
  switch (e.type) {
    case kind::flow_out:
      // The arrow's tail, bound to the event enclosing it on this lane.
      open_event(w, out);
      fmt::format_to(o,
                     "\"ph\":\"s\",\"name\":\"launch\",\"cat\":\"flow\",\"id\":{},\"pid\":{},"
                     "\"tid\":{},\"ts\":{:.3f}}}",
                     e.flow, pid, tid, ts);
      return;
    case kind::counter:
      open_event(w, out);
      out += "\"ph\":\"C\",\"name\":";
      put_string(out, e.name);
      fmt::format_to(o, ",\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"args\":{{", pid, tid, ts);
      put_string(out, e.detail);
      fmt::format_to(o, ":{}}}}}", e.value);
      return;
    case kind::complete:
      open_event(w, out);
      out += "\"ph\":\"X\",\"name\":";
      put_string(out, e.name);
      out += ",\"cat\":";
      put_string(out, e.category);
      fmt::format_to(o, ",\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f}", pid, tid, ts,
                     static_cast<double>(e.end_ns - e.begin_ns) / 1e3);
      if (!e.detail.empty()) {
        out += ",\"args\":{\"detail\":";
        put_string(out, e.detail);
        out += '}';
      }
      out += '}';
      if (e.flow) {
        // The arrow's head: "bp":"e" binds it to the event starting here.
        open_event(w, out);
        fmt::format_to(o,
                       "\"ph\":\"f\",\"bp\":\"e\",\"name\":\"launch\",\"cat\":\"flow\",\"id\":{},"
                       "\"pid\":{},\"tid\":{},\"ts\":{:.3f}}}",
                       e.flow, pid, tid, ts);
      }
      return;
  }
}

// Under w.mutex: writes `text` and flushes it to the OS (a crash of this process loses
// nothing written). A failure is reported once, and the trace stops there.
void put_out(writer& w, std::string const& text) {
  if (w.failed || text.empty()) return;
  if (std::fwrite(text.data(), 1, text.size(), w.file) != text.size() || std::fflush(w.file) != 0) {
    w.failed = true;
    say(fmt::format("STRATA_TRACE: could not write {}: {}; the trace ends here", w.path,
                    std::strerror(errno)));
  }
}

// Writes every lane's buffered events to the file. Each lane is emptied under its own
// lock and written outside it: recording threads wait for a swap, never for the disk.
void flush_lanes(tracer& t) {
  auto& w = t.out;
  std::lock_guard write_lock(w.mutex);
  if (!w.file || w.failed) return;
  std::vector<std::shared_ptr<lane>> lanes;
  {
    std::lock_guard lock(t.mutex);
    lanes = t.lanes;
  }
  std::string out;
  std::vector<event_record> events;
  for (auto& l : lanes) {
    std::string name, group;
    {
      std::lock_guard ll(l->mutex);
      events.swap(l->events);
      name = l->name;
      group = l->group;
    }
    if (events.empty() && l->written_pid < 0) continue;  // a lane that never recorded
    int const pid = pid_of(w, out, group);
    if (pid != l->written_pid || name != l->written_name) {
      put_metadata(w, out, "thread_name", pid, l->id, name);
      l->written_pid = pid;
      l->written_name = name;
    }
    for (auto const& e : events) put_event(w, out, e, pid, l->id);
    events.clear();
    // Written lane by lane: the text held at once stays one lane's worth.
    put_out(w, out);
    out.clear();
  }
}

void flusher_main(tracer& t) {
  auto& w = t.out;
  std::unique_lock lock(w.stop_mutex);
  while (!w.stop_cv.wait_for(lock, flush_period, [&] { return w.stop; })) {
    lock.unlock();
    try {
      flush_lanes(t);
    } catch (std::exception const& e) {
      // Out of memory formatting: the events stay lost, the program goes on.
      say(std::string("STRATA_TRACE: could not write the trace: ") + e.what());
    }
    lock.lock();
  }
}

// The rank of this process when a launcher started it as one of several MPI ranks
// (Open MPI, MPICH/Hydra, PMIx, Slurm), else -1. Read when tracing starts, before MPI is
// initialized, so each rank opens a file of its own.
int launcher_rank() {
  static constexpr std::pair<char const*, char const*> vars[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"PMI_RANK", "PMI_SIZE"},
      {"PMIX_RANK", nullptr},
      {"SLURM_PROCID", "SLURM_NTASKS"}};
  for (auto [rank, size] : vars) {
    char const* r = std::getenv(rank);
    if (!r || !*r) continue;
    char const* s = size ? std::getenv(size) : nullptr;
    if (s && std::atoi(s) == 1) return -1;  // one rank: a plain run
    return std::atoi(r);
  }
  return -1;
}

}  // namespace

void record(std::string_view name, char const* category,
            std::chrono::steady_clock::time_point begin, std::chrono::steady_clock::time_point end,
            std::string_view detail, std::uint64_t flow_in) {
  if (!buffering()) return;
  append(my_lane(), {kind::complete, std::string(name), category, since_origin(begin),
                     since_origin(end), std::string(detail), flow_in, 0});
}

void record_on(std::string_view group, std::string_view lane_name, std::string_view name,
               char const* category, std::chrono::steady_clock::time_point begin,
               std::chrono::steady_clock::time_point end, std::string_view detail,
               std::uint64_t flow_in) {
  if (!buffering()) return;
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
  append(*l, {kind::complete, std::string(name), category, since_origin(begin), since_origin(end),
              std::string(detail), flow_in, 0});
}

void counter(std::string_view name, std::string_view series, double value) {
  if (!buffering()) return;
  auto const now = since_origin(std::chrono::steady_clock::now());
  append(my_lane(),
         {kind::counter, std::string(name), "", now, now, std::string(series), 0, value});
}

flow_origin origin_here() {
  if (!enabled() || !buffering() || open_events == 0) return {};
  return {my_lane().id, since_origin(std::chrono::steady_clock::now())};
}

std::uint64_t start_flow(flow_origin const& from) {
  if (!from || !buffering()) return 0;
  auto& t = the_tracer();
  std::shared_ptr<lane> l;
  {
    std::lock_guard lock(t.mutex);
    if (static_cast<std::size_t>(from.lane) >= t.lanes.size()) return 0;
    l = t.lanes[static_cast<std::size_t>(from.lane)];
  }
  auto id = t.next_flow.fetch_add(1, std::memory_order_relaxed);
  append(*l, {kind::flow_out, {}, "flow", from.at_ns, from.at_ns, {}, id, 0});
  return id;
}

std::uint64_t flow_from_here() {
  if (!enabled()) return 0;
  if (adopted) return start_flow(std::exchange(adopted, flow_origin{}));  // one per operation
  return start_flow(origin_here());
}

flow_origin exchange_adopted(flow_origin from) noexcept {
  return std::exchange(adopted, from);
}

void enter(std::string_view name) noexcept {
  ++open_events;
  if (the_tracer().nvtx.load(std::memory_order_relaxed)) strata::detail::nvtx_push(name);
}
void leave() noexcept {
  --open_events;
  if (the_tracer().nvtx.load(std::memory_order_relaxed)) strata::detail::nvtx_pop();
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

void check_rank(int rank, int size) noexcept {
  auto& w = the_tracer().out;
  std::lock_guard lock(w.mutex);
  if (!w.file || size <= 1 || w.rank == rank) return;
  say(
      fmt::format("STRATA_TRACE: MPI rank {} of {} was not told by its launcher's environment "
                  "(OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID) when tracing "
                  "started; the ranks may write over each other's trace in {}",
                  rank, size, w.path));
}

}  // namespace detail

void name_this_thread(std::string name, std::string group) {
  if (!enabled()) return;
  auto const& mine = detail::my_lane_ptr();
  {
    // Other threads that record on this lane's behalf (record_on with the same group and
    // name: a waiter that runs a sim transfer for its engine) find this lane.
    auto& t = detail::the_tracer();
    std::lock_guard lock(t.mutex);
    auto& named = t.named[{group, name}];
    if (!named) named = mine;
  }
  std::lock_guard lock(mine->mutex);
  mine->name = std::move(name);
  mine->group = std::move(group);
}

void flush() {
  if (!enabled()) return;
  detail::flush_lanes(detail::the_tracer());
}

}  // namespace strata::trace

namespace strata::detail {

std::string trace_file_of(std::string const& path, int rank) {
  if (rank < 0) return path;
  std::filesystem::path p(path);
  auto name = p.stem().string() + ".rank" + std::to_string(rank) + p.extension().string();
  return (p.parent_path() / name).string();
}

void trace_start(std::string const& path, char const* source) {
  using namespace trace::detail;
  auto& t = the_tracer();
  // Profilers that collect NVTX ranges (Nsight Systems, Nsight Compute) load their
  // collector through this variable; the spans are their ranges then, with or without
  // a trace file.
  bool const nvtx = nvtx_available() && std::getenv("NVTX_INJECTION64_PATH");
  if (path.empty() && !nvtx) return;
  auto& w = t.out;
  if (!path.empty()) {
    int const rank = launcher_rank();
    auto const file = trace_file_of(path, rank);
    // Opened now, so a path that cannot be written fails the runtime's start, not
    // silently its end.
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(file.c_str(), "w"), &std::fclose);
    if (!f)
      throw config_error(
          fmt::format("{}=\"{}\": cannot write the trace file{}: {}", source, path,
                      file == path ? std::string() : fmt::format(" \"{}\" (this rank's)", file),
                      std::strerror(errno)));
    {
      // Lock order, as in flush_lanes: the writer, the lane list, a lane.
      std::lock_guard lock(w.mutex);
      {
        std::lock_guard lanes_lock(t.mutex);
        for (auto& l : t.lanes) {
          std::lock_guard ll(l->mutex);
          l->events.clear();
          l->written_pid = -1;
          l->written_name.clear();
        }
        t.origin.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                       std::memory_order_relaxed);
      }
      w.path = file;
      w.file = f.release();  // the writer's now (trace_finish closes it)
      w.first = true;
      w.failed = false;
      w.count = 0;
      w.pids.clear();
      w.rank = rank;
      put_out(w, "[");
    }
    t.to_file.store(true, std::memory_order_relaxed);
    {
      std::lock_guard lock(w.stop_mutex);
      w.stop = false;
    }
    try {
      w.flusher = std::thread([&t] { flusher_main(t); });
    } catch (std::system_error const& e) {
      // Without the thread the trace is written at the end only.
      log(log_level::info, std::string("STRATA_TRACE: no flusher thread (") + e.what() +
                               "); the trace is written when the runtime ends");
    }
  }
  t.nvtx.store(nvtx, std::memory_order_relaxed);
  trace::detail::on.store(true, std::memory_order_release);
}

void trace_finish() noexcept {
  using namespace trace::detail;
  if (!trace::enabled()) return;
  trace::detail::on.store(false, std::memory_order_relaxed);
  auto& t = the_tracer();
  t.nvtx.store(false, std::memory_order_relaxed);
  auto& w = t.out;
  if (w.flusher.joinable()) {
    {
      std::lock_guard lock(w.stop_mutex);
      w.stop = true;
    }
    w.stop_cv.notify_all();
    w.flusher.join();
  }
  try {
    flush_lanes(t);
  } catch (std::exception const& e) {
    log(log_level::info, std::string("STRATA_TRACE: could not write the trace: ") + e.what());
  }
  t.to_file.store(false, std::memory_order_relaxed);
  std::lock_guard lock(w.mutex);
  if (!w.file) return;
  put_out(w, "\n]\n");
  bool const closed = std::fclose(w.file) == 0;
  w.file = nullptr;
  if (!closed && !w.failed)
    log(log_level::info,
        fmt::format("STRATA_TRACE: could not write {}: {}", w.path, std::strerror(errno)));
  else if (!w.failed)
    log(log_level::info, fmt::format("trace: {} events written to {}", w.count, w.path));
}

}  // namespace strata::detail
