// The threads of a parallel CPU block as fibers (src/exec/cpu/fibers.cpp): what a
// kernel's barrier() runs. The common arrival — a block barrier or the end of a block, not
// the last thread of its round, no groups — is inlined at the barrier: a few stores and a
// stack switch that resumes the next thread of the block where it waits.
#pragma once

#include <strata/config.hpp>
#include <strata/vec.hpp>

#include <cstdint>

// The inline switch: x86-64 with GCC's asm (GCC, clang), not in a device pass, and not
// under AddressSanitizer or ThreadSanitizer, which must be told of every switch (then
// every arrival goes through fiber_arrive, which tells them). A program must not mix
// translation units with and without sanitizers on one library (true of sanitizers in
// general).
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define STRATA_DETAIL_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STRATA_DETAIL_SANITIZED 1
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDA_ARCH__)
#define STRATA_FIBER_JUMP 1
#else
#define STRATA_FIBER_JUMP 0
#endif
#if STRATA_FIBER_JUMP && !defined(STRATA_DETAIL_SANITIZED)
#define STRATA_FIBER_INLINE 1
#else
#define STRATA_FIBER_INLINE 0
#endif

namespace strata::detail {

/// What a thread of a fiber block arrives at. (The first two take the inline path.)
enum class fiber_arrival : std::uint8_t { barrier, block_end, barrier_count, group_barrier };

/// A context of a fiber block: one per thread, and one for the OS thread that runs the
/// block (`main`). While suspended, `sp` and `pc` say where it resumes (with the
/// x86-64 switch; Boost's fcontext in `sp` elsewhere).
struct fiber_slot {
  void* sp = nullptr;
  void const* pc = nullptr;
  std::uint64_t barriers = 0;  // block barriers this thread has entered in this block
  fiber_arrival kind{};        // what it waits at (or last waited at)
};

/// The state of a fiber block that the inline path reads and writes (the rest is
/// fibers.cpp's fiber_block, which derives from this).
struct fiber_state {
  // Bits that send arrivals and resumptions off the inline path: any `slow` one sends
  // every arrival to fiber_arrive; any `stop` one makes a resumed thread look
  // (fiber_resumed).
  enum : std::uint8_t { grouped = 1, cancelled = 2, finished = 4 };
  static constexpr std::uint8_t slow = grouped | cancelled, stop = cancelled | finished;
  index_t current = 0;          // who runs
  index_t n = 0;                // threads per block
  index_t block = 0;            // the block they run
  index_t ends = 0;             // threads at the end of the block in this round (without groups)
  fiber_slot* slots = nullptr;  // n threads, then main
  std::uint8_t flags = 0;
};

/// Suspends the calling fiber until its block's threads have all arrived at this
/// barrier (returning how many passed a non-zero `predicate` at a barrier_count: CUDA's
/// __syncthreads_count), until the block's threads [first, first + size) (a group,
/// domain.hpp) have arrived at this group's barrier, or, at block_end, until all threads
/// have ended the block (returning the index of the fiber's next block, or -1 when its
/// range is done).
index_t fiber_arrive(fiber_state* block, fiber_arrival what, int predicate, index_t first,
                     index_t size);
/// What fiber_arrive returns to a thread resumed while a `stop` flag is set (it may throw
/// to unwind the fiber).
index_t fiber_resumed(fiber_state* block);

#if STRATA_FIBER_JUMP
/// Suspends the running context into `from` and resumes `to` (with `b` in rdi, which a
/// fiber's first entry takes). Every register but the stack and frame pointers is
/// declared clobbered, so the compiler keeps across the switch only what lives on after
/// it, as it does across a call; the frame pointer goes on the stack below the red zone.
/// The switch ends with an indirect jump, not a return: each barrier has its own jump,
/// whose target (where the next thread waits) the branch predictor learns, while a `ret`
/// would be predicted to return where the suspending thread called from, and a thread
/// resumes at its previous barrier. The floating-point control words stay as they are:
/// a block's threads share the OS thread's modes, as a GPU block's threads do.
[[gnu::always_inline]] inline void fiber_jump(fiber_slot* from, fiber_slot* to, fiber_state* b) {
  asm volatile(
      "lea -128(%%rsp), %%rsp\n\t"
      "push %%rbp\n\t"
      "lea 1f(%%rip), %%rax\n\t"
      "mov %%rsp, (%%rdi)\n\t"
      "mov %%rax, 8(%%rdi)\n\t"
      "mov (%%rsi), %%rsp\n\t"
      "mov %%rdx, %%rdi\n\t"
      "jmp *8(%%rsi)\n"
      "1:\n\t"
#if defined(__CET__)
      "endbr64\n\t"
#endif
      "pop %%rbp\n\t"
      "lea 128(%%rsp), %%rsp"
      : "+D"(from), "+S"(to), "+d"(b)
      :
      : "rax", "rbx", "rcx", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "memory", "cc",
        "st", "st(1)", "st(2)", "st(3)", "st(4)", "st(5)", "st(6)", "st(7)", "xmm0", "xmm1", "xmm2",
        "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",
        "xmm14", "xmm15"
#if defined(__AVX512F__)
        ,
        "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25",
        "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k1", "k2", "k3", "k4", "k5", "k6",
        "k7"
#endif
  );
}
#endif

/// A barrier (`what` barrier) or a block's end (block_end) of the calling fiber: the
/// inline path where it applies, fiber_arrive otherwise. Returns what fiber_arrive does
/// (a plain barrier ignores it).
inline index_t fiber_pass(fiber_state* b, fiber_arrival what) {
#if STRATA_FIBER_INLINE
  index_t const t = b->current;
  if (t + 1 != b->n && (b->flags & fiber_state::slow) == 0) [[likely]] {
    fiber_slot* m = b->slots + t;
    m->kind = what;
    if (what == fiber_arrival::barrier)
      ++m->barriers;
    else
      ++b->ends;
    b->current = t + 1;
    fiber_jump(m, m + 1, b);
    if ((b->flags & fiber_state::stop) != 0) [[unlikely]]
      return fiber_resumed(b);
    return b->block;
  }
#endif
  return fiber_arrive(b, what, 0, 0, 0);
}

}  // namespace strata::detail
