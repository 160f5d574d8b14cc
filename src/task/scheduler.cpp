#include "task/scheduler.hpp"

#include <strata/error.hpp>
#include <strata/exec/trace.hpp>

#include "exec/exec_state.hpp"
#include "exec/threads/pool.hpp"
#include "task/graph_state.hpp"

#include <cstdint>
#include <new>

namespace strata::task::detail {
namespace {

// The arena and member index of the task the calling worker is running, so that the
// successors it makes ready go to its own deque (Ripple §6.1).
thread_local arena* my_arena = nullptr;
thread_local int my_member = -1;

// A device node whose event completed is pushed back as a completion: the same pointer
// with its low bit set, so the worker finishes it (successors) instead of running it.
node* as_completion(node* n) noexcept {
  return reinterpret_cast<node*>(reinterpret_cast<std::uintptr_t>(n) | 1u);
}
bool is_completion(node* n) noexcept {
  return (reinterpret_cast<std::uintptr_t>(n) & 1u) != 0;
}
node* strip(node* n) noexcept {
  return reinterpret_cast<node*>(reinterpret_cast<std::uintptr_t>(n) & ~std::uintptr_t{1});
}

// The ready successors [begin, end) of a fan-out node (node::fan), as one task: the same
// deque slot holds a pointer to it with bit 1 set. Whoever runs it splits off the upper
// half for thieves whenever its own deque is empty (lazy binary splitting, as oneTBB's
// parallel_for does), so 10^5 successors cost O(log n) deque operations plus a loop
// when no one steals, and each steal hands over half of what is left.
struct alignas(8) successor_range {
  node* const* begin;
  node* const* end;
};
node* as_range(successor_range* r) noexcept {
  return reinterpret_cast<node*>(reinterpret_cast<std::uintptr_t>(r) | 2u);
}
bool is_range(node* n) noexcept {
  return (reinterpret_cast<std::uintptr_t>(n) & 2u) != 0;
}
successor_range* range_of(node* n) noexcept {
  return reinterpret_cast<successor_range*>(reinterpret_cast<std::uintptr_t>(n) &
                                            ~std::uintptr_t{2});
}

}  // namespace

arena::arena(slot_set const* s, int slot_count, int device_workers)
    : slots(s), member_of_slot(static_cast<std::size_t>(slot_count), -1) {
  for (int i = 0; i < slot_count; ++i)
    if (s->has(i)) {
      member_of_slot[static_cast<std::size_t>(i)] = static_cast<int>(members.size());
      members.push_back(i);
    }
  // Ripple §6.2: one more device-priority worker than there are devices, the rest CPU
  // priority; at least one of each kind of work's runners, and never all workers but one
  // member's arena (which runs both kinds).
  auto const n = static_cast<int>(members.size());
  int device = std::max(1, std::min(device_workers + 1, n - 1));
  for (int m = 0; m < n; ++m) {
    device_priority.push_back(m >= n - device ? 1 : 0);
    cpu.push_back(std::make_unique<ws_deque<node*>>());
    dev.push_back(std::make_unique<ws_deque<node*>>());
  }
}

scheduler::scheduler(strata::detail::pool& p, int slots, int devices)
    : pool_(p), slots_(slots), device_workers_(devices) {}

scheduler::~scheduler() = default;

arena& scheduler::arena_for(slot_set const* s) {
  int const count = arena_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    auto* a = arenas_[static_cast<std::size_t>(i)].load(std::memory_order_acquire);
    if (a->slots == s) return *a;
  }
  std::lock_guard lock(mutex_);
  for (auto& a : owned_)
    if (a->slots == s) return *a;
  if (owned_.size() >= arenas_.size())
    throw error(
        "task graphs: more than 64 distinct sets of PUs ran graphs; expected few "
        "(one per group of PUs a graph runs on)");
  owned_.push_back(std::make_unique<arena>(s, slots_, device_workers_));
  auto* a = owned_.back().get();
  if (a->members.empty())
    throw invalid_argument("strata::run(graph, place): the place has no host PU to run on");
  arenas_[owned_.size() - 1].store(a, std::memory_order_release);
  arena_count_.store(static_cast<int>(owned_.size()), std::memory_order_release);
  return *a;
}

void scheduler::start(graph_state& g, slot_set const* slots) {
  auto& a = arena_for(slots);
  g.where = &a;
  active_runs_.fetch_add(1, std::memory_order_acq_rel);
  if (g.roots.empty()) return complete_run(g);
  for (auto* r : g.roots) push(r);
}

void scheduler::inject(arena& a, node* n, bool device) {
  {
    std::lock_guard lock(a.injected_mutex);
    (device ? a.injected_dev : a.injected_cpu).push_back(n);
  }
  a.injected.fetch_add(1, std::memory_order_seq_cst);
  pool_.wake_one(a.members, device ? &a.device_priority : nullptr, true);
}

