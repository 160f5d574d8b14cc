// The threads backend: Strata's own pool (see pool.hpp). Blocks are cut into chunks that
// workers claim dynamically; launch returns at once and the event completes when the
// last chunk ends. A launch or wait from inside a running kernel helps run work, so
// nested launches (PARRAY §4's nested thread arrays) cannot deadlock.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/cpu/run.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/threads/pool.hpp>
#include <strata/exec/trace.hpp>

#include <memory>
#include <utility>

namespace strata::threads {

/// Chunks per thread: enough for dynamic balance, few enough that claiming is noise.
inline constexpr index_t chunks_per_thread = 8;

struct backend {
  static constexpr backend_id id = backend_id::threads;

  template <std::size_t D, class P, class Kernel, class Args>
  static event launch(detail::placement const& where, shape<D, P> const& s, Kernel const& k,
                      Args& args) {
    detail::check_cpu_shape(s, "threads");
    index_t const blocks = s.blocks();
    index_t chunks = where.threads * chunks_per_thread;
    if (chunks > blocks) chunks = blocks;
    // Ceiling divisions written so that they cannot overflow for grids near 2^63.
    index_t const per_chunk = blocks / chunks + (blocks % chunks != 0);
    chunks = blocks / per_chunk + (blocks % per_chunk != 0);
    auto body = [s, k, args, per_chunk, blocks](index_t c) {
      index_t b0 = c * per_chunk;
      index_t b1 = blocks - b0 > per_chunk ? b0 + per_chunk : blocks;
      Args local = args;  // chunks run concurrently: each its own copy of the arguments
      detail::run_blocks(s, b0, b1, k, local);
    };
    auto j =
        std::make_shared<detail::body_job<decltype(body)>>(chunks, where.slots, std::move(body));
    event done = j->done();
    detail::submit(std::move(j));
    return done;
  }
};

}  // namespace strata::threads
