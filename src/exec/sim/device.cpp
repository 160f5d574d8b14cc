#include "exec/sim/device.hpp"
#include "exec/spin.hpp"

#include <strata/error.hpp>
#include <strata/exec/trace.hpp>

#include "exec/threads/pool.hpp"
#include "exec/wait_hook.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <utility>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace strata::detail {

namespace {
// How long an idle copy engine looks for the next transfer before it parks: as long as
// the pool's idle workers (src/exec/spin.hpp).
constexpr auto engine_spin = spin::before_park;
thread_local sim_device const* own_device = nullptr;
// The device whose kernel body this thread is running (not set in continuations that
// run on a device thread after a kernel or copy completes).
thread_local sim_device const* in_kernel_of = nullptr;

// Waiters help the copy engines: a parked engine takes tens of microseconds to wake on a
// loaded VM, more than a small transfer's whole model, while the thread waiting for the
// transfer is spinning anyway. It takes a transfer whose link is idle and that ends within
// this horizon (the time a waiter spins before a known end, spin::expected_margin), so a
// thread that helps is held no longer than that; longer transfers are the engine's.
std::chrono::nanoseconds help_horizon() noexcept {
  return spin::expected_margin();
}
// Transfers queued on some engine and not taken yet: the hook's one load when none is.
std::atomic<long> untaken{0};
// The live devices, for the hook (it takes transfers of any device).
std::mutex registry_mutex;
std::vector<sim_device*> registry;
thread_local bool helping = false;  // no nested help from a helped transfer's continuations
// The issuing thread's wake-ups of parked copy engines, credited to its next issues.
// A futex wake of an engine parked on an idle vCPU holds the issuing thread 2-25 us on
// this VM (session 49), while a DMA engine needs no wake-up: a thread that issues an
// upload and then a download right after idle would start the download's model that much
// late, and the pair would end that much after its model (issue 21, `sim-copy` "both").
// A thread that issues again within `credit_gap` of its last issue went straight on, so
// without the wake-ups it paid it would have been there earlier by them: the transfer's
// modeled start moves back by them (never before the first issue of the run: the credit
// is what the thread spent since). A thread that did anything else for longer loses it.
// The credit never reaches back before the modeled end of any operation that completed
// (of any device; `last_end`): the thread may have seen it complete and issued this
// transfer because of it (an upload waited for, then a download), and a transfer must not
// be modeled to start before what it followed. A copy started by a continuation (after
// its dependency) gets no credit (forget_wake_credit). One wake-up counts for at most
// `max_wake_credit` (a preemption inside the notify is not a wake-up's cost).
thread_local sim_device::clock::duration wake_credit{};
thread_local sim_device::clock::time_point credit_until{};
constexpr auto credit_gap = std::chrono::microseconds(5);
constexpr auto max_wake_credit = std::chrono::microseconds(30);
std::atomic<sim_device::clock::rep> last_end{0};

void note_end(sim_device::clock::time_point end) noexcept {
  auto const e = end.time_since_epoch().count();
  for (auto seen = last_end.load(std::memory_order_relaxed);
       e > seen && !last_end.compare_exchange_weak(seen, e, std::memory_order_release);) {
  }
}

sim_device::clock::time_point credited(sim_device::clock::time_point issued) {
  if (issued > credit_until) {
    wake_credit = {};
    return issued;
  }
  auto const floor = sim_device::clock::time_point(
      sim_device::clock::duration(last_end.load(std::memory_order_acquire)));
  return std::min(issued, std::max(issued - wake_credit, floor));
}

// Wakes a parked copy engine (needs_wake said so), crediting the wake-up to the caller.
void wake_engine(std::condition_variable& ready) {
  auto const before = sim_device::clock::now();
  ready.notify_one();
  auto const after = sim_device::clock::now();
  wake_credit += std::min<sim_device::clock::duration>(after - before, max_wake_credit);
  credit_until = after + credit_gap;
}

// What a host memcpy of a transfer's bytes took lately, per byte (a running average over
// the transfers that moved: the host's copy rate, which the link model does not know).
// A waiter takes a larger transfer into its batch when the batch's memcpys, at this rate,
// end before the earliest modeled end in it: each still completes on time (an upload and
// a download of 64 KiB issued together, one waiter, session 49).
std::atomic<double> memcpy_ns_per_byte{0.1};
constexpr auto batch_margin = std::chrono::microseconds(2);

// The OS name of a device thread (top -H, gdb, perf, /proc/<pid>/task/<tid>/comm): Linux
// keeps 15 bytes.
void name_os_thread(std::string name) noexcept {
#if defined(__linux__)
  if (name.size() > 15) name.resize(15);
  pthread_setname_np(pthread_self(), name.c_str());
#else
  (void)name;
#endif
}

// A parked copy engine is woken by the thread that issues a transfer, and Linux places the
// woken thread on the waker's CPU (a wake-up on an idle vCPU costs the waker 15 us and the
// wakee 60 us on the VMs of session 57): as an ordinary thread it then preempts the issuer
// and runs its memcpy first, so an upload and a download issued together started their
// models a whole memcpy apart (`sim-copy` "both" at 1 MiB 0.71-0.80 of the model, the
// second issue 190-350 us after the first in a third of the runs). A DMA engine takes no
// CPU from the thread that starts it: while parked the engine is SCHED_BATCH, which Linux
// does not let preempt the running thread on wake-up, so it runs when the issuer waits
// (or at the next tick); it is an ordinary thread again before it moves bytes and waits
// out their model, so that it completes on time on a busy CPU.
// Only from the ordinary policy the thread started with: under a real-time or idle policy
// (chrt), the engine keeps it; a refused call (a sandbox) is not retried at every park.
void park_without_preempting(bool parked) noexcept {
#if defined(__linux__)
  thread_local int const started = sched_getscheduler(0);
  thread_local bool batch = false, refused = false;
  if (started != SCHED_OTHER || refused || batch == parked) return;
  sched_param none{};
  if (pthread_setschedparam(pthread_self(), parked ? SCHED_BATCH : SCHED_OTHER, &none) == 0)
    batch = parked;
  else
    refused = true;
#else
  (void)parked;
#endif
}

sim_device::clock::duration memcpy_estimate(std::size_t bytes) {
  return std::chrono::nanoseconds(static_cast<std::int64_t>(
      static_cast<double>(bytes) * memcpy_ns_per_byte.load(std::memory_order_relaxed)));
}
}  // namespace