void scheduler::push(node* n) {
  node* const plain = strip(n);
  auto& a = *plain->owner->where;
  bool const device = plain->kind == execution_kind::device || is_completion(n);
  if (my_arena == &a) {
    auto m = static_cast<std::size_t>(my_member);
    if (!device || a.device_priority[m]) {
      auto& q = device ? *a.dev[m] : *a.cpu[m];
      q.push(n);
      // Workers that are spinning find the task themselves; only sleeping ones need a
      // wake-up, and only when the owner has more than the one it will pop next.
      if (a.members.size() > 1)
        pool_.wake_one(a.members, device ? &a.device_priority : nullptr, false);
      return;
    }
  }
  inject(a, n, device);
}

node* scheduler::take(arena& a, int m) {
  auto const mi = static_cast<std::size_t>(m);
  auto const n = a.members.size();
  auto from_injected = [&a](bool device) -> node* {
    if (a.injected.load(std::memory_order_acquire) == 0) return nullptr;
    std::lock_guard lock(a.injected_mutex);
    auto& q = device ? a.injected_dev : a.injected_cpu;
    if (q.empty()) return nullptr;
    node* x = q.front();
    q.pop_front();
    a.injected.fetch_sub(1, std::memory_order_relaxed);
    return x;
  };
  // Algorithm 4 with the round-robin strategy: victims from the next member on.
  auto steal = [&](bool device) -> node* {
    for (std::size_t i = 1; i < n; ++i) {
      auto v = (mi + i) % n;
      if (node* x = (device ? a.dev[v] : a.cpu[v])->steal()) return x;
    }
    return nullptr;
  };
  // Device-priority workers look at device work first, and only they run it (Ripple
  // §6.2); CPU-priority workers steal only CPU work.
  // A lone member's deques have no thieves: no fence needed to pop.
  if (n == 1) {
    if (a.device_priority[mi])
      if (node* x = a.dev[mi]->pop_unshared()) return x;
    if (node* x = a.cpu[mi]->pop_unshared()) return x;
  }
  if (a.device_priority[mi]) {
    if (node* x = a.dev[mi]->pop()) return x;
    if (node* x = from_injected(true)) return x;
    if (node* x = steal(true)) return x;
  }
  if (node* x = a.cpu[mi]->pop()) return x;
  if (node* x = from_injected(false)) return x;
  return steal(false);
}

bool scheduler::available(int slot) const noexcept {
  int const count = arena_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    auto* a = arenas_[static_cast<std::size_t>(i)].load(std::memory_order_acquire);
    int m = a->member_of_slot[static_cast<std::size_t>(slot)];
    if (m < 0) continue;
    if (a->injected.load(std::memory_order_acquire) > 0) return true;
    for (std::size_t v = 0; v < a->members.size(); ++v)
      if (!a->cpu[v]->empty() ||
          (a->device_priority[static_cast<std::size_t>(m)] && !a->dev[v]->empty()))
        return true;
  }
  return false;
}

bool scheduler::find_and_run(int slot) {
  int const count = arena_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    auto* a = arenas_[static_cast<std::size_t>(i)].load(std::memory_order_acquire);
    int m = a->member_of_slot[static_cast<std::size_t>(slot)];
    if (m < 0) continue;
    if (node* n = take(*a, m)) {
      run_chain(*a, m, n);
      return true;
    }
  }
  return false;
}

bool scheduler::work(int slot) {
  bool ran = false;
  while (find_and_run(slot)) ran = true;
  return ran;
}

bool scheduler::help(int slot) {
  return find_and_run(slot);
}

void scheduler::run_chain(arena& a, int m, node* n) {
  auto* saved_arena = my_arena;
  auto saved_member = my_member;
  my_arena = &a;
  my_member = m;
  // The first ready successor runs here, next, without a trip through the deque.
  while (n) n = is_range(n) ? run_range(a, m, n) : is_completion(n) ? finish(strip(n)) : execute(n);
  my_arena = saved_arena;
  my_member = saved_member;
}

