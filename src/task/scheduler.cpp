#include "task/scheduler.hpp"

#include <strata/error.hpp>
#include <strata/exec/trace.hpp>

#include "exec/exec_state.hpp"
#include "exec/spin.hpp"
#include "exec/threads/pool.hpp"
#include "exec/threads/wake.hpp"
#include "task/graph_state.hpp"

#include <cstdint>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace strata::task::detail {
namespace {

// The arena and member index of the task the calling worker is running, so that the
// successors it makes ready go to its own deque (Ripple §6.1).
// Initial-exec TLS: libstrata is linked into programs (not dlopen'ed), and these are read
// on every spawn and push, where a __tls_get_addr call would cost more than the rest.
[[gnu::tls_model("initial-exec")]] thread_local arena* my_arena = nullptr;
[[gnu::tls_model("initial-exec")]] thread_local int my_member = -1;

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

// A spawned task (task_group) in a deque slot: its pointer with bit 2 set.
node* as_dyn(dyn_task* t) noexcept {
  return reinterpret_cast<node*>(reinterpret_cast<std::uintptr_t>(t) | 4u);
}
bool is_dyn(node* n) noexcept {
  return (reinterpret_cast<std::uintptr_t>(n) & 4u) != 0;
}
dyn_task* dyn_of(node* n) noexcept {
  return reinterpret_cast<dyn_task*>(reinterpret_cast<std::uintptr_t>(n) & ~std::uintptr_t{4});
}

// The place of the node the calling thread runs (current_node_place).
[[gnu::tls_model("initial-exec")]] thread_local strata::place const* my_place = nullptr;
// Trace: the node whose body this thread ran last, with a point inside its span, for
// finish to start the arrows to the successors it makes ready (set only while tracing).
struct ran_in_span {
  node const* n = nullptr;
  trace::detail::flow_origin at;
};
thread_local ran_in_span last_ran;

// Each thread's free spawned-task blocks: a spawn and its completion allocate nothing
// once a thread has run as many tasks at once as it will. Blocks freed by another thread
// (a thief ran the task) join that thread's list. The list is plain data (no guard on
// each access); a separate owner, touched only when a block is first allocated, frees
// the list when the thread ends.
struct task_cache {
  dyn_task* head;
  std::size_t count;
};
[[gnu::tls_model("initial-exec")]] thread_local task_cache free_tasks{nullptr, 0};
constexpr std::size_t max_cached_tasks = 4096;

struct task_cache_owner {
  bool armed = false;
  ~task_cache_owner() {
    while (auto* t = free_tasks.head) {
      free_tasks.head = t->next_free;
      ::operator delete (t, std::align_val_t{64});
    }
    free_tasks.count = max_cached_tasks;  // late frees on this thread go to the heap
  }
};
thread_local task_cache_owner cache_owner;

void free_task(dyn_task* t) noexcept {
  if (!free_tasks.head) cache_owner.armed = true;  // this thread's list has an owner
  if (free_tasks.count >= max_cached_tasks) {
    ::operator delete (t, std::align_val_t{64});
    return;
  }
  t->next_free = free_tasks.head;
  free_tasks.head = t;
  ++free_tasks.count;
}

// Credits (issue 12, "per-worker counts in a group"): a worker counts spawned tasks into
// their group in batches and keeps the counts of the tasks it finishes instead of giving
// each back, so a group's shared counter is touched about once per batch or per switch
// of group, not twice per task (two workers spawning into one group would otherwise
// pass its cache line back and forth on every spawn and every end). The count of a group
// is then its unfinished tasks plus the credits threads hold for it: never too low, so it
// reaches zero only once every task has ended and every credit is back. A worker holds
// credits for one group at a time and gives them back (flush_credits) before it runs
// anything else, waits, joins or parks, so no joiner waits on credits nobody returns; a
// group cannot end (nor be destroyed) while a worker holds credits for it.
struct group_credit {
  task_group* group;
  std::int64_t count;
};
[[gnu::tls_model("initial-exec")]] thread_local group_credit credit{nullptr, 0};
constexpr std::int64_t credit_batch = 64;

// The calling worker holds credits for `g` (after returning those of another group).
void credit_switch(task_group* g) noexcept {
  if (credit.group != g) {
    flush_credits();
    credit.group = g;
  }
}

}  // namespace

