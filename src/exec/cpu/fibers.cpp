// Parallel CPU blocks as cooperatively switched fibers (Boost.Context): barrier() saves
// the thread's registers and switches to the next thread of the block, so a block of B
// threads runs on one OS thread in rounds, one round per barrier.
#include <strata/error.hpp>
#include <strata/exec/cpu/run.hpp>

#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif
// Under ThreadSanitizer this file itself is compiled uninstrumented (src/CMakeLists.txt):
// Boost's inline switch code would otherwise unbalance TSan's shadow call stacks. The
// annotations below still tell TSan about every switch, so the kernels stay checked.
#if defined(__SANITIZE_THREAD__) || defined(STRATA_TSAN_FIBERS)
#define STRATA_TSAN_ANNOTATE 1
#include <sanitizer/tsan_interface.h>
#else
#define STRATA_TSAN_ANNOTATE 0
#endif

namespace strata::detail {
namespace ctx = boost::context;

namespace {

// Small stacks with a guard page, kept per OS thread and reused from block to block so
// that a block costs no mmap. A kernel that overflows hits the guard page, not memory.
constexpr std::size_t fiber_stack_size = 128 * 1024;

struct stack_cache {
  ctx::protected_fixedsize_stack make{fiber_stack_size};
  std::vector<ctx::stack_context> free;
  ~stack_cache() {
    for (auto& s : free) make.deallocate(s);
  }
};
thread_local stack_cache stacks;

// A Boost.Context stack allocator over the cache that also reports the stack it gave.
struct cached_stack {
  ctx::stack_context* given;
  ctx::stack_context allocate() {
    ctx::stack_context s;
    if (stacks.free.empty()) {
      s = stacks.make.allocate();
    } else {
      s = stacks.free.back();
      stacks.free.pop_back();
    }
    *given = s;
    return s;
  }
  void deallocate(ctx::stack_context& s) noexcept { stacks.free.push_back(s); }
};

// The sanitizers must be told about every stack switch: Boost 1.74's default fcontext
// switch is invisible to them. These are no-ops in other builds.
struct switch_marks {
  void* asan_fake = nullptr;
  void* tsan_fiber = nullptr;
};

inline void start_switch([[maybe_unused]] switch_marks* from, [[maybe_unused]] bool dying,
                         [[maybe_unused]] void const* bottom, [[maybe_unused]] std::size_t size,
                         [[maybe_unused]] void* tsan_to) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(dying ? nullptr : &from->asan_fake, bottom, size);
#endif
#if STRATA_TSAN_ANNOTATE
  __tsan_switch_to_fiber(tsan_to, 0);
#endif
}

inline void finish_switch([[maybe_unused]] switch_marks* to,
                          [[maybe_unused]] void const** old_bottom,
                          [[maybe_unused]] std::size_t* old_size) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(to ? to->asan_fake : nullptr, old_bottom, old_size);
#endif
}

/// Thrown inside a suspended fiber to unwind it when its block is abandoned.
struct fiber_cancelled {};

}  // namespace

struct fiber_block {
  struct member {
    ctx::fiber self;    // the thread's fiber while it is suspended
    ctx::fiber caller;  // the scheduler, while the thread runs
    ctx::stack_context stack{};
    switch_marks marks;
    bool started = false;
    bool done = false;
    bool at_barrier = false;
    std::uint64_t barriers = 0;  // block barriers this thread has entered
    // The threads [scope_first, scope_first + scope_size) the barrier it waits at is for:
    // the whole block, or a group (domain.hpp's group_domain).
    index_t scope_first = 0, scope_size = 0;
  };
  std::vector<member> threads;
  index_t current = 0;
  // barrier_count's tallies, by the parity of the barrier's number: a thread reads the
  // count of barrier k after it resumes, before it reaches barrier k + 1, so the last
  // thread to reach barrier k + 1 may clear k's tally for barrier k + 2. (The block's
  // fibers take turns on one OS thread: no atomics.)
  int tally[2] = {0, 0};
  index_t arrived[2] = {0, 0};
  bool cancelled = false;
  // Whether some thread has waited at a group's barrier: the scheduler then resumes a
  // thread only once its barrier's threads have all arrived (see run_grouped).
  bool grouped = false;
  std::exception_ptr error;
  // The scheduler's side, for switching back to it.
  switch_marks marks;
  void const* scheduler_bottom = nullptr;
  std::size_t scheduler_size = 0;
};

