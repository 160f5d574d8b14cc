// Starting and writing the trace, for the runtime.
#pragma once

#include <string>

namespace strata::detail {
/// Turns tracing on when `path` is not empty (or a profiler collects NVTX ranges in a
/// CUDA build). Opens the file now and throws config_error, naming the setting `source`
/// (STRATA_TRACE, runtime_options::trace), the path and the system's reason, when it
/// cannot. A process started as one of several MPI ranks writes `trace_file_of(path,
/// rank)`.
void trace_start(std::string const& path, char const* source = "STRATA_TRACE");
/// Writes the events not yet written, ends the file and turns tracing off.
void trace_finish() noexcept;
/// The file rank `rank` writes for STRATA_TRACE=`path` ("t.json" -> "t.rank1.json"); `path`
/// when `rank` is -1 (not one of several ranks).
std::string trace_file_of(std::string const& path, int rank);
}  // namespace strata::detail
