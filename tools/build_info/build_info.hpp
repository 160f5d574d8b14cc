// What this build of Strata's tools is: for the metadata line of `strata bench --json`
// and the software table of `strata report` (docs/bench.md).
#pragma once

#include <string>

namespace strata::build_info {

/// `git describe --always --dirty` at build time ("unknown" outside a git checkout).
std::string commit();
/// Compiler id and version, e.g. "GNU 12.2.0".
std::string compiler();
/// CMAKE_BUILD_TYPE, e.g. "RelWithDebInfo".
std::string build_type();
/// The C++ flags of the build type (targets may add their own, as the benchmarks do).
std::string cxx_flags();
/// The library's version (strata::version()).
std::string strata_version();

}  // namespace strata::build_info
