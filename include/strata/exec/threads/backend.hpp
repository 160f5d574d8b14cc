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
    detail::chunking plan(s.blocks(), where.threads, chunks_per_thread);
    auto body = detail::chunk_body(s, k, args, plan);
    auto j = std::make_shared<detail::body_job<decltype(body)>>(
        plan.chunks, where.slots, std::move(body),
        trace::enabled() ? trace::detail::type_name(typeid(Kernel)) : "kernel");
    event done = j->done();
    detail::submit(std::move(j));
    return done;
  }
};

}  // namespace strata::threads
