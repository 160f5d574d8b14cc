// CPU thread arrays (include/strata/exec/thread_array.hpp; PARRAY §4.3, §4.10, §4.11).
//
// `pthd` threads are operating-system threads kept in a team between launches: a launch
// of n threads takes n idle ones (starting more when there are fewer), so all n run at
// once and may block in the body. An idle team thread and a thread waiting in a sync
// spin briefly, then park on their waiter (src/exec/threads/wake.hpp, the runtime's one
// sleep/wake mechanism); whatever makes their condition true (a job handed over, the last
// arrival of a group, a failure, a thread that returned) notifies them.
//
// A sync group's barrier is an arrival count and a generation on separate cache lines: an
// arrival is one atomic add on the count (the waiters watch the generation, so the adds
// do not pull the line from under them), and only the last arrival of a group wakes
// anybody. Barriers of a
// sub-dimension's groups are made on its first sync. A barrier is "broken" when its array
// failed (its waiters rethrow a cancellation, dropped in favour of the first error) or
// when one of its group's threads has returned: that thread can never arrive again, so a
// thread waiting or arriving there gets an error instead of hanging.
#include <strata/error.hpp>
#include <strata/exec/first_error.hpp>
#include <strata/exec/openmp/backend.hpp>
#include <strata/exec/thread_array.hpp>

#include "exec/spin.hpp"
#include "exec/threads/wake.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace strata::detail {

bool openmp_in_parallel() noexcept;  // src/exec/openmp/{parallel,absent}.cpp

namespace {

/// PUs this process may run on: a thread array no larger spins with `pause` while it
/// waits (as an OpenMP team does), a larger one yields (its threads share cores).
unsigned processing_units() {
  static unsigned const n = [] {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
      return std::max(1u, static_cast<unsigned>(CPU_COUNT(&set)));
#endif
    return std::max(1u, std::thread::hardware_concurrency());
  }();
  return n;
}

/// The spin half of a team thread's wait: until `found()` or spin::before_park has passed.
/// Team threads are not the pool's, so the pool's spin (spin_until, which yields on every
/// round for them) would make each handover a system call.
template <class Found>
bool team_spin(Found&& found, bool polite) {
  auto const deadline = std::chrono::steady_clock::now() + spin::before_park;
  for (int n = 1;; ++n) {
    if (found()) return true;
    if (polite)
      std::this_thread::yield();
    else
      spin::relax();
    if ((polite || n % 64 == 0) && std::chrono::steady_clock::now() > deadline) return false;
  }
}

/// Raised in threads released from a sync because another thread of the array failed;
/// the array's event carries that first failure, not this.
struct thread_array_cancelled : error {
  thread_array_cancelled()
      : error(
            "thread array cancelled: another thread of the array failed (its error is "
            "the one reported)") {}
};

struct sync_barrier {
  alignas(64) std::atomic<index_t> arrived{0};
  alignas(64) std::atomic<std::uint64_t> generation{0};
  alignas(64) std::atomic<bool> broken{false};  // its own line: arrivals do not move it
  std::atomic<int> sleepers{0};
  std::mutex m;
  waiter* head = nullptr;  // parked threads, under m

  void wake() {
    if (sleepers.load(std::memory_order_seq_cst) == 0) return;
    std::lock_guard lock(m);
    notify_all(head, &waiter::on_event);
  }
  void breach() {
    broken.store(true, std::memory_order_seq_cst);
    wake();
  }
};

}  // namespace

struct thread_array_state {
  thread_tree tree;
  thread_body body = nullptr;
  std::shared_ptr<void const> fn;
  cpu_thread_kind kind = cpu_thread_kind::pthd;
  event done = event::pending();
  first_error error;
  std::atomic<index_t> runners{0};  // team threads still running (1 for an OpenMP region)

  std::mutex m;  // the barriers' creation, the returned threads, cancellation
  std::atomic<sync_barrier*> barriers[max_thread_nodes] = {};
  std::unique_ptr<sync_barrier[]> owned[max_thread_nodes];
  std::unique_ptr<std::atomic<bool>[]> returned;  // per thread: its body has ended
  bool cancelled = false;

  sync_barrier& barrier(int node, index_t tid) {
    auto* b = barriers[node].load(std::memory_order_acquire);
    if (!b) b = make_barriers(node);
    return b[tree.group(node, tid)];
  }

  sync_barrier* make_barriers(int node) {
    std::lock_guard lock(m);
    if (auto* b = barriers[node].load(std::memory_order_relaxed)) return b;
    auto const groups = tree.groups(node);
    owned[node] = std::make_unique<sync_barrier[]>(static_cast<std::size_t>(groups));
    auto* b = owned[node].get();
    if (cancelled)
      for (index_t g = 0; g < groups; ++g) b[g].broken.store(true, std::memory_order_relaxed);
    // Published before the returned threads are looked at, while leave() marks a thread
    // before it looks for barriers (both seq_cst): one of the two breaks each group that
    // lost a thread.
    barriers[node].store(b, std::memory_order_seq_cst);
    for (index_t t = 0; t < tree.size(); ++t)
      if (returned[static_cast<std::size_t>(t)].load(std::memory_order_seq_cst))
        b[tree.group(node, t)].breach();
    return b;
  }