namespace {

void* tsan_current() {
#if STRATA_TSAN_ANNOTATE
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}

// Scheduler → thread t, until it reaches a barrier or returns.
void enter(fiber_block& b, index_t t) {
  auto& m = b.threads[static_cast<std::size_t>(t)];
  b.current = t;
  m.started = true;
  m.at_barrier = false;
  start_switch(&b.marks, false, static_cast<char*>(m.stack.sp) - m.stack.size, m.stack.size,
               m.marks.tsan_fiber);
  m.self = std::move(m.self).resume();
  finish_switch(&b.marks, nullptr, nullptr);
}

// Thread → scheduler.
void leave(fiber_block& b, fiber_block::member& m, bool dying) {
  start_switch(&m.marks, dying, b.scheduler_bottom, b.scheduler_size, b.marks.tsan_fiber);
  if (dying) return;  // the caller returns the scheduler's fiber to Boost
  m.caller = std::move(m.caller).resume();
  finish_switch(&m.marks, &b.scheduler_bottom, &b.scheduler_size);
}

}  // namespace

int fiber_barrier_count(fiber_block* block, int predicate) {
  auto& m = block->threads[static_cast<std::size_t>(block->current)];
  auto const k = static_cast<std::size_t>(m.barriers++ % 2);
  block->tally[k] += predicate != 0 ? 1 : 0;
  if (++block->arrived[k] == static_cast<index_t>(block->threads.size())) {
    block->tally[1 - k] = 0;
    block->arrived[1 - k] = 0;
  }
  m.at_barrier = true;
  m.scope_first = 0;
  m.scope_size = static_cast<index_t>(block->threads.size());
  leave(*block, m, false);
  if (block->cancelled) throw fiber_cancelled{};
  return block->tally[k];
}

void fiber_group_barrier(fiber_block* block, index_t first, index_t size) {
  auto& m = block->threads[static_cast<std::size_t>(block->current)];
  block->grouped = true;
  m.at_barrier = true;
  m.scope_first = first;
  m.scope_size = size;
  leave(*block, m, false);
  if (block->cancelled) throw fiber_cancelled{};
}

void fiber_barrier(fiber_block* block) {
  (void)fiber_barrier_count(block, 0);
}

void run_fiber_block(index_t threads, void (*body)(void*, index_t, fiber_block*), void* c) {
  fiber_block block;
  block.threads.resize(static_cast<std::size_t>(threads));
  block.marks.tsan_fiber = tsan_current();
  for (index_t t = 0; t < threads; ++t) {
    auto& m = block.threads[static_cast<std::size_t>(t)];
#if STRATA_TSAN_ANNOTATE
    m.marks.tsan_fiber = __tsan_create_fiber(0);
#endif
    m.self = ctx::fiber(std::allocator_arg, cached_stack{&m.stack},
                        [&block, t, body, c](ctx::fiber&& caller) {
                          auto& me = block.threads[static_cast<std::size_t>(t)];
                          finish_switch(nullptr, &block.scheduler_bottom, &block.scheduler_size);
                          me.caller = std::move(caller);
                          try {
                            body(c, t, &block);
                          } catch (fiber_cancelled const&) {
                            // unwound on purpose: the block is being abandoned
                          } catch (ctx::detail::forced_unwind const&) {
                            throw;  // Boost is destroying this fiber: let it unwind
                          } catch (...) {
                            if (!block.error) block.error = std::current_exception();
                          }
                          me.done = true;
                          leave(block, me, true);
                          return std::move(me.caller);
                        });
  }
  // Abandoning a block resumes each suspended thread so that it unwinds its own stack
  // (barrier() throws fiber_cancelled). Threads that never started are not started: Boost
  // discards a fresh fiber cleanly. A kernel that swallows the cancellation and reaches
  // another barrier is resumed again, a bounded number of times; after that Boost's own
  // unwinding destroys it.
  auto cancel_rest = [&] {
    block.cancelled = true;
    for (int round = 0; round < 16; ++round) {
      bool any = false;
      for (index_t t = 0; t < threads; ++t) {
        auto const& m = block.threads[static_cast<std::size_t>(t)];
        if (m.started && !m.done) {
          enter(block, t);
          any = true;
        }
      }
      if (!any) return;
    }
  };
  struct tsan_cleanup {
    fiber_block& b;
    ~tsan_cleanup() {
#if STRATA_TSAN_ANNOTATE
      for (auto& m : b.threads) __tsan_destroy_fiber(m.marks.tsan_fiber);
#endif
    }
  } cleanup{block};

  // Once groups wait at barriers of their own, a round resumes only the threads whose
  // barrier's threads have all arrived (decided for the round before it starts, so a
  // thread that arrives during the round waits for the next). A round that can resume
  // nobody while threads wait is a block that would hang on a GPU: an error.
  std::vector<char> release, checked;
  auto run_grouped = [&] {
    for (;;) {
      release.assign(static_cast<std::size_t>(threads), 0);
      checked.assign(static_cast<std::size_t>(threads), 0);
      auto const& all = block.threads;
      for (index_t t = 0; t < threads; ++t) {
        auto const& m = all[static_cast<std::size_t>(t)];
        if (m.done || checked[static_cast<std::size_t>(t)]) continue;
        if (!m.at_barrier) {
          release[static_cast<std::size_t>(t)] = 1;  // not started yet
          continue;
        }
        index_t const f = m.scope_first, n = m.scope_size;
        auto same = [&](fiber_block::member const& u) {
          return !u.done && u.at_barrier && u.scope_first == f && u.scope_size == n;
        };
        bool complete = true;
        for (index_t u = f; u < f + n; ++u)
          complete = complete && same(all[static_cast<std::size_t>(u)]);
        for (index_t u = f; u < f + n; ++u)
          if (same(all[static_cast<std::size_t>(u)])) {
            checked[static_cast<std::size_t>(u)] = 1;
            release[static_cast<std::size_t>(u)] = complete ? 1 : 0;
          }
      }
      bool ran = false;
      for (index_t t = 0; t < threads && !block.error; ++t)
        if (release[static_cast<std::size_t>(t)]) {
          enter(block, t);
          ran = true;
        }
      if (block.error) {
        cancel_rest();
        std::rethrow_exception(block.error);
      }
      index_t done = 0;
      for (auto const& m : all) done += m.done ? 1 : 0;
      if (done == threads) return;
      if (!ran) {
        cancel_rest();
        throw error("barrier(): " + std::to_string(threads - done) + " of the block's " +
                    std::to_string(threads) + " threads wait at barriers that the rest of " +
                    "their block or group never reach (" + std::to_string(done) +
                    " returned); every thread of a block or group must reach each of its "
                    "barriers (on a GPU this block would hang)");
      }
    }
  };

  for (;;) {
    if (block.grouped) return run_grouped();
    index_t done = 0, waiting = 0;
    for (index_t t = 0; t < threads && !block.error; ++t)
      if (!block.threads[static_cast<std::size_t>(t)].done) enter(block, t);
    for (auto const& m : block.threads) (m.done ? done : waiting) += 1;
    if (block.error) {
      cancel_rest();
      std::rethrow_exception(block.error);
    }
    if (done == threads) return;
    if (block.grouped) continue;  // groups may finish before others: run_grouped judges
    if (done > 0) {
      cancel_rest();
      throw error("barrier(): " + std::to_string(done) + " of the block's " +
                  std::to_string(threads) + " threads returned while " + std::to_string(waiting) +
                  " wait at a barrier; every thread of a parallel block must reach every "
                  "barrier (on a GPU this block would hang)");
    }
  }
}

