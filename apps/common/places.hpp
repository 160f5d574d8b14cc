// Choosing and describing the places an application spreads over (Phalanx §III-A: the
// machine is a tree of places; an application slices it). Shared by the SpMV and BFS apps.
#pragma once

#include <strata/strata.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace apps {

/// The places a name stands for: "host" (every host PU as one place), "host:K" (the host
/// PUs split into K places of consecutive PUs), "sim" (every sim device), "host+sim" (both).
/// A backend may follow a host name after '@' ("host@openmp", "host:2@serial").
/// strata::invalid_argument names what is wrong: an unknown name, K larger than the PUs,
/// "sim" on a machine without sim devices.
std::vector<strata::target> places_named(strata::place const& machine, std::string const& name);

/// True for a device place (sim, CUDA): its memory is not the host's.
bool is_device(strata::place const& p);
/// The threads a launch on `t` runs on: host PUs (1 for the serial backend), or a device's
/// compute units.
int place_threads(strata::target const& t);
/// The share of work `p` should get: its processors times its speed (sim's speed factor).
double place_share(strata::place const& p);
/// The smallest level-2 cache above the host PUs of `p`, in bytes; 0 when the machine
/// model names none (a device, or hwloc without cache information).
std::uint64_t place_l2_bytes(strata::place const& p);
/// The id of a host memory of p's machine, to wrap host arrays as strata::ptr for copies.
std::uint32_t host_memory_id(strata::place const& p);
/// A host array as a strata::ptr, for copies to and from devices.
template <class T>
strata::ptr<T, strata::host_space> host_ptr(T* p, std::uint32_t memory) {
  return strata::ptr<T, strata::host_space>(p, memory);
}
/// "host[PU 0-1]", "sim0": a short name for output.
std::string describe(strata::target const& t);

}  // namespace apps
