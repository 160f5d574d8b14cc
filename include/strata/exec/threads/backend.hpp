// The threads backend: Strata's own pool (see pool.hpp). Blocks are cut into chunks that
// workers claim dynamically; launch returns at once and the event completes when the
// last chunk ends. A launch or wait from inside a running kernel helps run work, so
// nested launches (PARRAY §4's nested thread arrays) cannot deadlock.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/kernel_body.hpp>
#include <strata/vec.hpp>

#include <cstddef>
#include <memory>
#include <typeinfo>

namespace strata::threads {

/// Chunks per thread: enough for dynamic balance, few enough that claiming is noise.
inline constexpr index_t chunks_per_thread = 8;

/// Room for a kernel_body inside the pool's job of a launch, so that a launch is one
/// allocation as it was when each kernel had a job type of its own (a second one cost 150
/// instructions and about 60 ns of a 270 ns launch+wait on one PU).
inline constexpr std::size_t job_body_bytes = 256;
/// Builds a launch's kernel_body at `at` (job_body_bytes, aligned as std::max_align_t) from
/// what `parts` points to.
using body_builder = detail::kernel_body* (*)(void* at, void* parts);

struct backend {
  static constexpr backend_id id = backend_id::threads;

  /// Queues `body`'s blocks on the pool's PUs of `where` in about chunks_per_thread
  /// chunks per thread; returns at once (src/exec/cpu/launch.cpp).
  static event launch(detail::placement const& where,
                      std::shared_ptr<detail::kernel_body const> body);
  /// The same for a body of `blocks` blocks of kernel type `kernel` that `build` makes
  /// inside the job from `parts` (a body of at most job_body_bytes).
  static event launch(detail::placement const& where, index_t blocks, std::type_info const& kernel,
                      body_builder build, void* parts);
};

}  // namespace strata::threads