  /// Thread tid has returned (or thrown): its groups' barriers can no longer complete.
  void leave(index_t tid) {
    returned[static_cast<std::size_t>(tid)].store(true, std::memory_order_seq_cst);
    for (int n = 0; n < tree.count; ++n)
      if (auto* b = barriers[n].load(std::memory_order_seq_cst)) b[tree.group(n, tid)].breach();
  }

  /// A thread failed: every barrier breaks, so that nobody waits for it.
  void cancel() {
    std::lock_guard lock(m);
    if (cancelled) return;
    cancelled = true;
    for (int n = 0; n < tree.count; ++n)
      if (auto* b = barriers[n].load(std::memory_order_relaxed))
        for (index_t g = 0; g < tree.groups(n); ++g) b[g].breach();
  }

  /// Runs thread tid's body.
  void run(index_t tid) {
    thread_context const ctx(this, &tree, tid);
    if (!error.run([&] { body(fn.get(), ctx); })) cancel();
    leave(tid);
  }

  /// A team thread is done with this array; the last completes its event.
  void finish() {
    if (runners.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    fn.reset();  // the body's captures go before the caller sees the end
    done.complete(error.take());
  }
};

namespace {

[[noreturn]] void sync_failed(thread_array_state& s, index_t tid, int node) {
  bool cancelled;
  {
    std::lock_guard lock(s.m);
    cancelled = s.cancelled;
  }
  if (cancelled) throw thread_array_cancelled();
  auto const& d = s.tree.nodes[node];
  throw error("sync: thread " + std::to_string(tid) + " waits in a sync of a group of " +
              std::to_string(d.size) +
              " threads, one of which has returned without reaching it; every thread of a "
              "sync group must call the same syncs (PARRAY §4.10; with PARRAY's threads the "
              "program would hang)");
}

/// Team threads: kept between launches, one job at a time.
class team {
 public:
  static team& instance() {
    // Never destroyed: team threads park forever once the program stops launching, and a
    // destructor at exit would have to wait for arrays still running.
    static team* t = new team;
    return *t;
  }

  /// Hands threads first..n-1 of the array to team threads.
  void start(std::shared_ptr<thread_array_state> const& s, index_t first, index_t n) {
    index_t id = first;
    // Idle members are claimed by their flag, without a lock: the ends of an array's
    // threads (each marking itself idle) and launches do not queue behind each other.
    int const known = count_.load(std::memory_order_acquire);
    for (int i = 0; i < known && id < n; ++i) {
      member* w = slots_[i].load(std::memory_order_acquire);
      bool expected = true;
      if (!w->idle.load(std::memory_order_relaxed) ||
          !w->idle.compare_exchange_strong(expected, false, std::memory_order_acquire))
        continue;
      w->hold = s;
      w->tid = id++;
      w->job.store(s.get(), std::memory_order_release);
      w->w->notify();
    }
    for (; id < n; ++id) {
      auto w = std::make_unique<member>();
      w->hold = s;
      w->tid = id;
      w->job.store(s.get(), std::memory_order_relaxed);
      try {
        {
          std::lock_guard lock(m_);
          int const at = count_.load(std::memory_order_relaxed);
          if (at == max_members)
            throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                    "more than " + std::to_string(max_members) + " team threads");
          std::thread(&team::loop, this, w.get()).detach();
          slots_[at].store(w.get(), std::memory_order_release);
          count_.store(at + 1, std::memory_order_release);
        }
        w.release();  // kept by its thread and the never-destroyed team
      } catch (std::system_error const& e) {
        // Out of threads: the array fails (its started threads are released from their
        // syncs) and the ones that never started end here.
        s->error.run([&] {
          throw error("thread array: could not start thread " + std::to_string(id) + " of " +
                      std::to_string(n) + " (" + e.what() + "); expected the system to allow " +
                      std::to_string(n) + " more threads");
        });
        s->cancel();
        for (; id < n; ++id) {
          if (s->kind == cpu_thread_kind::pthd) s->leave(id);
          s->finish();
        }
        return;
      }
    }
  }

 private:
  struct member {
    std::atomic<thread_array_state*> job{nullptr};
    std::shared_ptr<thread_array_state> hold;  // written before job, read after it
    index_t tid = 0;
    waiter* w = nullptr;
    std::atomic<bool> idle{false};  // claimed by a launch with a compare-and-swap
  };

