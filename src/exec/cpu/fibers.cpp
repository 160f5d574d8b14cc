// Parallel CPU blocks as cooperatively switched fibers: barrier() saves where the thread
// is and switches straight to the next thread of the block, so a block of B threads runs
// on one OS thread in rounds, one round per barrier, and one set of B fibers runs every
// block of a range in turn. The switch is fiber.hpp's (x86-64), or Boost.Context's
// fcontext elsewhere; the stacks are Boost.Context's, with guard pages.
#include <strata/error.hpp>
#include <strata/exec/cpu/run.hpp>

#include <boost/context/detail/fcontext.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

// ASan however libstrata was built: the preset's STRATA_ASAN, GCC's macro, or clang's
// __has_feature (clang 14 defines no macro; without the annotations every fiber switch
// reads as a stack overflow).
#if !defined(STRATA_ASAN) && defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_ASAN 1
#endif
#endif
#if !defined(STRATA_ASAN) && defined(__SANITIZE_ADDRESS__)
#define STRATA_ASAN 1
#endif
#if defined(STRATA_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
// Under ThreadSanitizer this file itself is compiled uninstrumented (src/CMakeLists.txt):
// the stack switches would otherwise unbalance TSan's shadow call stacks. The annotations
// below still tell TSan about every switch, so the kernels stay checked.
#if defined(STRATA_TSAN) || defined(STRATA_TSAN_FIBERS)
#define STRATA_TSAN_ANNOTATE 1
#include <sanitizer/tsan_interface.h>
#else
#define STRATA_TSAN_ANNOTATE 0
#endif

namespace strata::detail {
namespace ctx = boost::context;
struct fiber_block;
}  // namespace strata::detail

// A fiber's life (below); entered from fiber_entry with its block.
extern "C" [[noreturn]] void strata_fiber_main(strata::detail::fiber_block* b);

