// Running a range of blocks on one CPU thread: shared by the serial, threads and openmp
// backends. Streaming blocks are plain loops; parallel blocks run their threads as fibers
// (barrier() switches fibers) or, for phase-split kernels, phase by phase.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/cpu/context.hpp>
#include <strata/exec/domain.hpp>
#include <strata/exec/phases.hpp>
#include <strata/exec/shape.hpp>

#include <cstddef>
#include <new>
#include <tuple>
#include <utility>

// GCC 12 at -O2 and -O3 deleted whole CPU launches: the threads and sim backends' chunk
// bodies (since session 63 kernel_body_of::run and inline_parts::run, launch.hpp, for every
// CPU backend) copy the launch's arguments into a local and call run_blocks with it, and dce2
// dropped the call (or, with run_blocks opaque, run_blocks' own call of run_streaming), as
// if the kernel's stores through the copied pointers had no effect; disabling GCC's IPA
// summaries (modref and pure-const together) avoids it, and so does -fno-tree-sra.
// Found by an outside probe: a kernel writing SoA record cells through `auto o = *it`
// wrote nothing (tests/tensor/record_o2_test.cpp; docs/records.md, "A GCC 12
// miscompile", has this and two earlier instances). `noipa` keeps every caller from
// using a summary of the functions that run a launch's blocks; each stays one call per
// chunk (not per cell: the kernels are still inlined into their loops).
#if defined(__GNUC__) && !defined(__clang__)
#define STRATA_RUN_BLOCKS_OPAQUE __attribute__((noipa))
#else
#define STRATA_RUN_BLOCKS_OPAQUE
#endif

namespace strata::detail {

/// Thread-local scratch storage for one block, reused from block to block. Frames nest
/// (a kernel that waits may run another block on the same thread), each at its depth.
class scratch_frame {
 public:
  explicit scratch_frame(std::size_t bytes);
  ~scratch_frame();
  scratch_frame(scratch_frame const&) = delete;
  scratch_frame& operator=(scratch_frame const&) = delete;
  std::byte* data() const noexcept { return data_; }