namespace {
// Inline runs of spawn(inline_if_busy, ...) nested on this thread's stack, and the most
// there may be (a recursion that spawns one child at a time would otherwise go as deep
// as it is long; tasks may also run on a kernel's 128 KiB fiber stack while it waits).
[[gnu::tls_model("initial-exec")]] thread_local int inline_depth = 0;
constexpr int max_inline_depth = 48;
}  // namespace

bool enter_inline() noexcept {
  auto* a = my_arena;
  if (!a || inline_depth >= max_inline_depth) return false;
  // Keep one task exposed for thieves: the oldest is the biggest piece of a recursion.
  if (a->members.size() > 1 && a->cpu[static_cast<std::size_t>(my_member)]->empty()) return false;
  ++inline_depth;
  return true;
}

void leave_inline() noexcept {
  --inline_depth;
}

void flush_credits() noexcept {
  if (auto* g = credit.group) {
    auto const n = credit.count;
    credit = {nullptr, 0};  // first: the release may end the group
    if (n) g->release(n);
  }
}

dyn_task* allocate_task() {
  if (auto* t = free_tasks.head) {
    free_tasks.head = t->next_free;
    --free_tasks.count;
    return t;
  }
  cache_owner.armed = true;  // registers the list's owner for this thread
  return ::new (::operator new (sizeof(dyn_task), std::align_val_t{64})) dyn_task;
}

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

arena& scheduler::arena_of(node* n) noexcept {
  return (n->flags & node::placed) ? *n->extra->in : *n->owner->where;
}

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
  if (g.placed)
    g.for_each_node([&](node* n) {
      if (n->flags & node::placed)
        n->extra->in = &arena_for(static_cast<slot_set const*>(n->extra->slots));
    });
  active_runs_.fetch_add(1, std::memory_order_acq_rel);
  if (g.roots.empty()) return complete_run(g);
  start_pass(g);
}

void scheduler::start_pass(graph_state& g) {
  for (auto& hook : g.pass_hooks) hook();
  // With condition nodes a pass ends when no task of it is left; else when every sink
  // has run.
  g.sinks_left.store(g.conditions ? static_cast<long>(g.roots.size()) : g.sinks,
                     std::memory_order_relaxed);
  // From outside the graph's arena (a thread calling run): every root of the arena is
  // queued before any worker is woken, so a worker woken on this thread's CPU (which
  // preempts it) cannot hold back the roots not yet pushed (session 46: a graph's other
  // roots waited for a whole first-PU kernel that way). Roots placed elsewhere, and
  // runs started from inside the arena (conditional passes), push one by one.
  auto& a = *g.where;
  if (my_arena == &a || g.roots.size() == 1) {
    for (auto* r : g.roots) push(r);
    return;
  }
  // Once this arena's roots are published the run may end and the graph be destroyed
  // (when every root is here): from then on only the arena and locals are touched. Roots
  // placed in other arenas are gathered first and pushed last (until then they keep the
  // pass from ending).
  int cpu = 0, dev = 0;
  std::vector<node*> elsewhere;
  {
    std::lock_guard lock(a.injected_mutex);
    for (auto* r : g.roots) {
      node* const plain = strip(r);
      if (&arena_of(plain) != &a) {
        elsewhere.push_back(r);
        continue;
      }
      bool const device = plain->kind == execution_kind::device || is_completion(r);
      (device ? a.injected_dev : a.injected_cpu).push_back(r);
      ++(device ? dev : cpu);
    }
  }
  a.injected.fetch_add(cpu + dev, std::memory_order_seq_cst);
  if (dev) pool_.wake_some(a.members, &a.device_priority, dev);
  if (cpu) pool_.wake_some(a.members, nullptr, cpu);
  for (auto* r : elsewhere) push(r);
}

void scheduler::inject(arena& a, node* n, bool device) {
  {
    std::lock_guard lock(a.injected_mutex);
    (device ? a.injected_dev : a.injected_cpu).push_back(n);
  }
  a.injected.fetch_add(1, std::memory_order_seq_cst);
  pool_.wake_one(a.members, device ? &a.device_priority : nullptr);
}