  void loop(member* me) {
    me->w = &this_waiter();
    for (;;) {
      auto has_job = [&] { return me->job.load(std::memory_order_acquire) != nullptr; };
      if (!team_spin(has_job, static_cast<unsigned>(count_.load(std::memory_order_relaxed)) >=
                                  processing_units())) {
        while (!has_job()) {
          auto key = me->w->prepare();
          if (has_job()) break;
          me->w->commit(key);
        }
      }
      auto s = std::move(me->hold);
      index_t const tid = me->tid;
      me->job.store(nullptr, std::memory_order_relaxed);
      if (s->kind == cpu_thread_kind::pthd)
        s->run(tid);
      else
        run_openmp(*s);
      me->idle.store(true, std::memory_order_release);
      s->finish();
    }
  }

 public:
  /// Runs an omp array: one OpenMP region of all its threads, opened by the caller.
  static void run_openmp(thread_array_state& s) {
    struct region {
      thread_array_state& s;
      int n;
    } r{s, static_cast<int>(s.tree.size())};
    openmp_body body = [](void* p, int tid, int nth) noexcept {
      auto& rg = *static_cast<region*>(p);
      if (nth != rg.n) {
        rg.s.error.run([&] {
          throw error("omp thread array of " + std::to_string(rg.n) +
                      " threads: the OpenMP region has " + std::to_string(nth) +
                      " (OMP_THREAD_LIMIT or a nested region); expected all of them, as "
                      "sync needs every thread");
        });
        return;
      }
      rg.s.run(tid);
    };
    s.error.run([&] { openmp_parallel(r.n, body, &r); });
  }

 private:
  static constexpr int max_members = 4096;
  std::mutex m_;  // making members
  std::atomic<member*> slots_[max_members] = {};
  std::atomic<int> count_{0};
};

}  // namespace

event start_thread_array(cpu_thread_kind kind, thread_tree const& tree, thread_body body,
                         std::shared_ptr<void const> fn, bool caller_joins) {
  auto s = std::make_shared<thread_array_state>();
  s->tree = tree;
  s->body = body;
  s->fn = std::move(fn);
  s->kind = kind;
  s->returned = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(tree.size()));
  index_t const runners = kind == cpu_thread_kind::pthd ? tree.size() : 1;
  s->runners.store(runners, std::memory_order_relaxed);
  event e = s->done;
  // A caller that waits anyway runs thread 0 itself (or opens the OpenMP region, unless
  // it is inside one already), as OpenMP's master thread does: one handover less, and no
  // third thread on the cores while the array runs.
  bool const here = caller_joins && (kind == cpu_thread_kind::pthd || !openmp_in_parallel());
  team::instance().start(s, here ? 1 : 0, runners);
  if (here) {
    if (kind == cpu_thread_kind::pthd)
      s->run(0);
    else
      team::run_openmp(*s);
    s->finish();
    // The caller waits next: spin for the others' end here rather than in the pool's
    // wait, which yields on every round.
    team_spin([&] { return e.ready(); }, static_cast<unsigned>(tree.size()) > processing_units());
  }
  return e;
}

void thread_array_sync(thread_array_state* s, index_t tid, int node) {
  index_t const need = s->tree.nodes[node].size;
  sync_barrier& b = s->barrier(node, tid);
  if (b.broken.load(std::memory_order_acquire)) sync_failed(*s, tid, node);
  if (need == 1) return;
  // The generation is read before arriving: once this thread is counted, the last one
  // may move it on at any moment.
  auto const gen = b.generation.load(std::memory_order_acquire);
  if (b.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == need) {
    b.arrived.store(0, std::memory_order_relaxed);  // before the release: the next round
    b.generation.store(gen + 1, std::memory_order_seq_cst);
    b.wake();
    return;
  }
  auto passed = [&] { return b.generation.load(std::memory_order_seq_cst) != gen; };
  auto broken = [&] { return b.broken.load(std::memory_order_seq_cst); };
  bool const polite = static_cast<unsigned>(s->tree.size()) > processing_units();
  if (team_spin([&] { return passed() || broken(); }, polite) && passed()) return;
  waiter& w = this_waiter();
  while (!passed()) {
    if (broken()) sync_failed(*s, tid, node);
    b.sleepers.fetch_add(1, std::memory_order_seq_cst);
    {
      std::lock_guard lock(b.m);
      link(b.head, w, &waiter::on_event);
    }
    auto key = w.prepare();
    if (!passed() && !broken()) w.commit(key);
    {
      std::lock_guard lock(b.m);
      unlink(b.head, w, &waiter::on_event);
    }
    b.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

void bad_thread_path(int const* path, int depth, thread_tree const& tree) {
  std::string p;
  for (int k = 0; k < depth; ++k) p += "_" + std::to_string(path[k]);
  (void)tree;
  throw invalid_argument("thread array: no sub-dimension " + p +
                         "; expected a path of sub-dimension numbers inside the type (tid(0, 1) "
                         "is PARRAY's tid_0_1)");
}

}  // namespace strata::detail
