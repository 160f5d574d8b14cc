// Tracing: STRATA_TRACE=trace.json (or runtime_options::trace) writes every kernel, copy
// and pool job as a Chrome trace event, one lane per worker thread, per waiting thread
// and per device engine (sim units and copy engine, CUDA streams; a device's lanes are
// grouped as one "process"), when the runtime ends. Work a node or task queues on a
// device is linked to it by a flow arrow (Chrome flow events "s"/"f"). Open it in
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
/// Starts a flow arrow at the event open on the calling thread (a node, task, kernel or
/// job span) and returns its id, for the device work being queued to end it. 0 when
/// tracing is off or no event is open on this thread (nothing to link from).
std::uint64_t flow_from_here();
/// Work queued later on another thread (a launch or copy deferred until its dependencies
/// complete) keeps the arrow from where it was asked for: the deferring code takes
/// flow_from_here() when asked and adopts it while it queues the work, and the next
/// flow_from_here() on that thread returns it.
std::uint64_t exchange_adopted(std::uint64_t id) noexcept;
class adopt_flow {
 public:
  explicit adopt_flow(std::uint64_t id) noexcept : id_(id) {
    if (id_) saved_ = exchange_adopted(id_);
  }
  ~adopt_flow() {
    if (id_) exchange_adopted(saved_);
  }
  adopt_flow(adopt_flow const&) = delete;
  adopt_flow& operator=(adopt_flow const&) = delete;

 private:
  std::uint64_t id_;
  std::uint64_t saved_ = 0;
};
/// Span bookkeeping: how many events are open on this thread.
void enter() noexcept;
void leave() noexcept;
/// The readable name of a type (demangled), kept for the life of the process.
char const* type_name(std::type_info const& t);
}  // namespace detail

inline bool enabled() noexcept {
  return detail::on.load(std::memory_order_relaxed);
}

/// Names the calling thread's lane in the trace (workers and engines name themselves);
/// lanes of one `group` (a device) are shown together, host threads form the first group.
void name_this_thread(std::string name, std::string group = {});

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
      detail::enter();
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
