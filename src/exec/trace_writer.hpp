// Starting and writing the trace, for the runtime.
#pragma once

#include <string>

namespace strata::detail {
/// Turns tracing on when `path` is not empty.
void trace_start(std::string const& path);
/// Writes the events recorded since trace_start to `path` and turns tracing off.
void trace_finish(std::string const& path) noexcept;
}  // namespace strata::detail