bool sim_device::is_own_thread() const noexcept {
  return own_device == this;
}

void wait_until(sim_device::clock::time_point deadline) {
  if (auto const margin = spin::sleep_margin(); sim_device::clock::now() + margin < deadline) {
    std::this_thread::sleep_until(deadline - margin);
    spin::note_timed_wake(deadline - margin);
  }
  // Yield, not pause: the emulated devices' threads outnumber the cores (four copy
  // engines and their units on a 2-core machine), and a thread that spins without
  // yielding keeps a core from another device's engine whose transfer is due, which then
  // ends a time slice late. Yielding, every due engine gets the core within microseconds.
  // The last microseconds are paused through, not yielded: a yield that hands the core
  // to another thread near the deadline ends the transfer a time slice late (on this VM
  // about 1-2 us, a tenth of a small halo copy's model).
  auto const pausing = spin::pause_margin();
  while (sim_device::clock::now() + pausing < deadline) std::this_thread::yield();
  while (sim_device::clock::now() < deadline) spin::relax();
}

sim_device::sim_device(sim_params params) : params_(std::move(params)), speed_(params_.speed) {
  // Its engines and waiters sleep until shortly before modeled ends: how shortly depends
  // on how late this machine's timed sleeps wake, measured before the first transfer.
  spin::calibrate_timed_wakes();
  try {
    for (int u = 0; u < params_.units; ++u)
      units_.emplace_back([this, u] {
        trace::name_this_thread(params_.name + " unit " + std::to_string(u),
                                "sim device " + params_.name);
        name_os_thread(params_.name + " unit " + std::to_string(u));
        own_device = this;
        mark_background_thread();
        unit_main();
      });
    for (auto dir : {link_dir::in, link_dir::out})
      engine(dir).thread = std::thread([this, dir] {
        trace::name_this_thread(
            params_.name + (dir == link_dir::in ? " copy engine (in)" : " copy engine (out)"),
            "sim device " + params_.name);
        name_os_thread(params_.name + (dir == link_dir::in ? " copy in" : " copy out"));
        own_device = this;
        mark_background_thread();
        copy_main(engine(dir));
      });
    std::lock_guard lock(registry_mutex);
    registry.push_back(this);
    if (registry.size() == 1) set_device_wait_hook(&sim_device::help_engines);
  } catch (std::system_error const& e) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    kernels_ready_.notify_all();
    for (auto& c : engines_) c.ready.notify_all();
    for (auto& t : units_) t.join();
    for (auto& c : engines_)
      if (c.thread.joinable()) c.thread.join();
    throw backend_error("sim device " + params_.name +
                        ": could not start its threads: " + e.what());
  }
}