 private:
  std::byte* data_;
};

/// Runs blocks [b0, b1) of `threads` threads each as `threads` fibers that take the
/// blocks in turn: body(ctx, b0, thread) runs the kernel for one thread of block b0, then
/// calls fiber_pass(fiber_arrival::block_end), which returns the fiber's next block (or
/// -1: body returns). barrier() inside switches to the next fiber; a block begins once all
/// threads ended the one before (with vars->next_block()). Rethrows the first exception a
/// thread threw; throws strata::error if some threads return while others wait at a
/// barrier (the block would hang on a GPU).
void run_fiber_blocks(index_t threads, index_t b0, index_t b1,
                      void (*body)(void*, index_t, index_t, fiber_state*), void* ctx,
                      block_vars* vars);

/// Limit on threads of one parallel CPU block (fibers are cheap but not free).
inline constexpr index_t cpu_max_parallel_block = 1024;

/// Throws invalid_argument for a parallel block of more threads than a CPU backend runs as
/// fibers (the limit above); `backend` names the backend in the message.
[[noreturn]] void cpu_block_too_large(index_t threads, backend_id backend);

template <std::size_t D, class P>
void check_cpu_shape(shape<D, P> const& s, backend_id backend) {
  if constexpr (is_parallel_v<P>) {
    if (s.threads_per_block() > cpu_max_parallel_block)
      cpu_block_too_large(s.threads_per_block(), backend);
  } else {
    (void)s;
    (void)backend;
  }
}

template <class Kernel, class Self, class Args, std::size_t... I>
inline void call_kernel(Kernel const& k, Self const& self, Args& args, std::index_sequence<I...>) {
  k(self, std::get<I>(args)...);
}

// Streaming blocks: every thread of every block, in order, on this thread.
template <std::size_t D, class Kernel, class Args>
STRATA_RUN_BLOCKS_OPAQUE void run_streaming(shape<D, streaming_group> const& s, index_t b0,
                                            index_t b1, Kernel const& k, Args& args) {
  using ctx_t = cpu_context<D, no_sync>;
  using seq = std::make_index_sequence<std::tuple_size_v<Args>>;
  ctx_t ctx{s.grid_extent(), s.block_extent(), s.element_extent(), {}, {}};
  if (s.threads_per_block() == 1) {
    ctx.thread_idx = vec<D>::fill(0);
    for (index_t b = b0; b < b1; ++b) {
      if constexpr (D == 1)
        ctx.block_idx = vec<1>{b};
      else
        ctx.block_idx = delinearize(b, s.grid_extent());
      call_kernel(k, domain<D, streaming_group, ctx_t>(ctx), args, seq{});
    }
    return;
  }
  index_t const threads = s.threads_per_block();
  for (index_t b = b0; b < b1; ++b) {
    ctx.block_idx = delinearize(b, s.grid_extent());
    for (index_t t = 0; t < threads; ++t) {
      ctx.thread_idx = delinearize(t, s.block_extent());
      call_kernel(k, domain<D, streaming_group, ctx_t>(ctx), args, seq{});
    }
  }
}

// Parallel blocks with barrier(): fibers (or a direct call for one-thread blocks).
template <std::size_t D, class Kernel, class Args>
STRATA_RUN_BLOCKS_OPAQUE void run_fibers(shape<D, parallel_group> const& s, index_t b0, index_t b1,
                                         Kernel const& k, Args& args) {
  using seq = std::make_index_sequence<std::tuple_size_v<Args>>;
  scratch_frame frame(s.scratchpad_bytes());
  block_vars vars;
  index_t const threads = s.threads_per_block();
  if (threads == 1) {
    for (index_t b = b0; b < b1; ++b) {
      vars.next_block();
      cpu_context<D, single_sync> ctx{s.grid_extent(),
                                      s.block_extent(),
                                      s.element_extent(),
                                      delinearize(b, s.grid_extent()),
                                      vec<D>::fill(0),
                                      {},
                                      frame.data(),
                                      s.scratchpad_bytes(),
                                      0,
                                      &vars};
      call_kernel(k, domain<D, parallel_group, decltype(ctx)>(ctx), args, seq{});
    }
    return;
  }
  struct closure {
    shape<D, parallel_group> const* s;
    std::byte* scratch;
    block_vars* vars;
    Kernel const* k;
    Args* args;
  } c{&s, frame.data(), &vars, &k, &args};
  run_fiber_blocks(
      threads, b0, b1,
      [](void* p, index_t b, index_t t, fiber_state* fb) {
        // One context per fiber for its whole range: only the block index changes.
        auto& cl = *static_cast<closure*>(p);
        cpu_context<D, fiber_sync> ctx{cl.s->grid_extent(),
                                       cl.s->block_extent(),
                                       cl.s->element_extent(),
                                       delinearize(b, cl.s->grid_extent()),
                                       delinearize(t, cl.s->block_extent()),
                                       fiber_sync{fb},
                                       cl.scratch,
                                       cl.s->scratchpad_bytes(),
                                       0,
                                       cl.vars};
        for (;;) {
          call_kernel(*cl.k, domain<D, parallel_group, cpu_context<D, fiber_sync>>(ctx), *cl.args,
                      std::make_index_sequence<std::tuple_size_v<Args>>{});
          b = fiber_pass(fb, fiber_arrival::block_end);
          if (b < 0) return;
          ctx.block_idx = delinearize(b, cl.s->grid_extent());
          ctx.scratchpad_used = 0;
        }
      },
      &c, &vars);
}

// Phase-split blocks: each phase is a loop over the block's threads.
template <std::size_t D, class State, class... Phases, class Args>
STRATA_RUN_BLOCKS_OPAQUE void run_phases(shape<D, parallel_group> const& s, index_t b0, index_t b1,
                                         phased_kernel<State, Phases...> const& k, Args& args) {
  using ctx_t = cpu_context<D, phase_sync>;
  index_t const threads = s.threads_per_block();
  std::size_t const scratch =
      (s.scratchpad_bytes() + alignof(State) - 1) / alignof(State) * alignof(State);
  scratch_frame frame(scratch + static_cast<std::size_t>(threads) * sizeof(State));
  auto* states = reinterpret_cast<State*>(frame.data() + scratch);
  static_assert(alignof(State) <= 64, "phases: State may be aligned to at most 64 bytes");
  block_vars vars;
  for (index_t b = b0; b < b1; ++b) {
    vars.next_block();
    index_t built = 0;
    try {
      for (; built < threads; ++built) new (states + built) State{};
    } catch (...) {
      for (index_t t = 0; t < built; ++t) states[t].~State();
      throw;
    }
    ctx_t ctx{s.grid_extent(),
              s.block_extent(),
              s.element_extent(),
              delinearize(b, s.grid_extent()),
              {},
              {},
              frame.data(),
              s.scratchpad_bytes(),
              0,
              &vars};
    auto run_phase = [&](auto const& phase) {
      for (index_t t = 0; t < threads; ++t) {
        ctx.thread_idx = delinearize(t, s.block_extent());
        ctx.scratchpad_used = 0;
        std::apply(
            [&](auto&... a) { phase(domain<D, parallel_group, ctx_t>(ctx), states[t], a...); },
            args);
      }
    };
    try {
      std::apply([&](auto const&... phase) { (run_phase(phase), ...); }, k.phases);
    } catch (...) {
      for (index_t t = 0; t < threads; ++t) states[t].~State();
      throw;
    }
    for (index_t t = 0; t < threads; ++t) states[t].~State();
  }
}

/// A launch's blocks cut into about `per_thread` chunks per thread, for dynamic hand-out
/// (the threads pool, sim units). Ceiling divisions are written so that they cannot
/// overflow for grids near 2^63.
struct chunking {
  index_t blocks;
  index_t per_chunk;
  index_t chunks;

  chunking(index_t total_blocks, index_t threads, index_t per_thread) : blocks(total_blocks) {
    index_t wanted = threads * per_thread;
    if (wanted > blocks) wanted = blocks;
    per_chunk = blocks / wanted + (blocks % wanted != 0);
    chunks = blocks / per_chunk + (blocks % per_chunk != 0);
  }
  index_t first(index_t c) const noexcept { return c * per_chunk; }
  index_t last(index_t c) const noexcept {
    index_t b0 = first(c);
    return blocks - b0 > per_chunk ? b0 + per_chunk : blocks;
  }
};

/// Runs blocks [b0, b1) of a launch on the calling thread.
template <std::size_t D, class P, class Kernel, class Args>
STRATA_RUN_BLOCKS_OPAQUE void run_blocks(shape<D, P> const& s, index_t b0, index_t b1,
                                         Kernel const& k, Args& args) {
  if constexpr (is_phased_kernel_v<Kernel>) {
    static_assert(is_parallel_v<P>,
                  "phases: a phase-split kernel needs parallel blocks, "
                  "shape.block(strata::parallel, ...)");
    run_phases(s, b0, b1, k, args);
  } else if constexpr (is_parallel_v<P>) {
    run_fibers(s, b0, b1, k, args);
  } else {
    run_streaming(s, b0, b1, k, args);
  }
}

}  // namespace strata::detail