void scheduler::push(node* n) {
  node* const plain = strip(n);
  auto& a = arena_of(plain);
  bool const device = plain->kind == execution_kind::device || is_completion(n);
  if (my_arena == &a) {
    auto m = static_cast<std::size_t>(my_member);
    auto const before = (device ? *a.dev[m] : *a.cpu[m]).push(n);
    // A push onto an empty deque notifies (a parked member is woken; spinning ones find
    // the task themselves). A member parks only after seeing every deque empty, so the
    // first push after that sees an empty deque and wakes it; later pushes onto a deque
    // that still holds tasks need no fence (if a thief emptied it unseen, the pusher
    // itself is awake and runs what it pushed: parallelism is late, progress is not).
    // A lone member has nobody to wake.
    if (before == 0 && a.members.size() > 1)
      pool_.wake_one(a.members, device ? &a.device_priority : nullptr);
    return;
  }
  inject(a, n, device);
}

void scheduler::spawn(dyn_task* t) {
  if (my_arena) {
    auto& a = *my_arena;
    auto const before = a.cpu[static_cast<std::size_t>(my_member)]->push(as_dyn(t));
    if (before == 0 && a.members.size() > 1) pool_.wake_one(a.members, nullptr);
    return;
  }
  auto& exec = strata::detail::current_exec();
  inject(arena_for(exec.slots.of(exec.machine).second), as_dyn(t), false);
}

void scheduler::pass_on(int slot) {
  int const count = arena_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    auto* a = arenas_[static_cast<std::size_t>(i)].load(std::memory_order_acquire);
    if (a->member_of_slot[static_cast<std::size_t>(slot)] < 0) continue;
    bool work = a->injected.load(std::memory_order_acquire) > 0;
    for (std::size_t v = 0; !work && v < a->members.size(); ++v)
      work = !a->cpu[v]->empty() || !a->dev[v]->empty();
    if (work) pool_.wake_one(a->members, nullptr);
  }
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
      if (node* x = (device ? a.dev[v] : a.cpu[v])->steal()) {
        if (trace::enabled()) strata::detail::note_steal();  // the trace's steal counter
        return x;
      }
    }
    return nullptr;
  };
  auto device_work = [&]() -> node* {
    if (node* x = a.dev[mi]->pop()) return x;
    if (node* x = from_injected(true)) return x;
    return steal(true);
  };
  // A lone member's deques have no thieves: no fence needed to pop.
  if (n == 1) {
    if (node* x = a.dev[mi]->pop_unshared()) return x;
    if (node* x = a.cpu[mi]->pop_unshared()) return x;
    if (node* x = from_injected(true)) return x;
    return from_injected(false);
  }
  // Device-priority workers look at device work first (Ripple §6.2). CPU-priority
  // workers take it only when they find no CPU work: device work queued while every
  // device-priority worker is busy or blocked in a nested wait still runs.
  bool const device_first = a.device_priority[mi] != 0;
  if (device_first)
    if (node* x = device_work()) return x;
  if (node* x = a.cpu[mi]->pop()) return x;
  if (node* x = from_injected(false)) return x;
  if (node* x = steal(false)) return x;
  return device_first ? nullptr : device_work();
}

bool scheduler::available(int slot) const noexcept {
  int const count = arena_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    auto* a = arenas_[static_cast<std::size_t>(i)].load(std::memory_order_acquire);
    int m = a->member_of_slot[static_cast<std::size_t>(slot)];
    if (m < 0) continue;
    if (a->injected.load(std::memory_order_acquire) > 0) return true;
    for (std::size_t v = 0; v < a->members.size(); ++v)
      if (!a->cpu[v]->empty() || !a->dev[v]->empty()) return true;
  }
  return false;
}

bool scheduler::find_and_run(int slot, bool one) {
  // The arena of the task this thread runs first (a nested wait or a join most likely
  // waits for work there: its own children), then every arena it belongs to.
  if (auto* a = my_arena)
    if (node* n = take(*a, my_member)) {
      run_chain(*a, my_member, n, one);
      return true;
    }
  int const count = arena_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    auto* a = arenas_[static_cast<std::size_t>(i)].load(std::memory_order_acquire);
    int m = a->member_of_slot[static_cast<std::size_t>(slot)];
    if (m < 0 || a == my_arena) continue;
    if (node* n = take(*a, m)) {
      run_chain(*a, m, n, one);
      return true;
    }
  }
  return false;
}

bool scheduler::work(int slot) {
  bool ran = false;
  while (find_and_run(slot, false)) ran = true;
  return ran;
}

