// Parallel CPU blocks as cooperatively switched fibers (Boost.Context): barrier() saves
// the thread's registers and switches to the next thread of the block, so a block of B
// threads runs on one OS thread in rounds, one round per barrier.
#include <strata/error.hpp>
#include <strata/exec/cpu/run.hpp>

#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <memory>
#include <new>
#include <vector>

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

struct cached_stack {
  ctx::stack_context allocate() {
    if (stacks.free.empty()) return stacks.make.allocate();
    auto s = stacks.free.back();
    stacks.free.pop_back();
    return s;
  }
  void deallocate(ctx::stack_context& s) noexcept { stacks.free.push_back(s); }
};

}  // namespace

struct fiber_block {
  struct member {
    ctx::fiber self;    // the thread's fiber while it is suspended
    ctx::fiber caller;  // the scheduler, while the thread runs
    bool done = false;
    bool at_barrier = false;
  };
  std::vector<member> threads;
  index_t current = 0;
  std::exception_ptr error;
};

void fiber_barrier(fiber_block* block) {
  auto& m = block->threads[static_cast<std::size_t>(block->current)];
  m.at_barrier = true;
  m.caller = std::move(m.caller).resume();
}

void run_fiber_block(index_t threads, void (*body)(void*, index_t, fiber_block*), void* c) {
  fiber_block block;
  block.threads.resize(static_cast<std::size_t>(threads));
  for (index_t t = 0; t < threads; ++t) {
    block.threads[static_cast<std::size_t>(t)].self =
        ctx::fiber(std::allocator_arg, cached_stack{}, [&block, t, body, c](ctx::fiber&& caller) {
          auto& m = block.threads[static_cast<std::size_t>(t)];
          m.caller = std::move(caller);
          try {
            body(c, t, &block);
          } catch (ctx::detail::forced_unwind const&) {
            throw;  // the block is being torn down: let Boost unwind this stack
          } catch (...) {
            if (!block.error) block.error = std::current_exception();
          }
          m.done = true;
          return std::move(m.caller);
        });
  }
  for (;;) {
    index_t done = 0, waiting = 0;
    for (index_t t = 0; t < threads; ++t) {
      auto& m = block.threads[static_cast<std::size_t>(t)];
      if (!m.done) {
        m.at_barrier = false;
        block.current = t;
        m.self = std::move(m.self).resume();
        if (block.error) break;
      }
      if (m.done)
        ++done;
      else
        ++waiting;
    }
    // Unfinished fibers are unwound when `block` goes out of scope.
    if (block.error) std::rethrow_exception(block.error);
    if (done == threads) return;
    if (done > 0)
      throw error("barrier(): " + std::to_string(done) + " of the block's " +
                  std::to_string(threads) + " threads returned while " + std::to_string(waiting) +
                  " wait at a barrier; every thread of a parallel block must reach every "
                  "barrier (on a GPU this block would hang)");
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

}  // namespace strata::detail
