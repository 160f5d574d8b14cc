// Tracing: STRATA_TRACE=trace.json (or runtime_options::trace) writes every kernel, copy
// and pool job as a Chrome trace event, one lane per worker thread, per waiting thread
// and per sim device engine, when the runtime ends. Open it in Perfetto
// (ui.perfetto.dev) or chrome://tracing to see what ran where and what overlapped.
// Costs one relaxed load per event when tracing is off.
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
void record(std::string_view name, char const* category,
            std::chrono::steady_clock::time_point begin, std::chrono::steady_clock::time_point end,
            std::string_view detail);
/// The readable name of a type (demangled), kept for the life of the process.
char const* type_name(std::type_info const& t);
}  // namespace detail

inline bool enabled() noexcept {
  return detail::on.load(std::memory_order_relaxed);
}

/// Names the calling thread's lane in the trace (workers and engines name themselves).
void name_this_thread(std::string name);

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
    }
  }
  ~span() {
    if (active_)
      detail::record(name_, category_, begin_, std::chrono::steady_clock::now(), detail_);
  }
  span(span const&) = delete;
  span& operator=(span const&) = delete;

 private:
  bool active_;
  std::string_view name_;
  char const* category_ = "";
  std::string detail_;
  std::chrono::steady_clock::time_point begin_{};
};

}  // namespace strata::trace