bool scheduler::help(int slot) {
  return find_and_run(slot, true);
}

void scheduler::run_chain(arena& a, int m, node* n, bool one) {
  auto* saved_arena = my_arena;
  auto saved_member = my_member;
  my_arena = &a;
  my_member = m;
  // The first ready successor runs here, next, without a trip through the deque.
  while (n) {
    if (is_dyn(n)) {
      run_dyn(dyn_of(n));
      // Spawned tasks come from this worker's own deque, LIFO: keep taking them here
      // (unless helping from a wait, which re-checks what it waits for after each).
      if (one) break;
      auto& own = *a.cpu[static_cast<std::size_t>(m)];
      n = a.members.size() == 1 ? own.pop_unshared() : own.pop();
      continue;
    }
    flush_credits();  // a graph node may run long or wait: give the group's counts back
    n = is_range(n) ? run_range(a, m, n) : is_completion(n) ? finish(strip(n)) : execute(n);
  }
  flush_credits();
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
        pool_.wake_one(a.members, nullptr);
        end = mid;
      }
    }
    // Each successor and the chain it starts run here; a fan-out inside it goes to the
    // deque (running it here would nest ranges on the stack without bound).
    node* first = *it++;
    if (first->out == 1 && first->near[0]->initial > 1 && !(first->flags & node::condition)) {
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
        pool_.wake_one(a.members, nullptr);
        break;
      }
      x = execute(x);
    }
  }
  // The join runs next here, as finish would run it (device work only on device workers).
  node* ready = count_down();
  if (ready &&
      ((ready->kind != execution_kind::cpu && !a.device_priority[static_cast<std::size_t>(m)]) ||
       &arena_of(ready) != &a)) {
    push(ready);
    return nullptr;
  }
  return ready;
}

bool scheduler::run_body(node* n) {
  graph_state& g = *n->owner;
  if (!g.is_cancelled()) {
    // The span records its name when it ends, which can be after the node completed: an
    // asynchronous body's event may complete, the run end and the graph (with the name)
    // be destroyed before this returns (TSan, session 29). So it names a copy.
    std::string name;
    if (trace::enabled() && n->extra) name = n->extra->name;
    trace::span traced(name.empty() ? std::string_view("task") : std::string_view(name), "task");
    if (trace::enabled() && n->trace_flow)  // the arrow from the node that released it
      traced.link_from(std::exchange(n->trace_flow, 0));
    auto* saved_place = my_place;
    my_place = n->extra && n->extra->where ? &*n->extra->where : nullptr;
    struct restore {
      strata::place const*& p;
      strata::place const* v;
      ~restore() { p = v; }
    } back{my_place, saved_place};
    try {
      event e = n->call(*n);
      if (!e.ready()) {
        // Completes later, wherever the event completes; the worker moves on.
        e.then([this, n, e] { async_done(n, e.error()); });
        return false;
      }
      if (auto err = e.error()) g.fail(err);
    } catch (...) {
      if (n->flags & node::condition) n->extra->branch = -1;
      g.fail(std::current_exception());
    }
    if (trace::enabled()) last_ran = {n, trace::detail::origin_here()};  // span still open
  } else if (n->flags & node::condition) {
    n->extra->branch = -1;  // cancelled: choose nothing
  }
  return true;
}

node* scheduler::execute(node* n) {
  return run_body(n) ? finish(n) : nullptr;
}

void scheduler::run_dyn(dyn_task* t) {
  task_group* group = t->group;
  // Credits of another group go back first: this task may wait for that group's joiner.
  credit_switch(group);
  try {
    if (trace::enabled()) {
      trace::span traced("spawned task", "task");
      t->call(*t, !group->cancelled());
    } else {
      t->call(*t, !group->cancelled());
    }
  } catch (...) {
    group->fail(std::current_exception());
  }
  free_task(t);
  // The task's count stays with this worker as a credit (the body may have switched
  // groups by spawning elsewhere).
  credit_switch(group);
  ++credit.count;
}