node* scheduler::run_range(arena& a, int m, node* tagged) {
  auto* r = range_of(tagged);
  node* const* it = r->begin;
  node* const* end = r->end;
  delete r;
  auto& own = *a.cpu[static_cast<std::size_t>(m)];
  bool const others = a.members.size() > 1;
  // Successors that all lead to one join (a fan-in, like a reduction's last node) count
  // it down once by how many of them ran here, not once each: one contended locked
  // instruction per range instead of per task.
  node* join = nullptr;
  std::int32_t batch = 0;
  auto count_down = [&]() -> node* {
    node* ready = nullptr;
    if (batch > 0 && join->pending.fetch_sub(batch, std::memory_order_acq_rel) == batch)
      ready = join;
    batch = 0;
    return ready;
  };
  while (it != end) {
    // Lazy splitting: only when nothing of this worker's is left for a thief to take.
    if (others && end - it > 1 && own.empty()) {
      node* const* mid = it + (end - it) / 2;
      if (auto* half = new (std::nothrow) successor_range{mid, end}) {
        own.push(as_range(half));
        pool_.wake_one(a.members, nullptr, false);
        end = mid;
      }
    }
    // Each successor and the chain it starts run here; a fan-out inside it goes to the
    // deque (running it here would nest ranges on the stack without bound).
    node* first = *it++;
    if (first->out == 1 && first->near[0]->initial > 1) {
      if (first->near[0] != join) {
        if (node* ready = count_down()) push(ready);
        join = first->near[0];
      }
      if (run_body(first)) {
        first->pending.store(first->initial, std::memory_order_relaxed);
        ++batch;
      }
      continue;
    }
    for (node* x = first; x;) {
      if (is_range(x)) {
        own.push(x);
        pool_.wake_one(a.members, nullptr, false);
        break;
      }
      x = execute(x);
    }
  }
  // The join runs next here, as finish would run it (device work only on device workers).
  node* ready = count_down();
  if (ready && ready->kind != execution_kind::cpu &&
      !a.device_priority[static_cast<std::size_t>(m)]) {
    push(ready);
    return nullptr;
  }
  return ready;
}

bool scheduler::run_body(node* n) {
  graph_state& g = *n->owner;
  if (!g.cancelled.load(std::memory_order_acquire)) {
    trace::span traced(trace::enabled() && !n->info->name.empty() ? std::string_view(n->info->name)
                                                                  : std::string_view("task"),
                       "task");
    try {
      event e = n->body();
      if (!e.ready()) {
        // Completes later, wherever the event completes; the worker moves on.
        e.then([this, n, e] { async_done(n, e.error()); });
        return false;
      }
      if (auto err = e.error()) g.fail(err);
    } catch (...) {
      g.fail(std::current_exception());
    }
  }
  return true;
}

node* scheduler::execute(node* n) {
  return run_body(n) ? finish(n) : nullptr;
}

void scheduler::async_done(node* n, std::exception_ptr err) {
  if (err) n->owner->fail(std::move(err));
  // A completion of device work is device-priority work (Ripple §6.2).
  inject(*n->owner->where, as_completion(n), true);
}

node* scheduler::finish(node* n) {
  // Ready for the next run (Algorithm 3, line 4): every predecessor has counted down.
  n->pending.store(n->initial, std::memory_order_relaxed);
  graph_state& g = *n->owner;
  // Read the successors before counting any down: once the last one is, the run may end
  // and the graph be destroyed.
  node* const* it = n->out <= 2 ? n->near : n->far;
  node* const* const end = it + n->out;
  if (it == end) {
    sink_done(g);
    return nullptr;
  }
  if (n->fan && my_arena == g.where) {
    if (auto* r = new (std::nothrow) successor_range{it, end}) return as_range(r);
  }
  bool const device_worker =
      my_arena && my_arena->device_priority[static_cast<std::size_t>(my_member)];
  node* next = nullptr;
  for (; it != end; ++it) {
    node* s = *it;
    // A node's only predecessor need not count down (no other thread reads the counter
    // this run; it stays at 1 for the next): one locked instruction less per task in
    // chains and trees.
    if (s->initial != 1 && s->pending.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    if (!next && my_arena == s->owner->where && (s->kind == execution_kind::cpu || device_worker))
      next = s;
    else
      push(s);
  }
  return next;
}

void scheduler::sink_done(graph_state& g) {
  if (g.sinks_left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // A pass is over. Conditional graphs run again while their predicate holds.
  if (g.predicate && !g.cancelled.load(std::memory_order_acquire)) {
    bool again = false;
    try {
      again = g.predicate();
    } catch (...) {
      g.fail(std::current_exception());
    }
    if (again) {
      g.sinks_left.store(g.sinks, std::memory_order_relaxed);
      for (auto* r : g.roots) push(r);
      return;
    }
  }
  complete_run(g);
}

void scheduler::complete_run(graph_state& g) {
  event done = g.done;
  std::exception_ptr err;
  {
    std::lock_guard lock(g.error_mutex);
    err = g.error;
  }
  g.running.store(false, std::memory_order_release);
  // After this the graph may be run again or destroyed: touch only locals.
  done.complete(err);
  active_runs_.fetch_sub(1, std::memory_order_acq_rel);
  strata::detail::notify_progress();
}

}  // namespace strata::task::detail
