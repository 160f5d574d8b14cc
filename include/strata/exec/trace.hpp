// Tracing: STRATA_TRACE=trace.json (or runtime_options::trace) writes every kernel, copy
// and pool job as a Chrome trace event, one lane per worker thread, per waiting thread
// and per device engine (sim units and copy engine, CUDA streams; a device's lanes are
// grouped as one "process"; ranks of an MPI run write a file each, "trace.rank1.json"),
// streamed while the program runs (a crash loses at most the last 100 ms). Work a node
// or task queues on a device is linked to it by a flow arrow (Chrome flow events
// "s"/"f"); the pool's workers add counters of their steals and idle time. Open it in
// Perfetto (ui.perfetto.dev) or chrome://tracing to see what ran where, what overlapped
// and who launched it. Costs one relaxed load per event when tracing is off.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <typeinfo>

namespace strata::trace {

namespace detail {
extern std::atomic<bool> on;
/// Records a complete event on the calling thread's lane; `flow_in` (when not 0) ends the
/// flow arrow of that id at its start.
void record(std::string_view name, char const* category,
            std::chrono::steady_clock::time_point begin, std::chrono::steady_clock::time_point end,
            std::string_view detail, std::uint64_t flow_in = 0);
/// The same on the lane named `lane` in the group (trace "process") `group`, for
/// threads that record on a device's behalf (the CUDA completion worker).
void record_on(std::string_view group, std::string_view lane, std::string_view name,
               char const* category, std::chrono::steady_clock::time_point begin,
               std::chrono::steady_clock::time_point end, std::string_view detail,
               std::uint64_t flow_in);
/// Where a flow arrow may start: inside the event open on a thread (its lane, a time).
/// Nothing is written until an arrow is started from it (start_flow), so an origin that
/// leads nowhere (a deferred operation that is never queued, or ends no arrow) leaves no
/// arrow without a head in the trace.
struct flow_origin {
  int lane = -1;  // -1: none (tracing off, or no event open)
  std::int64_t at_ns = 0;
  explicit operator bool() const noexcept { return lane >= 0; }
};
/// The origin at the event open on the calling thread (a node, task, kernel or job
/// span), now; none when tracing is off or no event is open on this thread.
flow_origin origin_here();
/// Writes the tail of a new arrow at `from` and returns its id, for the event that ends
/// it (span::link_from, record's flow_in); 0 for no origin.
std::uint64_t start_flow(flow_origin const& from);
/// start_flow(origin_here()), or the origin this thread adopted (adopt_flow): for the
/// device work being queued, to end it.
std::uint64_t flow_from_here();
/// Work queued later on another thread (a launch or copy deferred until its dependencies
/// complete) keeps the arrow from where it was asked for: the deferring code takes
/// origin_here() when asked and adopts it while it queues the work, and the next
/// flow_from_here() on that thread starts the arrow there.
flow_origin exchange_adopted(flow_origin from) noexcept;
class adopt_flow {
 public:
  explicit adopt_flow(flow_origin from) noexcept : from_(from) {
    if (from_) saved_ = exchange_adopted(from_);
  }
  ~adopt_flow() {
    if (from_) exchange_adopted(saved_);
  }
  adopt_flow(adopt_flow const&) = delete;
  adopt_flow& operator=(adopt_flow const&) = delete;

 private:
  flow_origin from_;
  flow_origin saved_{};
};
/// Records sample `value` of series `series` of counter `name` (a Chrome "C" event) on
/// the calling thread's lane, now.
void counter(std::string_view name, std::string_view series, double value);
/// Span bookkeeping: how many events are open on this thread (and, in a CUDA build under
/// a profiler, the span's NVTX range).
void enter(std::string_view name) noexcept;
void leave() noexcept;
/// The readable name of a type (demangled), kept for the life of the process.
char const* type_name(std::type_info const& t);
/// strata::dist, once it knows this process's MPI rank: says so if the rank's trace file
/// was not told apart when tracing started (the launcher's environment had no rank).
void check_rank(int rank, int size) noexcept;
}  // namespace detail

inline bool enabled() noexcept {
  return detail::on.load(std::memory_order_relaxed);
}

/// Names the calling thread's lane in the trace (workers and engines name themselves);
/// lanes of one `group` (a device) are shown together, host threads form the first group.
void name_this_thread(std::string name, std::string group = {});

/// Writes the events recorded so far to the trace file now (the trace is also written
/// every 100 ms and when the runtime ends), e.g. before a step that may crash.
void flush();

/// Records [construction, destruction) as one event on the calling thread's lane.
class span {
 public:
  span(std::string_view name, char const* category, std::string_view detail = {})
      : active_(enabled()) {
    if (active_) {
      name_ = name;
      category_ = category;
      detail_ = detail;
      begin_ = std::chrono::steady_clock::now();
      detail::enter(name);
    }
  }
  ~span() {
    if (active_) {
      detail::leave();
      detail::record(name_, category_, begin_, std::chrono::steady_clock::now(), detail_, flow_in_);
    }
  }
  span(span const&) = delete;
  span& operator=(span const&) = delete;

  /// Ends the flow arrow `id` (from detail::flow_from_here) at this event.
  void link_from(std::uint64_t id) noexcept { flow_in_ = id; }

 private:
  bool active_;
  std::string_view name_;
  char const* category_ = "";
  std::string detail_;
  std::chrono::steady_clock::time_point begin_{};
  std::uint64_t flow_in_ = 0;
};

}  // namespace strata::trace