bool scheduler::run_own(task_group const* group) {
  // The calling worker's own deque, LIFO: the tasks it spawned last (a join's children
  // and what they spawned into the group). Not one task further: what lies below them
  // belongs to the frames under this join, and running it here would nest without bound
  // (it goes back where it was; the join runs it one chain at a time if it must wait).
  auto* a = my_arena;
  if (!a) return false;
  auto const m = static_cast<std::size_t>(my_member);
  auto& own = *a->cpu[m];
  bool const lone = a->members.size() == 1;
  bool ran = false;
  while (node* n = lone ? own.pop_unshared() : own.pop()) {
    if (!is_dyn(n) || dyn_of(n)->group != group) {
      own.push(n);
      break;
    }
    ran = true;
    run_dyn(dyn_of(n));
  }
  return ran;
}

void scheduler::async_done(node* n, std::exception_ptr err) {
  if (err) n->owner->fail(std::move(err));
  // A completion of device work is device-priority work (Ripple §6.2).
  inject(arena_of(n), as_completion(n), true);
}

node* scheduler::task_done(graph_state& g) {
  if (g.sinks_left.fetch_sub(1, std::memory_order_acq_rel) != 1) return nullptr;
  return pass_over(g);
}

node* scheduler::finish(node* n) {
  // Ready for the next run (Algorithm 3, line 4): every predecessor has counted down.
  n->pending.store(n->initial, std::memory_order_relaxed);
  graph_state& g = *n->owner;
  // Trace: an arrow from n's span to each successor it makes ready (the dependency that
  // let it start), when n's body ran on this thread just now.
  trace::detail::flow_origin from{};
  if (trace::enabled() && last_ran.n == n) from = std::exchange(last_ran, {}).at;
  auto link = [&from](node* s) {
    if (!from) return;
    auto const id = trace::detail::start_flow(from);
    if (id <= UINT32_MAX) s->trace_flow = static_cast<std::uint32_t>(id);
  };
  bool const device_worker =
      my_arena && my_arena->device_priority[static_cast<std::size_t>(my_member)];
  auto runs_here = [&](node* s) {
    return my_arena == &arena_of(s) && (s->kind == execution_kind::cpu || device_worker);
  };
  // A condition node (Taskflow-style) schedules the one successor it chose, at once.
  if (n->flags & node::condition) {
    long const b = n->extra->branch;
    if (b < 0 || b >= n->out || g.is_cancelled()) return task_done(g);
    node* s = n->far[b];
    s->pending.store(s->initial, std::memory_order_relaxed);
    link(s);
    if (runs_here(s)) return s;
    push(s);
    return nullptr;
  }
  // Read the successors (and what the graph is) before counting any down: once the last
  // one is, the run may end and the graph be destroyed.
  bool const counting = g.conditions;
  node* const* it = n->far;
  node* const* const end = it + n->out;
  if (it == end) {
    if (counting) return task_done(g);
    sink_done(g);
    return nullptr;
  }
  if ((n->flags & node::fan) && !counting && my_arena == g.where) {
    if (auto* r = new (std::nothrow) successor_range{it, end}) return as_range(r);
  }
  // Graphs with condition nodes count tasks: all successors in advance, the ones that
  // did not become ready (and this node) back at the end.
  if (counting) g.sinks_left.fetch_add(n->out, std::memory_order_acq_rel);
  long scheduled = 0;
  node* next = nullptr;
  for (; it != end; ++it) {
    node* s = *it;
    // A node's only predecessor need not count down (no other thread reads the counter
    // this run; it stays at 1 for the next): one locked instruction less per task in
    // chains and trees.
    if (s->initial != 1 && s->pending.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    ++scheduled;
    link(s);
    if (!next && runs_here(s))
      next = s;
    else
      push(s);
  }
  if (counting) {
    long const excess = n->out - scheduled + 1;
    if (g.sinks_left.fetch_sub(excess, std::memory_order_acq_rel) == excess) {
      // Cannot happen while `next` holds a task of the pass; kept for clarity.
      node* again = pass_over(g);
      return next ? next : again;
    }
  }
  return next;
}

node* scheduler::pass_over(graph_state& g) {
  // A pass is over. Conditional graphs run again while their predicate holds.
  if (g.predicate && !g.is_cancelled()) {
    bool again = false;
    try {
      again = g.predicate();
    } catch (...) {
      g.fail(std::current_exception());
    }
    if (again) {
      start_pass(g);
      return nullptr;
    }
  }
  complete_run(g);
  return nullptr;
}

void scheduler::sink_done(graph_state& g) {
  if (g.sinks_left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  pass_over(g);
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

void spawn_task(dyn_task* t) {
  if (my_arena) {  // a worker running a task: count from its credits
    credit_switch(t->group);
    if (credit.count == 0) {
      t->group->reserve(credit_batch);
      credit.count = credit_batch;
    }
    --credit.count;
  } else {
    t->group->reserve(1);
  }
  auto* p = strata::detail::pool::instance();
  (p ? *p : strata::detail::current_exec().get_pool()).tasks().spawn(t);
}

void run_subflow(void* fn, void (*call)(void*, task_group&)) {
  task_group group;
  try {
    call(fn, group);
  } catch (...) {
    // The body threw: its children still finish (they may use its captures), then the
    // body's exception wins over theirs.
    try {
      group.join();
    } catch (...) {
    }
    throw;
  }
  group.join();
}

}  // namespace strata::task::detail

namespace strata {

strata::place const* current_node_place() noexcept {
  return task::detail::my_place;
}

task_group::~task_group() {
  if (pending_.load(std::memory_order_acquire) > 1 || state_.load() != nullptr) {
    try {
      join();
    } catch (...) {  // the destructor cannot throw; join() reports it
    }
  }
}

namespace {
// The value of task_group::state_ once the last task has finished.
void* const group_done = reinterpret_cast<void*>(std::uintptr_t{1});
}  // namespace

void task_group::fail(std::exception_ptr error) noexcept {
  while (error_lock_.exchange(true, std::memory_order_acquire)) {
  }
  if (!error_) error_ = std::move(error);
  error_lock_.store(false, std::memory_order_release);
  failed_.store(true, std::memory_order_release);
}

void task_group::release(std::int64_t n) noexcept {
  if (pending_.fetch_sub(n, std::memory_order_acq_rel) != n) return;
  // The last one: after the exchange the group may be gone; wake the joiner through its
  // own waiter.
  void* w = state_.exchange(group_done, std::memory_order_acq_rel);
  if (w && w != group_done) static_cast<strata::detail::waiter*>(w)->notify();
}

void task_group::join() {
  // The group's own reference goes with the credits this thread holds for it (one
  // update); credits for another group go back too (its joiner may be waited for here).
  std::int64_t drop = 1;
  if (task::detail::credit.group == this) {
    drop += std::exchange(task::detail::credit.count, 0);
    task::detail::credit.group = nullptr;
  } else {
    task::detail::flush_credits();
  }
  if (pending_.fetch_sub(drop, std::memory_order_acq_rel) != drop) {
    auto* p = strata::detail::pool::instance();
    auto& me = strata::detail::this_waiter();
    void* expected = nullptr;
    state_.compare_exchange_strong(expected, &me, std::memory_order_acq_rel);
    auto done = [this] { return state_.load(std::memory_order_acquire) == group_done; };
    int const slot = strata::detail::current_slot();
    bool const worker = strata::detail::is_pool_worker();
    while (!done()) {
      // Counts kept from the tasks run here go back before looking (the count cannot
      // reach zero while this thread holds them).
      task::detail::flush_credits();
      if (done()) break;
      // A worker runs its own deque first (its children: the deque is LIFO), then other
      // ready tasks one chain at a time.
      if (worker && p->tasks().run_own(this)) continue;
      if (worker && p->tasks().help(slot)) continue;
      // Jobs too (the reserve: the first PU's, when no awake thread waits to run them): a
      // task of the group may wait for a kernel on this worker's PU alone, which no
      // other thread would run while this one joins.
      if (worker && p->help(slot, nullptr)) continue;
      if (done()) break;
      if (worker) {
        bool found = false;
        for (int i = 0; i < strata::detail::spin::join_pauses &&
                        !(found = done() || p->tasks().available(slot));
             ++i)
          strata::detail::spin::relax();
        if (found) continue;
      }
      bool const claimed = p->park(slot, nullptr, [&] {
        return done() || (worker && (p->tasks().available(slot) || p->has_job(slot)));
      });
      if (claimed && done()) p->tasks().pass_on(slot);
    }
  }
  // Done: every task has finished and the last one no longer touches the group.
  pending_.store(1, std::memory_order_relaxed);
  state_.store(nullptr, std::memory_order_relaxed);
  failed_.store(false, std::memory_order_relaxed);
  if (auto err = std::exchange(error_, nullptr)) std::rethrow_exception(err);
}

}  // namespace strata