#if STRATA_FIBER_JUMP
// Where a new fiber starts: fiber_jump arrives here on the fiber's fresh stack with the
// block in rdi. A zero return address ends the stack for unwinders, and the jump (not a
// call) leaves the return-address predictor as it was.
extern "C" void strata_fiber_entry();
asm(R"(
  .pushsection .text
  .globl strata_fiber_entry
  .hidden strata_fiber_entry
  .type strata_fiber_entry, @function
  .p2align 4
strata_fiber_entry:
  andq $-16, %rsp
  pushq $0
  jmp strata_fiber_main
  .size strata_fiber_entry, .-strata_fiber_entry
  .popsection
)");
namespace strata::detail {
// The caller's floating-point modes (not the status flags, which stay as the kernels left
// them), restored when its range of blocks ends, however it ends: fiber_jump leaves
// them to the threads (fiber.hpp).
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

// The sanitizers must be told about every stack switch: the switch is invisible to them.
// These are no-ops in other builds.
struct switch_marks {
  void* asan_fake = nullptr;
  void* tsan_fiber = nullptr;
};

inline void start_switch([[maybe_unused]] switch_marks* from, [[maybe_unused]] bool dying,
                         [[maybe_unused]] void const* bottom, [[maybe_unused]] std::size_t size,
                         [[maybe_unused]] void* tsan_to) {
#if defined(STRATA_ASAN)
  __sanitizer_start_switch_fiber(dying ? nullptr : &from->asan_fake, bottom, size);
#endif
#if STRATA_TSAN_ANNOTATE
  __tsan_switch_to_fiber(tsan_to, 0);
#endif
}

inline void finish_switch([[maybe_unused]] switch_marks* to,
                          [[maybe_unused]] void const** old_bottom,
                          [[maybe_unused]] std::size_t* old_size) {
#if defined(STRATA_ASAN)
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
// the next (fiber.hpp's inline path, or arrive_slow); thread n - 1 arrives last and starts
// the next round at thread 0. Once a thread waits at a group's barrier the rest of that
// block goes through a scheduler (`main`, the context that called run_fiber_blocks), which
// resumes a thread only when its barrier's threads have all arrived.
struct fiber_block : fiber_state {
  // What the inline path does not need, per thread (and main).
  struct member {
    // Waiting (at a barrier or at the end of its block) iff round == the block's round.
    // Kept only once the block has groups (before, the threads before `current` are the
    // ones waiting: arrive_slow writes theirs when groups begin).
    std::uint64_t round = released;
    // A group barrier's threads [scope_first, scope_first + scope_size) (domain.hpp's
    // group_domain); a block barrier's are the whole block (see scope()).
    index_t scope_first = 0, scope_size = 0;
    bool started = false, exited = false;
    switch_marks marks;
    // Its stack (for ASan): known for the fibers, learned for main from its first switch.
    void const* bottom = nullptr;
    std::size_t size = 0;
    ctx::stack_context stack{};  // the pooled stack it runs on (not main)
  };
  std::vector<fiber_slot> slot_store;  // slots (fiber_state) point here
  std::vector<member> threads;         // the block's threads, then main at [n]
  index_t last = 0;
  index_t from = 0;  // who switched to the one that runs now (sanitizer builds)
  std::uint64_t round = 0;
  // barrier_count's tallies, by the parity of the barrier's number j, each marked with the
  // j it counts: a thread reads the count of barrier j after it resumes, before it reaches
  // barrier j + 1, so the first thread to count at barrier j + 2 may start that slot over.
  // (The block's fibers take turns on one OS thread: no atomics.)
  int tally[2] = {0, 0};
  std::uint64_t tally_of[2] = {released, released};
  ctx::detail::fcontext_t* save = nullptr;  // Boost's switch: where the resumed side stores
  std::exception_ptr error;
  void (*body)(void*, index_t, index_t, fiber_state*) = nullptr;
  void* closure = nullptr;
  block_vars* vars = nullptr;
  std::vector<char> release, checked;  // the group scheduler's (kept to not allocate)

  bool has(std::uint8_t bits) const { return (flags & bits) != 0; }
  fiber_slot& slot(index_t t) { return slots[t]; }
  member& thread(index_t t) { return threads[static_cast<std::size_t>(t)]; }
  // The threads the barrier that t waits at is for.
  std::pair<index_t, index_t> scope(index_t t) const {
    if (slots[t].kind == fiber_arrival::group_barrier) {
      auto const& m = threads[static_cast<std::size_t>(t)];
      return {m.scope_first, m.scope_size};
    }
    return {0, n};
  }
};

namespace {

#if !STRATA_FIBER_JUMP
// Boost's switch: the fcontext sits in the slot's sp, and the resumed side stores its
// resumer's (b->save says where).
void fcontext_entry(ctx::detail::transfer_t first) {
  auto* b = static_cast<fiber_block*>(first.data);
  *b->save = first.fctx;
  strata_fiber_main(b);
}
#endif

// Suspends the running context into `from` and resumes `to`.
inline void raw_switch(fiber_slot* from, fiber_slot* to, fiber_block* b) {
#if STRATA_FIBER_JUMP
  fiber_jump(from, to, b);
#else
  b->save = reinterpret_cast<ctx::detail::fcontext_t*>(&from->sp);
  auto back = ctx::detail::jump_fcontext(static_cast<ctx::detail::fcontext_t>(to->sp), b);
  auto* r = static_cast<fiber_block*>(back.data);
  *r->save = back.fctx;
#endif
}

// Suspends `me` (a thread, or main: n) and runs `to`; returns when someone switches back.
// Every switch but the inline path's comes here (all of them in sanitizer builds).
void switch_to(fiber_block& b, index_t me, index_t to) {
  auto& target = b.thread(to);
  auto& self = b.thread(me);
  start_switch(&self.marks, false, target.bottom, target.size, target.marks.tsan_fiber);
  b.from = me;
  b.current = to;
  raw_switch(&b.slot(me), &b.slot(to), &b);
  auto& source = b.thread(b.from);
  finish_switch(&self.marks, &source.bottom, &source.size);
}

// A block ended in every thread: the next one of the range, or the range is done.
bool next_block(fiber_block& b) {
  if (++b.block == b.last) {
    b.flags |= fiber_block::finished;
    return false;
  }
  ++b.round;
  b.ends = 0;
  b.flags &= static_cast<std::uint8_t>(~fiber_block::grouped);
  b.tally_of[0] = b.tally_of[1] = released;
  // Each block counts its barriers from 0, whatever the last did.
  for (index_t t = 0; t < b.n; ++t) b.slot(t).barriers = 0;
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

// What fiber_arrive returns to a thread resumed after an arrival (however it arrived):
// the count of its barrier_count, the next block after block_end (-1 when its range is
// done), or it unwinds (fiber_cancelled) when the range is abandoned at a barrier.
index_t resumed(fiber_block& b) {
  auto const& me = b.slot(b.current);
  if (me.kind == fiber_arrival::block_end) return b.has(fiber_block::stop) ? -1 : b.block;
  if (b.has(fiber_block::cancelled)) throw fiber_cancelled{};
  if (me.kind != fiber_arrival::barrier_count) return 0;
  std::uint64_t const j = me.barriers - 1;
  return b.tally_of[j % 2] == j ? b.tally[j % 2] : 0;
}

}  // namespace

// Every arrival that fiber.hpp's inline path does not take: the round's last thread,
// counted barriers, groups, everything once the range is cancelled, and every arrival in
// sanitizer builds. On to the next thread, or to main when groups, a mistake, an error or
// the range's end need it.
index_t fiber_arrive(fiber_state* block, fiber_arrival what, int predicate, index_t first,
                     index_t size) {
  auto& b = *static_cast<fiber_block*>(block);
  index_t const t = b.current;
  auto& s = b.slot(t);
  auto& m = b.thread(t);
  s.kind = what;
  m.round = b.round;
  switch (what) {
    case fiber_arrival::block_end:
      ++b.ends;
      break;
    case fiber_arrival::barrier_count: {
      std::uint64_t const j = s.barriers;
      if (b.tally_of[j % 2] != j) {
        b.tally_of[j % 2] = j;
        b.tally[j % 2] = 0;
      }
      b.tally[j % 2] += predicate != 0 ? 1 : 0;
    }
      [[fallthrough]];
    case fiber_arrival::barrier:
      ++s.barriers;
      break;
    case fiber_arrival::group_barrier:
      m.scope_first = first;
      m.scope_size = size;
      // (A group as large as the block waits like the block's barrier.)
      if ((first != 0 || size != b.n) && !b.has(fiber_block::grouped)) {
        // Groups begin: main schedules the rest of the block and needs to know who waits,
        // which until now was everyone before t.
        b.flags |= fiber_block::grouped;
        for (index_t u = 0; u < t; ++u) b.thread(u).round = b.round;
      }
      break;
  }
  index_t next = t + 1;
  if (b.has(fiber_block::slow)) [[unlikely]] {
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
  return resumed(b);
}

index_t fiber_resumed(fiber_state* block) {
  return resumed(*static_cast<fiber_block*>(block));
}

}  // namespace strata::detail

// A fiber's life: thread t of every block of the range, then a last switch to main.
extern "C" [[noreturn]] void strata_fiber_main(strata::detail::fiber_block* block) {
  using namespace strata::detail;
  using strata::index_t;
  auto& b = *block;
  index_t const t = b.current;
  auto& me = b.thread(t);
  {
    auto& source = b.thread(b.from);
    finish_switch(nullptr, &source.bottom, &source.size);
  }
  me.started = true;
  if (!b.has(fiber_block::cancelled)) {  // (first entered to be cancelled: nothing to unwind)
    try {
      b.body(b.closure, b.block, t, &b);
    } catch (fiber_cancelled const&) {
      // unwound on purpose: the range is being abandoned
    } catch (...) {
      if (!b.error) b.error = std::current_exception();
    }
  }
  me.exited = true;
  auto& main = b.thread(b.n);
  start_switch(&me.marks, true, main.bottom, main.size, main.marks.tsan_fiber);
  b.from = t;
  b.current = b.n;
  raw_switch(&b.slot(t), &b.slot(b.n), &b);
  std::abort();  // never resumed: main gives the stack back
}

namespace strata::detail {
namespace {

// Main's side of a block whose threads wait at groups' barriers: each pass resumes the
// threads whose barrier's threads have all arrived (decided before the pass starts, so a
// thread that arrives during the pass waits for the next) and threads not waiting yet. A
// pass that can resume nobody while threads wait is a block that would hang on a GPU: an
// error. Returns when the block has ended in every thread, or on an error.
void run_grouped(fiber_block& b) {
  index_t const n = b.n;
  auto waiting = [&](index_t u) {
    auto const& m = b.thread(u);
    return !m.exited && m.round == b.round;
  };
  auto at_end = [&](index_t u) { return b.slot(u).kind == fiber_arrival::block_end; };
  for (;;) {
    b.release.assign(static_cast<std::size_t>(n), 0);
    b.checked.assign(static_cast<std::size_t>(n), 0);
    for (index_t t = 0; t < n; ++t) {
      if (b.thread(t).exited || (waiting(t) && at_end(t)) || b.checked[static_cast<std::size_t>(t)])
        continue;
      if (!waiting(t)) {
        b.release[static_cast<std::size_t>(t)] = 1;
        continue;
      }
      auto const [f, size] = b.scope(t);
      auto same = [&](index_t u) { return waiting(u) && !at_end(u) && b.scope(u) == b.scope(t); };
      bool complete = true;
      for (index_t u = f; u < f + size; ++u) complete = complete && same(u);
      for (index_t u = f; u < f + size; ++u)
        if (same(u)) {
          b.checked[static_cast<std::size_t>(u)] = 1;
          b.release[static_cast<std::size_t>(u)] = complete ? 1 : 0;
        }
    }
    bool ran = false;
    for (index_t t = 0; t < n && !b.error; ++t)
      if (b.release[static_cast<std::size_t>(t)]) {
        b.thread(t).round = released;
        switch_to(b, n, t);
        ran = true;
      }
    if (b.error) return;
    index_t done = 0;
    for (index_t t = 0; t < n; ++t) done += waiting(t) && at_end(t);
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
                      void (*body)(void*, index_t, index_t, fiber_state*), void* closure,
                      block_vars* vars) {
  if (b0 >= b1) return;
  [[maybe_unused]] fp_modes const caller_modes{};
  auto const count = static_cast<std::size_t>(threads) + 1;
  fiber_block b;
  b.n = threads;
  b.block = b0;
  b.last = b1;
  b.body = body;
  b.closure = closure;
  b.vars = vars;
  b.slot_store.resize(count);
  b.slots = b.slot_store.data();
  b.threads.resize(count);
  b.release.reserve(static_cast<std::size_t>(threads));
  b.checked.reserve(static_cast<std::size_t>(threads));
  b.thread(threads).marks.tsan_fiber = tsan_current();
  // Stacks go back to the pool at the end, but not one that a fiber still holds frames
  // on (a kernel that kept swallowing its cancellation): that one is left mapped.
  struct cleanup {
    fiber_block& b;
    ~cleanup() {
      for (index_t t = 0; t < b.n; ++t) {
        auto& m = b.thread(t);
#if STRATA_TSAN_ANNOTATE
        if (m.marks.tsan_fiber) __tsan_destroy_fiber(m.marks.tsan_fiber);
#endif
        if (m.stack.sp && (!m.started || m.exited)) {
#if defined(STRATA_ASAN)
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
    auto& m = b.thread(t);
    m.stack = stacks.get();
    // Every stack's top is at the same page offset, so the hot top frames of the fibers
    // would share a few L1 sets: each fiber starts a different multiple of 128 bytes
    // below its top.
    std::size_t const offset = static_cast<std::size_t>(t % 32) * 128;
    m.size = m.stack.size - offset;
    m.bottom = static_cast<char*>(m.stack.sp) - m.stack.size;
    char* const top = static_cast<char*>(m.stack.sp) - offset;
#if STRATA_FIBER_JUMP
    b.slot(t).sp = top;
    b.slot(t).pc = reinterpret_cast<void const*>(&strata_fiber_entry);
#else
    b.slot(t).sp = ctx::detail::make_fcontext(top, m.size, &fcontext_entry);
#endif
#if STRATA_TSAN_ANNOTATE
    m.marks.tsan_fiber = __tsan_create_fiber(0);
#endif
  }

  // Main resumes every started thread that has not exited, which then unwinds (its
  // barrier throws fiber_cancelled, the end of its block ends its loop). A kernel that
  // swallows the cancellation and reaches another barrier comes back here and is resumed
  // again, a bounded number of times; after that it is abandoned with its stack.
  auto end_all = [&] {
    if (!b.has(fiber_block::finished)) b.flags |= fiber_block::cancelled;
    for (int pass = 0; pass < 16; ++pass) {
      bool any = false;
      for (index_t t = 0; t < threads; ++t) {
        auto const& m = b.thread(t);
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
  while (!b.error && !b.has(fiber_block::finished) && b.has(fiber_block::grouped)) {
    run_grouped(b);
    if (!b.error && !b.has(fiber_block::finished)) switch_to(b, threads, 0);
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
    b.size = 0;
    std::size_t const want = bytes < 64 ? 64 : bytes;
    try {
      b.data = static_cast<std::byte*>(::operator new (want, std::align_val_t{64}));
    } catch (std::bad_alloc const&) {
      // A shape's scratchpad is the user's number: a request the host cannot hold is
      // their mistake to see named, not a bare bad_alloc.
      throw out_of_memory("scratchpad: " + std::to_string(bytes) +
                          " bytes per block could not be allocated on the host; expected a "
                          "shape scratchpad the host's memory can hold");
    }
    b.size = want;
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