namespace {
struct frame_stack {
  struct buffer {
    std::byte* data = nullptr;
    std::size_t size = 0;
  };
  std::vector<buffer> buffers;
  std::size_t depth = 0;
  ~frame_stack() {
    for (auto& b : buffers) ::operator delete (b.data, std::align_val_t{64});
  }
};
thread_local frame_stack frames;
}  // namespace

scratch_frame::scratch_frame(std::size_t bytes) {
  if (frames.buffers.size() <= frames.depth) frames.buffers.resize(frames.depth + 1);
  auto& b = frames.buffers[frames.depth];
  if (b.size < bytes || !b.data) {
    ::operator delete (b.data, std::align_val_t{64});
    b.data = nullptr;
    b.size = bytes < 64 ? 64 : bytes;
    b.data = static_cast<std::byte*>(::operator new (b.size, std::align_val_t{64}));
  }
  data_ = b.data;
  ++frames.depth;
}

scratch_frame::~scratch_frame() {
  --frames.depth;
}

block_vars::~block_vars() {
  for (auto const& c : chunks_) ::operator delete (c.data, std::align_val_t{64});
}

void* block_vars::get(void const* key, std::size_t bytes, std::size_t align) {
  for (std::size_t k = 0; k < count_; ++k)
    if (entries_[k].key == key) return entries_[k].where;
  // A new variable of this block: the next aligned piece of the current chunk, or of the
  // next one that has room (chunks are never moved, so earlier variables stay put).
  for (;; ++chunk_, used_ = 0) {
    if (chunk_ == chunks_.size()) {
      // 4 KiB, or the variable with its alignment if larger (alignment above 64 bytes is
      // met by padding inside the chunk).
      std::size_t const size = std::max<std::size_t>(4096, bytes + align);
      chunks_.reserve(chunks_.size() + 1);
      chunks_.push_back(
          {static_cast<std::byte*>(::operator new (size, std::align_val_t{64})), size});
    }
    auto const& c = chunks_[chunk_];
    auto const base = reinterpret_cast<std::uintptr_t>(c.data);
    std::size_t const offset = (base + used_ + align - 1) / align * align - base;
    if (offset + bytes > c.size) continue;
    void* where = c.data + offset;
    if (count_ == entries_.size()) entries_.emplace_back();
    entries_[count_++] = {key, where};
    used_ = offset + bytes;
    return where;
  }
}

}  // namespace strata::detail
