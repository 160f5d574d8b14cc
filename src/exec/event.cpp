#include <strata/exec/event.hpp>

#include "exec/threads/pool.hpp"
#include "exec/threads/wake.hpp"
#include "log.hpp"

#include <string>

namespace strata {
namespace detail {

namespace {

// A continuation must not throw; if one does, the others still run and waiters are still
// woken, and the exception is reported rather than lost silently.
void run_continuation(continuation& fn) noexcept {
  try {
    fn();
  } catch (std::exception const& e) {
    log(log_level::info,
        std::string("an event continuation threw (continuations must not throw): ") + e.what());
  } catch (...) {
    log(log_level::info, "an event continuation threw a non-standard exception");
  }
}

// Freed event blocks kept per thread (event_block_allocate): of one size, the event
// state's with its control block (the only one asked for), at most kept_blocks of them.
// Plain data, so that it is still there while the thread's other thread_locals are
// destroyed (an event they hold frees its block then); `closer` empties it at thread
// exit, after which frees go to the heap.
constexpr int kept_blocks = 64;
struct block_cache {
  void* head = nullptr;
  std::size_t size = 0;
  int count = 0;
  bool closed = false;
};
thread_local block_cache blocks;
struct block_closer {
  bool armed = false;
  ~block_closer() {
    blocks.closed = true;
    while (blocks.head) {
      void* next = *static_cast<void**>(blocks.head);
      ::operator delete(blocks.head);
      blocks.head = next;
    }
    blocks.count = 0;
  }
};
thread_local block_closer closer;

#if defined(STRATA_ASAN) || defined(STRATA_TSAN)
constexpr bool keep_blocks = false;
#else
constexpr bool keep_blocks = true;
#endif

}  // namespace

void* event_block_allocate(std::size_t bytes) {
  if constexpr (keep_blocks) {
    auto& c = blocks;
    if (c.head && bytes == c.size) {
      void* block = c.head;
      c.head = *static_cast<void**>(block);
      --c.count;
      return block;
    }
  }
  return ::operator new(bytes);
}

void event_block_free(void* block, std::size_t bytes) noexcept {
  if constexpr (keep_blocks) {
    auto& c = blocks;
    if (!c.closed && c.count < kept_blocks && bytes >= sizeof(void*) &&
        (bytes == c.size || c.size == 0)) {
      if (c.size == 0) {
        closer.armed = true;  // constructed now, so that it empties the list at exit
        c.size = bytes;
      }
      *static_cast<void**>(block) = c.head;
      c.head = block;
      ++c.count;
      return;
    }
  }
  // Unsized: clang declares the sized one only with -fsized-deallocation.
  ::operator delete(block);
}

void event_state::complete(std::exception_ptr error) {
  // Once: the completer that moves the status out of pending; the others return.
  int expected = pending;
  if (!status_.compare_exchange_strong(expected, completing, std::memory_order_acquire,
                                       std::memory_order_relaxed))
    return;
  error_ = std::move(error);
  // Sequentially consistent with then() and add_waiter(), which set listened_ and then
  // read the status: either this reads listened_ set, and collects their listeners under
  // the lock (a listener registered while the status was `completing` included), or they
  // read the final status and do not register (they run or return at once).
  status_.store(error_ ? failed : done, std::memory_order_seq_cst);
  if (!listened_.load(std::memory_order_seq_cst)) return;
  continuation first;
  std::vector<continuation> more;
  {
    std::lock_guard lock(mutex_);
    first = std::move(first_);
    more.swap(more_);
    // Under the lock: a woken waiter takes itself off the list under it too, so its
    // links stay valid until every waiter here has been notified.
    notify_all(waiters_, &waiter::on_event);
  }
  // In the order they were added: `first_` holds the earliest.
  if (first) run_continuation(first);
  for (auto& fn : more) run_continuation(fn);
}

void event_state::then(continuation fn) {
  // An empty one (an empty std::function) fails when run, as with std::function: logged
  // at completion like any other continuation that throws, in its place in the order.
  if (!fn) fn = [] { throw std::bad_function_call(); };
  {
    std::lock_guard lock(mutex_);
    listened_.store(true, std::memory_order_seq_cst);
    if (status_.load(std::memory_order_seq_cst) <= pending) {
      if (!first_ && more_.empty())
        first_ = std::move(fn);
      else
        more_.push_back(std::move(fn));
      return;
    }
  }
  fn();  // already complete: runs in the caller, whose exceptions are its own
}

bool event_state::add_waiter(waiter& w) {
  std::lock_guard lock(mutex_);
  listened_.store(true, std::memory_order_seq_cst);  // (see complete)
  if (status_.load(std::memory_order_seq_cst) > pending) return false;
  link(waiters_, w, &waiter::on_event);
  return true;
}

void event_state::remove_waiter(waiter& w) {
  std::lock_guard lock(mutex_);
  unlink(waiters_, w, &waiter::on_event);
}

}  // namespace detail

namespace {

// A join's event, its countdown and its parts' errors in one allocation: the result event
// shares this block's ownership (an aliasing shared_ptr), and each part's continuation
// holds it with 32 bytes of captures, kept in place by `continuation`.
struct join_state {
  explicit join_state(std::size_t parts)
      : n(parts), more(parts > inline_parts ? new std::exception_ptr[parts] : nullptr) {}
  static constexpr std::size_t inline_parts = 4;
  detail::event_state state;
  std::atomic<std::size_t> left{0};
  std::size_t n;
  std::exception_ptr first_errors[inline_parts];
  std::unique_ptr<std::exception_ptr[]> more;
  std::exception_ptr* errors() noexcept { return more ? more.get() : first_errors; }
  /// One part is done; the last completes the join with the first error in the parts'
  /// order.
  void arrive() {
    if (left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    std::exception_ptr first;
    auto* e = errors();
    for (std::size_t i = 0; i < n && !first; ++i) first = e[i];
    state.complete(std::move(first));
  }
};

}  // namespace

event when_all(after const& deps) {
  auto const& parts = deps.events;
  std::size_t waiting = 0, last = 0;
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (!parts[i].ready()) {
      ++waiting;
      last = i;
    }
  if (waiting == 0) {
    auto err = deps.error();
    return err ? event::failed(err) : event::completed();
  }
  // One event still pending and no failure among the others: that event is the result
  // (the same completion and error), without a new event and continuation per call —
  // halo exchanges and graph passes join single events often.
  if (waiting == 1 && !deps.error()) return parts[last];
  auto join = std::make_shared<join_state>(parts.size());
  event result(std::shared_ptr<detail::event_state>(join, &join->state));
  // Expected to end when the last of its parts is (if each says when): a waiter on the
  // join of emulated transfers spins for their end instead of parking.
  std::chrono::steady_clock::time_point due{};
  for (auto const& e : parts) {
    if (e.ready()) continue;
    auto const when = e.state()->expected();
    if (when.time_since_epoch().count() == 0) {
      due = {};
      break;
    }
    due = std::max(due, when);
  }
  if (due.time_since_epoch().count() != 0) result.expect(due);
  // The first failure in the order of `deps`: each part's continuation puts its error in
  // its slot, and the last one completes the join. Every part with a state gets one (one
  // that has completed since it was counted runs it here, at once) and arrives once, so
  // the join completes at the last arrival, never before the last part is registered. The
  // continuations hold no part (a continuation that owned its own event would keep it,
  // and whatever waits on it, alive forever if it never completes); each reads its
  // event's state, alive while it runs its continuations. (A continuation that the user
  // adds to the join and that captures one of its parts does make such a cycle.)
  std::size_t with_state = 0;
  for (auto const& e : parts) with_state += e.state() != nullptr;
  join->left.store(with_state, std::memory_order_relaxed);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    detail::event_state* state = parts[i].state();
    if (!state) continue;
    auto arrive = [join, state, i] {
      join->errors()[i] = state->error();
      join->arrive();
    };
    static_assert(detail::continuation::fits<decltype(arrive)>);
    state->then(std::move(arrive));
  }
  return result;
}

namespace detail {

void complete_with(event const& from, event const& to) {
  detail::event_state* state = from.state();
  if (!state) return to.complete();
  from.then([state, to] { to.complete(state->error()); });
}

}  // namespace detail

}  // namespace strata