sim_device::~sim_device() {
  {
    std::lock_guard lock(registry_mutex);
    std::erase(registry, this);
    if (registry.empty()) set_device_wait_hook(nullptr);
  }
  {
    // Queued work still runs: stop only takes effect once both queues are empty.
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  kernels_ready_.notify_all();
  for (auto& c : engines_) c.ready.notify_all();
  for (auto& t : units_) t.join();
  for (auto& c : engines_) c.thread.join();
}

namespace {
// Takes `m` by trying and yielding, not by sleeping on it: the transfer path's critical
// sections are a few hundred nanoseconds, and std::mutex parks a contending thread on a
// futex at once, so that the holder's unlock then pays a wake-up system call (2-15 us on
// this VM) and the contender a wake-up latency: more than a small transfer's issue.
void lock_spinning(std::mutex& m) {
  while (!m.try_lock()) std::this_thread::yield();
}
}  // namespace

void sim_device::track(event const& done) {
  if (done.ready()) return;
  lock_spinning(mutex_);
  std::lock_guard lock(mutex_, std::adopt_lock);
  track_locked(done);
}

void sim_device::track_locked(event const& done) {
  if (tracked_.size() >= prune_at_) {
    std::erase_if(tracked_, [](std::weak_ptr<event_state> const& w) {
      auto s = w.lock();
      return !s || s->ready();
    });
    prune_at_ = std::max<std::size_t>(64, 2 * tracked_.size());
  }
  tracked_.push_back(done.watch());
}

void sim_device::release_fence() {
  std::vector<event> outstanding;
  {
    std::lock_guard lock(mutex_);
    for (auto const& w : tracked_)
      if (auto s = w.lock(); s && !s->ready()) outstanding.emplace_back(std::move(s));
  }
  // Failures are the operations' own business (their waiters see them); the memory is
  // free to go once they have ended either way.
  for (auto const& e : outstanding) try {
      e.wait();
    } catch (...) {
    }
}

event sim_device::enqueue_kernel(index_t chunks, std::function<void(index_t)> body,
                                 char const* name) {
  if (in_kernel_of == this) {
    // A kernel of this device launching on it (a child grid): the device runs one
    // kernel at a time, so waiting for a queued child would wait forever. The child runs
    // here, now, on the parent's unit, and is complete when the launch returns.
    first_error error;
    for (index_t c = 0; c < chunks && error.run([&] { body(c); }); ++c) {
    }
    auto const failure = error.get();
    return failure ? event::failed(failure) : event::completed();
  }
  auto op = std::make_shared<kernel_op>();
  op->chunks = chunks;
  op->body = std::move(body);
  op->remaining.store(chunks, std::memory_order_relaxed);
  op->name = name;
  if (trace::enabled()) op->flow = trace::detail::flow_from_here();
  event done = op->done;
  {
    lock_spinning(mutex_);
    std::lock_guard lock(mutex_, std::adopt_lock);
    track_locked(done);
    if (kernels_.empty()) op->start = clock::now();
    kernels_.push_back(std::move(op));
    ++busy_;
  }
  kernels_ready_.notify_all();
  // A unit parked in a wait inside the running kernel runs this one itself if it is
  // what the wait needs (run_queued_kernel): it must look again.
  if (unit_waits_.load(std::memory_order_acquire)) notify_hook_work();
  return done;
}

namespace {
std::int64_t thread_cpu_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

// speed < 1: between two chunks a unit sleeps until the model's time for the CPU time it
// has spent so far, rather than running the whole kernel at the host's pace and then
// waiting out the rest (finish). The kernel ends when it did, but a slow device takes a
// share of a core over its kernel's modeled time instead of whole cores in a burst: eight
// devices at speed 0.2 starting their kernels together on 2 cores left the host's own
// threads (graph nodes, boundary kernels, copies) waiting several milliseconds for a
// core (a trace of ripple-scaling, session 26). The sleep's own CPU time (the system
// calls, the wake-up: several microseconds on a VM, up to 15 times per unit and kernel)
// is the emulator's, not the device's: it is left out of the time the model stretches, or a
// slow device's every kernel would take 1 / speed times that much longer (session 57).
// Nor is the thread-CPU clock read while no sleep can be due: it is a system call (1.4 us
// on this VM), counted in the kernel's CPU time and so stretched by 1 / speed, and it was
// read after every chunk: 16 chunks made every kernel of a device at speed 0.25 about
// 90 us longer than its work, 0.3 ms of each hybrid-jacobi iteration of a sim strip with
// its corpus and two frontier kernels (session 65). The work done since the last reading
// is at most the wall time since then (`mark`), so a bound on when the model's time is
// due costs a clock read; a sleep's own CPU time is not work, so after a wake the bound
// starts again from the wake. (In double nanoseconds: at the slowest speeds, 1e-6, a
// stretched bound leaves int64 nanoseconds within milliseconds of work.)
void sim_device::pace(kernel_op const& op, pace_mark& mark) const {
  double const speed = speed_.load(std::memory_order_relaxed);
  if (speed >= 1.0 || op.next.load(std::memory_order_relaxed) >= op.chunks) return;
  // Woken early by the OS's margin: a sleep that overran would end the kernel late.
  auto const margin = spin::sleep_margin();
  auto const now = clock::now();
  auto ns = [](clock::duration d) {
    return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
  };
  double const most_work = static_cast<double>(mark.work) + ns(now - mark.wall);
  if (most_work / speed <= ns(now - op.start) + 2 * ns(margin)) return;
  auto const before = thread_cpu_ns();
  mark.work = before - mark.cpu0 - mark.paused;
  mark.wall = now;  // read before `before`: the bound holds from here
  auto const due = op.start + std::chrono::duration_cast<clock::duration>(
                                  std::chrono::nanoseconds(mark.work) / speed);
  if (due - clock::now() <= 2 * margin) return;
  std::this_thread::sleep_until(due - margin);
  spin::note_timed_wake(due - margin);
  mark.wall = clock::now();
  mark.paused += thread_cpu_ns() - before;  // the work is as it was before the sleep
}

void sim_device::unit_main() {
  for (;;) {
    std::shared_ptr<kernel_op> op;
    {
      std::unique_lock lock(mutex_);
      // The front kernel, while it has chunks to claim; later kernels wait their turn
      // (one kernel at a time per device, in arrival order).
      kernels_ready_.wait(lock, [&] {
        return (stop_ && kernels_.empty()) ||
               (!kernels_.empty() &&
                kernels_.front()->next.load(std::memory_order_relaxed) < kernels_.front()->chunks);
      });
      if (kernels_.empty()) return;
      op = kernels_.front();
      ++op->active;
    }
    pace_mark mark;
    mark.wall = clock::now();  // first: the wall time since then covers all work since cpu0
    mark.cpu0 = thread_cpu_ns();
    {
      trace::span traced(op->name, "sim", params_.name);
      for (index_t c; (c = op->next.fetch_add(1, std::memory_order_relaxed)) < op->chunks;) {
        if (c == 0) traced.link_from(op->flow);  // one arrow, to the unit that starts it
        op->error.run([&] {
          in_kernel_of = this;
          struct leave {
            ~leave() { in_kernel_of = nullptr; }
          } on_exit;
          op->body(c);
        });
        op->remaining.fetch_sub(1, std::memory_order_acq_rel);
        pace(*op, mark);
      }
    }
    auto const spent = thread_cpu_ns() - mark.cpu0 - mark.paused;
    for (auto seen = op->max_cpu_ns.load(std::memory_order_relaxed);
         spent > seen && !op->max_cpu_ns.compare_exchange_weak(seen, spent);) {
    }
    // The last unit to leave, once no chunk is left to claim (no unit joins after that),
    // finishes the kernel.
    bool last = false;
    {
      std::lock_guard lock(mutex_);
      last =
          --op->active == 0 && op->remaining.load(std::memory_order_acquire) == 0 && !op->finished;
      if (last) op->finished = true;
    }
    if (last) finish(op);
  }
}

void sim_device::finish(std::shared_ptr<kernel_op> const& op) {
  // speed < 1: the device is slower than the host core it runs on, so the kernel takes the
  // CPU time its busiest unit spent in it, divided by the speed (never less than it took).
  // (A faster device cannot be emulated: speed > 1 takes real time.) The speed is read
  // once per kernel, when it finishes: sim::set_speed takes effect from the next one.
  if (double const speed = speed_.load(std::memory_order_relaxed); speed < 1.0) {
    auto const cpu = std::chrono::nanoseconds(op->max_cpu_ns.load(std::memory_order_relaxed));
    wait_until(op->start + std::chrono::duration_cast<clock::duration>(cpu / speed));
  }
  {
    std::lock_guard lock(mutex_);
    kernels_.pop_front();
    if (!kernels_.empty()) kernels_.front()->start = clock::now();
    unit_waits_.store(false, std::memory_order_relaxed);
  }
  kernels_ready_.notify_all();
  note_end(clock::now());
  op->done.complete(op->error.take());
  done_one();
}

void sim_device::done_one() {
  std::lock_guard lock(mutex_);
  if (--busy_ == 0) idle_.notify_all();
}

bool sim_device::wait_idle() {
  std::unique_lock lock(mutex_);
  if (busy_ == 0) return false;
  idle_.wait(lock, [&] { return busy_ == 0; });
  return true;
}

namespace {
// A modeled time as a clock duration, saturated at 1e9 s (about 31 years: a time point of
// the clock plus it cannot overflow) and 0 for NaN. Past the range of the clock's int64
// ticks the cast would be undefined (in practice a huge latency came out short).
sim_device::clock::duration seconds(double s) {
  constexpr double limit = 1e9;
  if (s != s) return {};  // NaN
  s = std::clamp(s, -limit, limit);
  return std::chrono::duration_cast<sim_device::clock::duration>(std::chrono::duration<double>(s));
}
}  // namespace

event sim_device::enqueue_copy(copy_desc const& d, link_dir dir, double modeled,
                               clock::time_point issued) {
  event done = event::pending();
  std::uint64_t const flow = trace::enabled() ? trace::detail::flow_from_here() : 0;
  auto& e = engine(dir);
  bool wake = false;
  {
    lock_spinning(mutex_);
    std::lock_guard lock(mutex_, std::adopt_lock);
    track_locked(done);
    // Queued behind the link's earlier transfers, it ends at their end plus its own model.
    auto const start = std::max(credited(issued), e.booked);
    e.booked = start + seconds(modeled);
    done.expect(e.booked);
    e.queue.push_back({d, modeled, done, start, flow});
    e.queued.fetch_add(1, std::memory_order_release);
    e.issued.fetch_add(1, std::memory_order_relaxed);
    untaken.fetch_add(1, std::memory_order_release);
    ++busy_;
    wake = needs_wake(e);
  }
  if (wake) wake_engine(e.ready);
  return done;
}

event sim_device::enqueue_copy_between(sim_device& from, sim_device& to, copy_desc const& d,
                                       double modeled, clock::time_point issued) {
  event done = event::pending();
  std::uint64_t const flow = trace::enabled() ? trace::detail::flow_from_here() : 0;
  auto& out = from.engine(link_dir::out);
  auto& in = to.engine(link_dir::in);
  bool wake = false;
  {
    for (;;) {  // both, neither held while waiting (as std::lock, without sleeping)
      lock_spinning(from.mutex_);
      if (to.mutex_.try_lock()) break;
      from.mutex_.unlock();
      std::this_thread::yield();
    }
    std::lock_guard hold_from(from.mutex_, std::adopt_lock), hold_to(to.mutex_, std::adopt_lock);
    from.track_locked(done);
    to.track_locked(done);  // it writes `to`'s memory: a free there waits for it as well
    // The bytes cross both links at once (through the host): the transfer starts when
    // both are free and holds both until it ends. Only the source's engine queues it.
    auto const start = std::max({credited(issued), out.booked, in.booked});
    out.booked = in.booked = start + seconds(modeled);
    done.expect(out.booked);
    out.queue.push_back({d, modeled, done, start, flow});
    out.queued.fetch_add(1, std::memory_order_release);
    out.issued.fetch_add(1, std::memory_order_relaxed);
    untaken.fetch_add(1, std::memory_order_release);
    ++from.busy_;
    wake = from.needs_wake(out);
  }
  if (wake) wake_engine(out.ready);
  return done;
}

void sim_device::forget_wake_credit() noexcept {
  wake_credit = {};
  credit_until = {};
}

bool sim_device::needs_wake(copy_engine& e) noexcept {
  if (!e.parked || e.wake_pending) return false;  // awake, or a wake-up is on its way
  e.wake_pending = true;
  auto& o = other(e);
  if (!o.wake_pending) return true;
  // The other engine is being woken (by this thread, most likely, a moment ago): it wakes
  // this one as it resumes, on its own time, inside the transfers' modeled time.
  o.wake_other = true;
  return false;
}

bool sim_device::take(copy_engine& e, copy_op& op, clock::time_point until) {
  if (e.running || e.queue.empty()) return false;
  if (until.time_since_epoch().count() != 0 &&
      std::max(e.queue.front().start, e.link_free) + seconds(e.queue.front().modeled) > until)
    return false;
  op = std::move(e.queue.front());
  e.queue.pop_front();
  e.queued.fetch_sub(1, std::memory_order_relaxed);
  untaken.fetch_sub(1, std::memory_order_relaxed);
  e.running = true;
  // A transfer that overran its model kept the link busy longer than booked: later
  // bookings start after it.
  e.booked = std::max(e.booked, e.link_free);
  return true;
}

sim_device::clock::time_point sim_device::begin_transfer(copy_engine& e, copy_op& op) {
  // The modeled transfer starts when it was issued or when its link(s) became free, not
  // when a thread got to it: the emulated link does not pay the host's wake-up time.
  // (link_free is the taker's alone while `running` is set.)
  auto const start = std::max(op.start, e.link_free);
  op.began = clock::now();
  copy_part(op.desc, 0, copy_units(op.desc));
  op.copied = clock::now();
  if (auto const bytes = op.desc.bytes(); bytes >= 4096) {
    double const took = static_cast<double>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(op.copied - op.began).count());
    double const was = memcpy_ns_per_byte.load(std::memory_order_relaxed);
    // A memcpy that was preempted says nothing of the copy rate: a sample counts for at
    // most twice the average.
    double const sample = std::min(took / static_cast<double>(bytes), 2 * was);
    memcpy_ns_per_byte.store(0.875 * was + 0.125 * sample, std::memory_order_relaxed);
  }
  return start + seconds(op.modeled);
}

void sim_device::end_transfer(copy_engine& e, copy_op& op, clock::time_point end) {
  wait_until(end);
  // On the engine's lane also when a waiting thread ran it (help_engines): the trace shows
  // the device's transfers on the device.
  if (trace::enabled())
    trace::detail::record_on(
        "sim device " + params_.name,
        params_.name + (&e == &engine(link_dir::in) ? " copy engine (in)" : " copy engine (out)"),
        "copy", "sim", op.began, clock::now(),
        fmt::format("{} bytes, modeled {:.1f} us", op.desc.bytes(), op.modeled * 1e6), op.flow);
  note_end(end);
  op.done.complete();
  // The link is free at the modeled end, not when this thread saw it pass: the next
  // transfer must not inherit the host's scheduling delay (it would add up over a queue of
  // small copies). If the host copy itself overran the model, the link was busy until then.
  // The engine waits for the link only when it has a transfer to run or is told to stop
  // (a wake-up costs the waking thread a system call, more than a small transfer's
  // latency). Notified under the lock: a helper touches nothing of the device after it
  // (the device may end as soon as its engine sees the link idle).
  lock_spinning(mutex_);
  std::lock_guard lock(mutex_, std::adopt_lock);
  e.link_free = std::max(end, op.copied);
  e.running = false;
  if (--busy_ == 0) idle_.notify_all();  // done_one, in the same critical section
  if (stop_ || !e.queue.empty()) e.ready.notify_all();
}

void sim_device::run_transfer(copy_engine& e, copy_op& op) {
  end_transfer(e, op, begin_transfer(e, op));
}

bool sim_device::run_queued_kernel() {
  std::shared_ptr<kernel_op> op;
  {
    lock_spinning(mutex_);
    std::lock_guard lock(mutex_, std::adopt_lock);
    unit_waits_.store(true, std::memory_order_release);
    // The front is the running kernel (this thread's); the next has not started (units
    // take chunks of the front only).
    if (kernels_.size() < 2) return false;
    op = std::move(kernels_[1]);
    kernels_.erase(kernels_.begin() + 1);
  }
  for (index_t c = 0; c < op->chunks; ++c) {
    op->error.run([&] { op->body(c); });
    op->remaining.fetch_sub(1, std::memory_order_acq_rel);
  }
  op->done.complete(op->error.take());
  done_one();
  return true;
}

namespace {
// When a thread last ran the device hook (help_engines): while waiters poll it, an
// engine leaves a short transfer to them for a moment (engine_grace) instead of taking it
// at once. The waiter then moves the bytes and completes the transfer itself at its
// modeled end: no hand-off from an engine thread, which on a machine with fewer cores than
// spinning threads (a waiter and two engines on 2 cores) arrived a context switch late in
// some processes (tensor-halo's bimodal 2-device figure, sessions 27-31).
std::atomic<sim_device::clock::rep> hook_polled{0};
constexpr auto engine_grace = std::chrono::microseconds(4);
constexpr std::size_t max_batch = 8;  // transfers one waiter takes at once
// A waiter moves the bytes of its batch one transfer after the other: only transfers whose
// memcpy is short against their model join a batch (beyond its first), and only those
// are left to waiters; 512 KiB halos stay on their engines, which copy in parallel.
constexpr std::size_t waiter_bytes = std::size_t{32} << 10;
}  // namespace

bool sim_device::help_engines() noexcept {
  // A unit waiting inside a kernel of its device: a kernel queued behind it may be what
  // it waits for (launched after a dependency that another thread completed, so queued
  // rather than run at once as a child grid is); it runs it, as a child would run.
  if (in_kernel_of && !helping) {
    bool ran = false;
    try {
      ran = const_cast<sim_device*>(in_kernel_of)->run_queued_kernel();
    } catch (...) {  // the hook must not throw (a body's exception is the kernel's error)
    }
    if (ran) return true;
  }
  if (helping) return false;
  auto const now = clock::now();
  hook_polled.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  if (untaken.load(std::memory_order_acquire) == 0) return false;
  // Every due front transfer (each link's first, so its order holds) that ends within
  // the horizon, on any device: their bytes move now, one after the other, and each
  // completes at its own modeled end (the links run in parallel, as the engines would).
  struct taken {
    sim_device* device;
    copy_engine* engine;
    copy_op op;
    clock::time_point end{};
  };
  std::array<taken, max_batch> batch;
  std::size_t n = 0;
  {
    std::unique_lock registered(registry_mutex, std::try_to_lock);
    if (!registered) return false;
    auto const until = now + help_horizon();
    // The batch's memcpys at the recent rate, and its earliest modeled end.
    clock::duration copying{};
    auto earliest = clock::time_point::max();
    for (auto* d : registry) {
      std::unique_lock lock(d->mutex_, std::try_to_lock);
      if (!lock) continue;
      for (auto& e : d->engines_) {
        if (n == max_batch || e.running || e.queue.empty()) continue;
        auto const& f = e.queue.front();
        auto const end = std::max(f.start, e.link_free) + seconds(f.modeled);
        auto const cost = memcpy_estimate(f.desc.bytes());
        // Beyond the first, a transfer joins if the batch's memcpys still end before its
        // earliest modeled end, larger ones with a margin (small ones with none: their
        // memcpy is short). One whose engine is parked joins with no margin: left to the
        // engine it would wait for a wake-up (tens of microseconds on a VM) or for this
        // batch's end (an upload and a download issued together after idle: `sim-copy`
        // "both").
        auto const margin =
            f.desc.bytes() > waiter_bytes && !e.parked ? batch_margin : clock::duration{};
        if (n > 0 && now + copying + cost + margin > std::min(earliest, end)) continue;
        if (d->take(e, batch[n].op, until)) {
          batch[n].device = d;
          batch[n].engine = &e;
          copying += cost;
          earliest = std::min(earliest, end);
          ++n;
        }
      }
      if (n == max_batch) break;
    }
  }
  if (n == 0) return false;
  // Each engine's `running` keeps its device alive until end_transfer is done with it.
  helping = true;
  for (std::size_t i = 0; i < n; ++i)
    batch[i].end = batch[i].device->begin_transfer(*batch[i].engine, batch[i].op);
  std::sort(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(n),
            [](taken const& a, taken const& b) { return a.end < b.end; });
  for (std::size_t i = 0; i < n; ++i)
    batch[i].device->end_transfer(*batch[i].engine, batch[i].op, batch[i].end);
  helping = false;
  return true;
}

sim_device::clock::time_point sim_device::left_to_waiters(copy_engine& e) const {
  if (stop_ || e.running || e.queue.empty()) return {};
  auto const now = clock::now();
  auto const polled =
      clock::time_point(clock::duration(hook_polled.load(std::memory_order_relaxed)));
  if (now - polled > engine_grace) return {};  // no waiter polls the hook
  auto const& f = e.queue.front();
  if (f.desc.bytes() > waiter_bytes) return {};
  auto const end = std::max(f.start, e.link_free) + seconds(f.modeled);
  if (end > now + help_horizon()) return {};  // too long for a waiter to take
  // A grace of at most a quarter of its model: the waiter's late take still ends on time.
  auto const until = f.start + std::min<clock::duration>(engine_grace, seconds(f.modeled) / 4);
  return now < until ? until : clock::time_point{};
}

void sim_device::copy_main(copy_engine& e) {
  for (;;) {
    copy_op op;
    // A DMA engine starts a queued transfer at once; a parked thread would need a futex
    // wake-up from every issuing thread (a system call per halo copy, several times the
    // issue cost). The engine looks for more work for a short while before parking, as
    // the pool's idle workers do; it yields, so it never holds a core others need.
    // It parks once nothing was issued to it for engine_spin, counting the transfers
    // that waiters ran themselves (help_engines): while the program issues transfers, the
    // next issue finds the engine awake.
    bool saw_work = false;
    auto seen = e.issued.load(std::memory_order_relaxed);
    for (auto until = clock::now() + engine_spin; clock::now() < until;) {
      if (e.queued.load(std::memory_order_acquire) != 0) {
        saw_work = true;
        break;
      }
      if (auto const now_issued = e.issued.load(std::memory_order_relaxed); now_issued != seen) {
        seen = now_issued;
        until = clock::now() + engine_spin;
      }
      std::this_thread::yield();
    }
    // Nothing issued for engine_spin: it is about to park (outside the lock: a system call).
    if (!saw_work) park_without_preempting(true);
    {
      lock_spinning(mutex_);
      std::unique_lock lock(mutex_, std::adopt_lock);
      // Stops once its queue is empty and no waiter runs one of its transfers.
      auto const due = [&] { return !e.running && (stop_ || !e.queue.empty()); };
      if (!due()) {
        // A waiter took the transfer this engine saw queued (help_engines): look again
        // rather than park, so that the next transfer, likely soon, finds the engine awake
        // and its issue costs no futex wake (on this VM 2-15 us of the issuing thread,
        // which delays whatever it issues next). (Queued behind a waiter's transfer, it
        // parks: the waiter notifies it when that ends.)
        if (saw_work && !stop_ && e.queue.empty()) continue;
        e.parked = true;
        e.ready.wait(lock);
        e.parked = e.wake_pending = false;
        if (std::exchange(e.wake_other, false)) {
          auto& o = other(e);
          if (o.queue.empty() && !stop_) {
            // A waiter took the transfer it was woken for: it stays parked (and spins on
            // no core the waiter needs); the next issue wakes it.
            o.wake_pending = false;
          } else {
            lock.unlock();
            o.ready.notify_one();
            lock.lock();
          }
        }
        // Woken for a transfer that a waiter took meanwhile, or spuriously: the same.
        if (!due()) continue;
      }
      if (auto const until = left_to_waiters(e); until != clock::time_point{}) {
        lock.unlock();
        while (clock::now() < until && e.queued.load(std::memory_order_acquire) != 0)
          std::this_thread::yield();
        continue;
      }
      if (!take(e, op)) return;
    }
    park_without_preempting(false);
    run_transfer(e, op);
  }
}

}  // namespace strata::detail
