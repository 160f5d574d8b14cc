// Parallel CPU blocks as cooperatively switched fibers on Boost.Context's fcontext layer:
// barrier() saves the thread's registers and switches straight to the next thread of the
// block, so a block of B threads runs on one OS thread in rounds, one round per barrier,
// and one set of B fibers runs every block of a range in turn.
#include <strata/error.hpp>
#include <strata/exec/cpu/run.hpp>

#include <boost/context/detail/fcontext.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <boost/version.hpp>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
// Under ThreadSanitizer this file itself is compiled uninstrumented (src/CMakeLists.txt):
// the stack switches would otherwise unbalance TSan's shadow call stacks. The annotations
// below still tell TSan about every switch, so the kernels stay checked.
#if defined(__SANITIZE_THREAD__) || defined(STRATA_TSAN_FIBERS)
#define STRATA_TSAN_ANNOTATE 1
#include <sanitizer/tsan_interface.h>
#else
#define STRATA_TSAN_ANNOTATE 0
#endif

namespace strata::detail {
namespace ctx = boost::context;
using fcontext = ctx::detail::fcontext_t;
using transfer = ctx::detail::transfer_t;
}  // namespace strata::detail

// The saved layout below is Boost 1.74's (Debian 12's); another Boost may lay a context
// out differently (shadow-stack builds do), so other versions use Boost's own switch.
#if defined(__x86_64__) && defined(__ELF__) && BOOST_VERSION / 100 == 1074 && \
    !defined(BOOST_CONTEXT_SHADOW_STACK)
// Boost's jump_fcontext (1.74, x86-64 SysV) with two changes, same saved layout (so it
// resumes contexts that make_fcontext made):
// * it returns with `ret` where Boost jumps through a register. Boost's jump leaves the
//   return-stack predictor one entry off after every switch, so each return in the
//   resumed fiber (switch, barrier, kernel) is mispredicted: about 26 ns per switch here
//   against about 10 with `ret`. With `ret` the resumed fiber returns to the call site
//   that the suspending one called from (all threads of a block run the same code), which
//   the predictor expects.
// * it leaves the MXCSR and the x87 control word alone (their slots keep what
//   make_fcontext stored): storing them was most of the routine's time in a profile
//   here (about 15% of a block reduction with 8 barriers per 64 elements). The threads
//   of a block share the OS thread's floating-point modes, as a GPU block's threads do;
//   run_fiber_blocks gives the caller its own modes back.
extern "C" strata::detail::transfer strata_jump_fcontext(strata::detail::fcontext to, void* data);
asm(R"(
  .pushsection .text
  .globl strata_jump_fcontext
  .hidden strata_jump_fcontext
  .type strata_jump_fcontext, @function
  .p2align 4
strata_jump_fcontext:
  leaq -0x38(%rsp), %rsp
  movq %r12, 0x8(%rsp)
  movq %r13, 0x10(%rsp)
  movq %r14, 0x18(%rsp)
  movq %r15, 0x20(%rsp)
  movq %rbx, 0x28(%rsp)
  movq %rbp, 0x30(%rsp)
  movq %rsp, %rax
  movq %rdi, %rsp
  movq 0x8(%rsp), %r12
  movq 0x10(%rsp), %r13
  movq 0x18(%rsp), %r14
  movq 0x20(%rsp), %r15
  movq 0x28(%rsp), %rbx
  movq 0x30(%rsp), %rbp
  leaq 0x38(%rsp), %rsp
  movq %rsi, %rdx
  movq %rax, %rdi
  ret
  .size strata_jump_fcontext, .-strata_jump_fcontext
  .popsection
)");
namespace strata::detail {
inline transfer jump(fcontext to, void* data) {
  return strata_jump_fcontext(to, data);
}
// The caller's floating-point modes (not the status flags, which stay as the kernels left
// them), restored when its range of blocks ends, however it ends.
struct fp_modes {
  std::uint32_t mxcsr;
  std::uint16_t x87;
  fp_modes() { asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(x87)); }
  ~fp_modes() {
    std::uint32_t now;
    asm volatile("stmxcsr %0" : "=m"(now));
    if ((now & ~0x3Fu) != (mxcsr & ~0x3Fu)) {
      now = (now & 0x3Fu) | (mxcsr & ~0x3Fu);
      asm volatile("ldmxcsr %0" : : "m"(now));
    }
    std::uint16_t x87_now;
    asm volatile("fnstcw %0" : "=m"(x87_now));
    if (x87_now != x87) asm volatile("fldcw %0" : : "m"(x87));
  }
  fp_modes(fp_modes const&) = delete;
  fp_modes& operator=(fp_modes const&) = delete;
};
}  // namespace strata::detail
#else
namespace strata::detail {
inline transfer jump(fcontext to, void* data) {
  return ctx::detail::jump_fcontext(to, data);
}
struct fp_modes {};  // Boost's switch keeps each fiber's modes
}  // namespace strata::detail
#endif

