// Backends and launch targets. A launch goes to a place; the backend is chosen at run
// time from the place's ISA (host places use the runtime's default CPU backend) among
// the backends compiled in, or named explicitly with strata::on(place, backend).
#pragma once

#include <strata/machine/place.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace strata {

enum class backend_id : std::uint8_t { serial, threads, openmp, cuda, sim };

std::string_view to_string(backend_id b) noexcept;
std::optional<backend_id> parse_backend(std::string_view text) noexcept;

/// Where a launch runs: a place, and optionally the backend to use there.
struct target {
  place where;
  std::optional<backend_id> backend;

  target(place p) : where(std::move(p)) {}  // NOLINT: a place is a target
  target(place p, backend_id b) : where(std::move(p)), backend(b) {}
};

/// strata::on(place, strata::backend_id::openmp): a place with an explicit backend.
inline target on(place p, backend_id b) {
  return target(std::move(p), b);
}

namespace detail {

struct slot_set;

/// What a launch needs to know about its target, checked and resolved once.
struct placement {
  backend_id backend;
  int threads;                // processors the backend runs the launch on (its parallelism)
  slot_set const* slots;      // which of the pool's slots (host PUs) may run its blocks
  int device = -1;            // the device's index among its kind (sim, CUDA)
  std::uint32_t memory = 0;   // the id of that device's memory place
  std::uint64_t devices = 0;  // CUDA: the ordinals of the GPUs the launch spreads over
};

/// Validates the target against the live runtime and picks the backend. Throws
/// strata::error (no runtime), invalid_argument (a place of another machine, a memory
/// place, a place without processors for the backend) or not_supported (a backend not
/// compiled in, or none yet for the place's ISA). Host places go to a CPU backend, places
/// in a sim device to its sim backend.
placement resolve(target const& t);

}  // namespace detail
}  // namespace strata