namespace strata::detail {

namespace {

// Stacks with a guard page, kept per OS thread and reused from range to range so that a
// run of blocks costs no mmap. A kernel that overflows hits the guard page, not memory.
// (Only the pages a fiber touches become resident: the size costs address space.)
constexpr std::size_t fiber_stack_size = 128 * 1024;

struct stack_cache {
  ctx::protected_fixedsize_stack make{fiber_stack_size};
  std::vector<ctx::stack_context> free;
  ~stack_cache() {
    for (auto& s : free) make.deallocate(s);
  }
  ctx::stack_context get() {
    if (free.empty()) return make.allocate();
    auto s = free.back();
    free.pop_back();
    return s;
  }
};
thread_local stack_cache stacks;

// The sanitizers must be told about every stack switch: the fcontext switch is invisible
// to them. These are no-ops in other builds.
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

void* tsan_current() {
#if STRATA_TSAN_ANNOTATE
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}

/// Thrown inside a suspended fiber to unwind it when its blocks are abandoned.
struct fiber_cancelled {};

constexpr std::uint64_t released = ~std::uint64_t{0};

}  // namespace

// The fibers of one range of blocks [block, last) on this OS thread. Each of the `n`
// fibers runs thread t of every block of the range in turn; the end of a block is an
// arrival like a barrier, so no thread begins block b + 1 (which reuses the scratchpad and
// the shared variables) before all finished block b.
//
// Rounds: every thread arrives once per round (at a barrier or at the end of its block).
// Without groups the threads run in order 0, 1, ..., n - 1 and each switches straight to
// the next; thread n - 1 arrives last and starts the next round at thread 0. Once a thread
// waits at a group's barrier the rest of that block goes through a scheduler (`main`, the
// context that called run_fiber_blocks), which resumes a thread only when its barrier's
// threads have all arrived.
struct fiber_block {
  struct member {
    fcontext self = nullptr;  // its context while it is suspended
    switch_marks marks;
    // Its stack (for ASan): known for the fibers, learned for main from its first switch.
    void const* bottom = nullptr;
    std::size_t size = 0;
    // Waiting (at a barrier or at the end of its block) iff round == the block's round.
    std::uint64_t round = released;
    std::uint64_t barriers = 0;  // block barriers this thread has entered in this block
    // The threads [scope_first, scope_first + scope_size) the barrier it waits at is for:
    // the whole block, or a group (domain.hpp's group_domain).
    index_t scope_first = 0, scope_size = 0;
    bool at_end = false;  // waiting at the end of its block
    bool started = false, exited = false;
    ctx::stack_context stack{};  // the pooled stack it runs on (not main)
  };
  index_t n;
  std::vector<member> threads;  // the block's threads, then main at [n]
  index_t current = 0;          // who runs
  index_t from = 0;             // who switched to the one that runs now
  std::uint64_t round = 0;
  index_t ends = 0;  // threads at the end of the block in this round (without groups)
  index_t block, last;
  // barrier_count's tallies, by the parity of the barrier's number: a thread reads the
  // count of barrier k after it resumes, before it reaches barrier k + 1, so the last
  // thread to reach barrier k + 1 may clear k's tally for barrier k + 2. (The block's
  // fibers take turns on one OS thread: no atomics.)
  int tally[2] = {0, 0};
  index_t arrived[2] = {0, 0};
  bool grouped = false;  // some thread of this block waited at a group's barrier
  bool cancelled = false;
  bool finished = false;  // the range's last block ended
  std::exception_ptr error;
  bool (*body)(void*, index_t, index_t, fiber_block*);
  void* closure;
  block_vars* vars;
  std::vector<char> release, checked;  // the group scheduler's (kept to not allocate)
};

namespace {

// Suspends `me` (a thread, or main: n) and runs `to`; returns when someone switches back.
// The context a resumed fiber receives is its resumer's: it goes into the resumer's slot,
// which `from` names.
inline void switch_to(fiber_block& b, index_t me, index_t to) {
  auto& target = b.threads[static_cast<std::size_t>(to)];
  start_switch(&b.threads[static_cast<std::size_t>(me)].marks, false, target.bottom, target.size,
               target.marks.tsan_fiber);
  b.from = me;
  b.current = to;
  transfer back = jump(target.self, &b);
  auto& source = b.threads[static_cast<std::size_t>(b.from)];
  finish_switch(&b.threads[static_cast<std::size_t>(me)].marks, &source.bottom, &source.size);
  source.self = back.fctx;
}

// A block ended in every thread: the next one of the range, or the range is done.
bool next_block(fiber_block& b) {
  if (++b.block == b.last) {
    b.finished = true;
    return false;
  }
  ++b.round;
  b.ends = 0;
  b.grouped = false;
  b.tally[0] = b.tally[1] = 0;
  b.arrived[0] = b.arrived[1] = 0;
  // Each block counts its barriers from 0 (the tallies' parity), whatever the last did.
  for (index_t t = 0; t < b.n; ++t) b.threads[static_cast<std::size_t>(t)].barriers = 0;
  b.vars->next_block();
  return true;
}

[[gnu::noinline]] void returned_while_others_wait(fiber_block& b) {
  b.error = std::make_exception_ptr(
      error("barrier(): " + std::to_string(b.ends) + " of the block's " + std::to_string(b.n) +
            " threads returned while " + std::to_string(b.n - b.ends) +
            " wait at a barrier; every thread of a parallel block must reach every barrier (on "
            "a GPU this block would hang)"));
}

// Thread t has arrived (its round, at_end and scope are set): on to the next thread, or
// to main when groups, a mistake, an error or the range's end need it.
inline void arrive(fiber_block& b, index_t t) {
  index_t next = t + 1;
  if (b.grouped || b.cancelled) [[unlikely]] {
    next = b.n;
  } else if (next == b.n) {  // the round is complete
    if (b.ends == 0) {
      ++b.round;
      next = 0;
    } else if (b.ends == b.n) {
      next = next_block(b) ? 0 : b.n;
    } else {
      returned_while_others_wait(b);
      next = b.n;
    }
  }
  switch_to(b, t, next);
}

}  // namespace

int fiber_arrive(fiber_block* block, fiber_arrival what, int predicate, index_t first,
                 index_t size) {
  auto& b = *block;
  index_t const t = b.current;
  auto& m = b.threads[static_cast<std::size_t>(t)];
  m.round = b.round;
  m.at_end = what == fiber_arrival::block_end;
  std::size_t k = 0;
  if (what == fiber_arrival::block_end) {
    ++b.ends;
  } else if (what == fiber_arrival::barrier) {
    k = static_cast<std::size_t>(m.barriers++ % 2);
    b.tally[k] += predicate != 0 ? 1 : 0;
    if (++b.arrived[k] == b.n) {
      b.tally[1 - k] = 0;
      b.arrived[1 - k] = 0;
    }
    first = 0;
    size = b.n;
  } else if (first != 0 || size != b.n) {
    b.grouped = true;  // (a group as large as the block waits like the block's barrier)
  }
  m.scope_first = first;
  m.scope_size = size;
  arrive(b, t);  // the one switch of a thread to the next (see context.hpp)
  if (what == fiber_arrival::block_end) return !b.finished && !b.cancelled;
  if (b.cancelled) [[unlikely]]
    throw fiber_cancelled{};
  return b.tally[k];
}

namespace {

// A fiber's life: thread t of every block of the range, then a last switch to main.
[[noreturn]] void fiber_main(transfer first) {
  auto& b = *static_cast<fiber_block*>(first.data);
  index_t const t = b.current;
  {
    auto& source = b.threads[static_cast<std::size_t>(b.from)];
    finish_switch(nullptr, &source.bottom, &source.size);
    source.self = first.fctx;
  }
  b.threads[static_cast<std::size_t>(t)].started = true;
  if (!b.cancelled) {  // (a fiber first entered to be cancelled has nothing to unwind)
    try {
      while (b.body(b.closure, b.block, t, &b)) {
      }
    } catch (fiber_cancelled const&) {
      // unwound on purpose: the range is being abandoned
    } catch (...) {
      if (!b.error) b.error = std::current_exception();
    }
  }
  auto& me = b.threads[static_cast<std::size_t>(t)];
  auto& main = b.threads[static_cast<std::size_t>(b.n)];
  me.exited = true;
  start_switch(&me.marks, true, main.bottom, main.size, main.marks.tsan_fiber);
  b.from = t;
  b.current = b.n;
  jump(main.self, &b);
  std::abort();  // never resumed: main gives the stack back
}

// Main's side of a block whose threads wait at groups' barriers: each pass resumes the
// threads whose barrier's threads have all arrived (decided before the pass starts, so a
// thread that arrives during the pass waits for the next) and threads not waiting yet. A
// pass that can resume nobody while threads wait is a block that would hang on a GPU: an
// error. Returns when the block has ended in every thread, or on an error.
void run_grouped(fiber_block& b) {
  index_t const n = b.n;
  auto const& all = b.threads;
  auto waiting = [&](fiber_block::member const& u) { return !u.exited && u.round == b.round; };
  for (;;) {
    b.release.assign(static_cast<std::size_t>(n), 0);
    b.checked.assign(static_cast<std::size_t>(n), 0);
    for (index_t t = 0; t < n; ++t) {
      auto const& m = all[static_cast<std::size_t>(t)];
      if (m.exited || (waiting(m) && m.at_end) || b.checked[static_cast<std::size_t>(t)]) continue;
      if (!waiting(m)) {
        b.release[static_cast<std::size_t>(t)] = 1;
        continue;
      }
      index_t const f = m.scope_first, size = m.scope_size;
      auto same = [&](fiber_block::member const& u) {
        return waiting(u) && !u.at_end && u.scope_first == f && u.scope_size == size;
      };
      bool complete = true;
      for (index_t u = f; u < f + size; ++u)
        complete = complete && same(all[static_cast<std::size_t>(u)]);
      for (index_t u = f; u < f + size; ++u)
        if (same(all[static_cast<std::size_t>(u)])) {
          b.checked[static_cast<std::size_t>(u)] = 1;
          b.release[static_cast<std::size_t>(u)] = complete ? 1 : 0;
        }
    }
    bool ran = false;
    for (index_t t = 0; t < n && !b.error; ++t)
      if (b.release[static_cast<std::size_t>(t)]) {
        b.threads[static_cast<std::size_t>(t)].round = released;
        switch_to(b, n, t);
        ran = true;
      }
    if (b.error) return;
    index_t done = 0;
    for (index_t t = 0; t < n; ++t)
      done += waiting(all[static_cast<std::size_t>(t)]) && all[static_cast<std::size_t>(t)].at_end;
    if (done == n) {
      next_block(b);
      return;
    }
    if (!ran) {
      b.error = std::make_exception_ptr(
          error("barrier(): " + std::to_string(n - done) + " of the block's " + std::to_string(n) +
                " threads wait at barriers that the rest of their block or group never reach (" +
                std::to_string(done) +
                " returned); every thread of a block or group must reach each of its barriers "
                "(on a GPU this block would hang)"));
      return;
    }
  }
}

}  // namespace

void run_fiber_blocks(index_t threads, index_t b0, index_t b1,
                      bool (*body)(void*, index_t, index_t, fiber_block*), void* closure,
                      block_vars* vars) {
  if (b0 >= b1) return;
  [[maybe_unused]] fp_modes const caller_modes{};
  fiber_block b{.n = threads,
                .threads = std::vector<fiber_block::member>(static_cast<std::size_t>(threads) + 1),
                .block = b0,
                .last = b1,
                .body = body,
                .closure = closure,
                .vars = vars};
  b.release.reserve(static_cast<std::size_t>(threads));
  b.checked.reserve(static_cast<std::size_t>(threads));
  b.threads.back().marks.tsan_fiber = tsan_current();
  // Stacks go back to the pool at the end, but not one that a fiber still holds frames
  // on (a kernel that kept swallowing its cancellation): that one is left mapped.
  struct cleanup {
    fiber_block& b;
    ~cleanup() {
      for (index_t t = 0; t < b.n; ++t) {
        auto& m = b.threads[static_cast<std::size_t>(t)];
#if STRATA_TSAN_ANNOTATE
        if (m.marks.tsan_fiber) __tsan_destroy_fiber(m.marks.tsan_fiber);
#endif
        if (m.stack.sp && (!m.started || m.exited)) {
#if defined(__SANITIZE_ADDRESS__)
          // A fiber ends with a switch, not a return: its last frames' redzones stay
          // poisoned and would be reported when the stack is used again.
          __asan_unpoison_memory_region(m.bottom, m.stack.size);
#endif
          stacks.free.push_back(m.stack);
        }
      }
    }
  } give_back{b};
  stacks.free.reserve(stacks.free.size() + static_cast<std::size_t>(threads));
  for (index_t t = 0; t < threads; ++t) {
    auto& m = b.threads[static_cast<std::size_t>(t)];
    m.stack = stacks.get();
    // Every stack's top is at the same page offset, so the hot top frames of the fibers
    // would share a few L1 sets: each fiber starts a different multiple of 128 bytes
    // below its top.
    std::size_t const offset = static_cast<std::size_t>(t % 32) * 128;
    m.size = m.stack.size - offset;
    m.bottom = static_cast<char*>(m.stack.sp) - m.stack.size;
    m.self =
        ctx::detail::make_fcontext(static_cast<char*>(m.stack.sp) - offset, m.size, &fiber_main);
#if STRATA_TSAN_ANNOTATE
    m.marks.tsan_fiber = __tsan_create_fiber(0);
#endif
  }

  // Main resumes every started thread that has not exited, which then unwinds (its
  // barrier throws fiber_cancelled, the end of its block ends its loop). A kernel that
  // swallows the cancellation and reaches another barrier comes back here and is resumed
  // again, a bounded number of times; after that it is abandoned with its stack.
  auto end_all = [&] {
    b.cancelled = !b.finished;
    for (int pass = 0; pass < 16; ++pass) {
      bool any = false;
      for (index_t t = 0; t < threads; ++t) {
        auto const& m = b.threads[static_cast<std::size_t>(t)];
        if (m.started && !m.exited) {
          switch_to(b, threads, t);
          any = true;
        }
      }
      if (!any) return;
    }
  };

  // The threads switch among themselves and come back here only for groups, mistakes,
  // errors and the range's end.
  switch_to(b, threads, 0);
  while (!b.error && !b.finished && b.grouped) {
    run_grouped(b);
    if (!b.error && !b.finished) switch_to(b, threads, 0);
  }
  end_all();
  if (b.error) std::rethrow_exception(b.error);
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
