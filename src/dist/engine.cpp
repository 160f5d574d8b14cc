#include "dist/engine.hpp"

#include "dist/am_ring.hpp"

#include "dist/direct.hpp"

#include <strata/exec/copy.hpp>
#include <strata/memory/allocate.hpp>

#include <strata/error.hpp>
#include <strata/exec/launch.hpp>

#include "exec/spin.hpp"
#include "exec/threads/pool.hpp"
#include "exec/wait_hook.hpp"
#include "log.hpp"
#include "machine/units.hpp"

#include <cxxabi.h>
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>

namespace strata::dist::detail {

namespace {

constexpr int am_tag = 0;
// Puts and gets up to this size travel inside the active message (one message, one copy
// at the target); larger ones go as MPI messages straight into the destination.
constexpr std::size_t inline_limit = 8192;
// Long transfers are cut into MPI messages of at most this size (MPI counts are int),
// pipelined: all are in flight at once.
constexpr std::size_t chunk_bytes = std::size_t{1} << 30;

int chunk_count(std::size_t n) {
  return static_cast<int>((n + chunk_bytes - 1) / chunk_bytes);
}
int chunk_size(std::size_t n, int i) {
  auto const at = static_cast<std::size_t>(i) * chunk_bytes;
  return static_cast<int>(std::min(chunk_bytes, n - at));
}

std::string demangle(std::string const& name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string s(out);
  std::free(out);
  return s;
}

// --- the function registry ----------------------------------------------------------

struct registered {
  std::string name;
  std::string signature;
  std::uint64_t signature_id = 0;
  invoker run;
  bool ambiguous = false;
};

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<std::uint64_t, registered>& registry() {
  static std::unordered_map<std::uint64_t, registered> r;
  return r;
}
// Bumped (under registry_mutex) by every registration: a thread's last looked-up function
// (engine::invoke) is used without the lock while the registry has not changed since.
std::atomic<std::uint64_t> registry_version{1};
struct last_invoker {
  std::uint64_t fn = 0, signature = 0, version = 0;  // version 0: nothing kept
  invoker run;
  bool running = false;  // `run` is running: a nested call must not replace it
};
thread_local last_invoker last_invoked;

template <class T>
std::uint64_t do_atomic(std::uintptr_t address, atomic_kind kind, std::uint64_t operand,
                        std::uint64_t expected) {
  T value, expect;
  std::memcpy(&value, &operand, sizeof(T));
  std::memcpy(&expect, &expected, sizeof(T));
  std::atomic_ref<T> ref(*reinterpret_cast<T*>(address));
  T old{};
  if (kind == atomic_kind::fetch_add) {
    old = ref.fetch_add(value);
  } else if constexpr (std::is_integral_v<T>) {
    old = expect;
    ref.compare_exchange_strong(old, value);
  } else {
    throw invalid_argument(
        "dist::atomic_compare_exchange: floating-point values are not "
        "supported; expected an integer type");
  }
  std::uint64_t w = 0;
  std::memcpy(&w, &old, sizeof(T));
  return w;
}

std::size_t scalar_size(scalar s) {
  return s == scalar::i32 || s == scalar::u32 || s == scalar::f32 ? 4 : 8;
}

std::uint64_t apply_atomic(std::uintptr_t address, atomic_kind kind, scalar type,
                           std::uint64_t operand, std::uint64_t expected) {
  switch (type) {
    case scalar::i32:
      return do_atomic<std::int32_t>(address, kind, operand, expected);
    case scalar::u32:
      return do_atomic<std::uint32_t>(address, kind, operand, expected);
    case scalar::i64:
      return do_atomic<std::int64_t>(address, kind, operand, expected);
    case scalar::u64:
      return do_atomic<std::uint64_t>(address, kind, operand, expected);
    case scalar::f32:
      return do_atomic<float>(address, kind, operand, expected);
    case scalar::f64:
      return do_atomic<double>(address, kind, operand, expected);
  }
  throw invalid_argument("dist atomics: unknown value type");
}

MPI_Datatype mpi_type(scalar s) {
  switch (s) {
    case scalar::i32:
      return MPI_INT32_T;
    case scalar::u32:
      return MPI_UINT32_T;
    case scalar::i64:
      return MPI_INT64_T;
    case scalar::u64:
      return MPI_UINT64_T;
    case scalar::f32:
      return MPI_FLOAT;
    case scalar::f64:
      return MPI_DOUBLE;
  }
  return MPI_BYTE;
}
MPI_Op mpi_op(reduce_op op) {
  switch (op) {
    case reduce_op::sum:
      return MPI_SUM;
    case reduce_op::prod:
      return MPI_PROD;
    case reduce_op::min:
      return MPI_MIN;
    case reduce_op::max:
      return MPI_MAX;
  }
  return MPI_SUM;
}

std::exception_ptr remote(int rank, std::string const& message) {
  return std::make_exception_ptr(remote_error(rank, message));
}

// Set once under the_thread_mutex, never deleted: read without the lock once set.
std::atomic<mpi_thread*> the_thread{nullptr};
std::mutex the_thread_mutex;
thread_local bool holding_token = false;

// The remote call a thread received in its own progress round (engine::handle), run by it
// once the round ends (mpi_thread::try_progress), and how many it is running now.
struct inline_call {
  engine* owner;
  int source;
  std::uint64_t id, fn, signature;
  bytes payload;
};
thread_local std::optional<inline_call> inline_call_kept;
thread_local int inline_calls_depth = 0;

// The MPI thread leaves the polling to waiting threads while one of them runs rounds (its
// count moved since the MPI thread last looked and its clock stamp, taken every
// waiter_stamp_rounds rounds, is within waiter_window), napping meanwhile
// (mpi_thread::main). A waiter that parks wakes it; after one that returns, at most
// window + nap pass without a poll. The nap is the idle poll cap (1 ms by default,
// STRATA_DIST_IDLE_POLL_US): a rank whose waiter went off to compute is served as soon
// as an idle rank is. Each nap's end is a wake-up that takes a core from the pollers
// (with 200 us naps, 10% of a remote call's round trip on 2 cores).
constexpr std::chrono::microseconds waiter_window{50};
// How long the MPI thread's rounds may keep failing before it ends the job.
constexpr std::chrono::seconds failing_rounds_limit{10};
// (Every 16 rounds: a waiter that yields after each empty round, about a microsecond per
// round here, still stamps within the window.)
constexpr std::uint64_t waiter_stamp_rounds = 16;
// How often a waiter's rounds test MPI's requests while rings carry messages (progress).
constexpr unsigned request_test_stride = 4;  // a power of two (masked: the count wraps)

// Runs one queued operation, logging (not propagating) its failure: the operations
// report errors through their events.
void run_op(mpi_thread::op_fn& op) noexcept {
  try {
    op();
  } catch (std::exception const& e) {
    strata::detail::log(strata::detail::log_level::info,
                        std::string("strata::dist: an operation failed on the progress "
                                    "thread: ") +
                            e.what());
  } catch (...) {
    strata::detail::log(strata::detail::log_level::info,
                        "strata::dist: an operation failed on the progress thread");
  }
}

// Holds the progress token for a scope (taken with try_lock or lock by the caller).
struct token_scope {
  progress_token& token;
  explicit token_scope(progress_token& t) : token(t) { holding_token = true; }
  ~token_scope() {
    holding_token = false;
    token.unlock();
  }
  token_scope(token_scope const&) = delete;
  token_scope& operator=(token_scope const&) = delete;
};

bool wait_hook() noexcept {
  auto* t = the_thread.load(std::memory_order_acquire);  // set before any engine attaches
  return t && t->try_progress();
}

void wait_park_hook() noexcept {
  if (auto* t = the_thread.load(std::memory_order_acquire)) t->waiter_parks();
}

}  // namespace

// --- MPI errors -----------------------------------------------------------------------

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<std::size_t>(len));
}

void check_mpi(int rc, char const* what) {
  if (rc != MPI_SUCCESS) throw error(std::string(what) + " failed: " + mpi_error_text(rc));
}

// --- registry -------------------------------------------------------------------------

std::uint64_t signature_id(std::string const& signature) noexcept {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a: the same in every process
  for (unsigned char c : signature) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::uint64_t register_invoker(std::string const& name, std::string const& signature, invoker run) {
  auto const id = signature_id(name);
  std::lock_guard lock(registry_mutex());
  registry_version.fetch_add(1, std::memory_order_acq_rel);
  auto [it, fresh] = registry().try_emplace(id);
  if (!fresh && (it->second.name != name || it->second.signature != signature)) {
    // Two functions under one name (or a hash collision): calling it is refused rather
    // than running either.
    it->second.ambiguous = true;
    return id;
  }
  it->second = registered{name, signature, signature_id(signature), std::move(run), false};
  return id;
}

std::string fmt_hex(std::uintptr_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// --- the MPI thread -------------------------------------------------------------------

mpi_thread& mpi_thread::get() {
  if (auto* t = the_thread.load(std::memory_order_acquire)) return *t;  // every message
  std::lock_guard lock(the_thread_mutex);
  if (!the_thread.load(std::memory_order_relaxed)) {
    auto* t = new mpi_thread();  // lives until exit: MPI is initialized once per process
    if (t->init_error_) {
      auto err = t->init_error_;
      t->stop();
      delete t;
      std::rethrow_exception(err);
    }
    the_thread.store(t, std::memory_order_release);
    std::atexit([] {
      if (auto* live = the_thread.load(std::memory_order_acquire)) live->stop();
    });
  }
  return *the_thread.load(std::memory_order_relaxed);
}

mpi_thread::mpi_thread() {
  if (auto v = std::getenv("STRATA_DIST_IDLE_POLL_US")) {
    auto const us = strata::detail::parse_count(v, 1, 1000000);
    if (!us)
      throw config_error("STRATA_DIST_IDLE_POLL_US=\"" + std::string(v) +
                         "\": expected microseconds between 1 and 1000000");
    idle_cap_ = std::chrono::microseconds(*us);
  }
  std::promise<void> ready;
  auto started = ready.get_future();
  thread_ = std::thread([this, &ready] {
    strata::detail::mark_background_thread();
    try {
      int initialized = 0;
      MPI_Initialized(&initialized);
      if (initialized) {
        MPI_Query_thread(&level_);
        if (level_ != MPI_THREAD_MULTIPLE)
          throw error(
              "strata::dist: the program initialized MPI itself with a thread level below "
              "MPI_THREAD_MULTIPLE; expected MPI_THREAD_MULTIPLE (Strata's progress thread "
              "makes MPI calls), or leave MPI_Init to strata::dist::runtime");
      } else {
        // This thread initializes MPI and makes every MPI call of Strata, so FUNNELED
        // is enough; MULTIPLE lets the program make its own MPI calls meanwhile.
        check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &level_),
                  "MPI_Init_thread");
        owns_ = true;
        // Errors come back as codes (check_mpi turns them into a failed event) rather than
        // aborting every rank: request completions (MPI_Testsome) report through the
        // world's handler where a request has no communicator of Strata's own.
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        if (level_ < MPI_THREAD_FUNNELED)
          throw error(
              "strata::dist: MPI provides only MPI_THREAD_SINGLE; expected at least "
              "MPI_THREAD_FUNNELED (Strata calls MPI from its progress thread)");
      }
    } catch (...) {
      init_error_ = std::current_exception();
    }
    ready.set_value();
    if (!init_error_) main();
    if (owns_) MPI_Finalize();
  });
  started.wait();
}

void mpi_thread::stop() {
  // From here on only the MPI thread makes MPI calls (it finalizes MPI when it ends): a
  // round another thread is running ends first.
  if (!holding_token) {
    std::lock_guard token(token_);
    closed_.store(true, std::memory_order_release);
  } else {
    closed_.store(true, std::memory_order_release);
  }
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool mpi_thread::holds_token() noexcept {
  return holding_token;
}

void mpi_thread::post(op_fn op) {
  // Under MPI_THREAD_MULTIPLE the caller does it now when nobody else is making
  // progress: the operations queued before it first, so one thread's operations keep
  // their order (messages with the same tag arrive in order).
  if (level_ == MPI_THREAD_MULTIPLE && !holding_token && !on_thread() && token_.try_lock()) {
    if (!closed_.load(std::memory_order_acquire)) {
      token_scope held(token_);
      run_ops();
      run_op(op);
      return;
    }
    token_.unlock();
  }
  {
    std::lock_guard lock(mutex_);
    ops_.push_back(std::move(op));
    has_ops_.store(true, std::memory_order_release);
  }
  cv_.notify_one();
}

void mpi_thread::nudge() noexcept {
  nudged_.store(true);
  { std::lock_guard lock(mutex_); }  // (seen by a wait that checks the flag under it)
  cv_.notify_one();
}

bool mpi_thread::try_run(void (*fn)(void*), void* context) {
  if (level_ != MPI_THREAD_MULTIPLE || holding_token || on_thread() || !token_.try_lock())
    return false;
  if (closed_.load(std::memory_order_acquire)) {
    token_.unlock();
    return false;
  }
  token_scope held(token_);
  run_ops();  // what was queued before goes first (post)
  fn(context);
  return true;
}

void mpi_thread::run_sync(std::function<void()> op) {
  if (on_thread() || holding_token) return op();
  std::promise<void> done;
  auto f = done.get_future();
  post([&] {
    try {
      op();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  f.get();
}

void mpi_thread::attach(engine* e) {
  {
    std::lock_guard lock(mutex_);
    engine_ = e;
  }
  if (level_ == MPI_THREAD_MULTIPLE) {
    strata::detail::set_wait_park_hook(&wait_park_hook);
    strata::detail::set_wait_hook(&wait_hook);
  }
  cv_.notify_all();
}

void mpi_thread::detach() {
  // Called in a progress round (the token is held), so no other round uses the engine.
  strata::detail::set_wait_hook(nullptr);
  strata::detail::set_wait_park_hook(nullptr);
  std::lock_guard lock(mutex_);
  engine_ = nullptr;
}

bool mpi_thread::try_progress() noexcept {
  if (level_ != MPI_THREAD_MULTIPLE || holding_token || !token_.try_lock()) return false;
  bool did = false;
  {
    token_scope held(token_);
    if (closed_.load(std::memory_order_acquire)) return false;
    if (!strata::detail::is_pool_worker()) {
      // A count, and a clock stamp only every waiter_stamp_rounds rounds: a clock read
      // costs as much as the rest of a round. Two waiters may store the same value; the
      // MPI thread only asks whether it changed.
      auto const rounds = waiter_rounds_.load(std::memory_order_relaxed) + 1;
      waiter_rounds_.store(rounds, std::memory_order_relaxed);
      if (rounds % waiter_stamp_rounds == 1)
        waiter_stamp_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                            std::memory_order_relaxed);
      if (waiter_parked_.load(std::memory_order_relaxed))
        waiter_parked_.store(false, std::memory_order_relaxed);
    }
    engine* e = engine_.load(std::memory_order_acquire);  // changes only under the token
    did = run_ops();
    if (!e) return did;
    try {
      did = e->progress(true) || did;
    } catch (std::exception const& x) {
      strata::detail::log(strata::detail::log_level::info,
                          std::string("strata::dist: a progress round failed: ") + x.what());
    }
    did = run_ops() || did;
  }
  // The remote call this round received and kept (engine::handle), run here, the token
  // released: a call may wait, post and poll like any task. One per round and one at a
  // time per thread: the round's other calls, and those that reach this thread while
  // the call waits, go to the pool (a kept call that waits for a later one of the same
  // round must not hold it back).
  if (inline_call_kept) {
    auto c = std::move(*inline_call_kept);
    inline_call_kept.reset();
    struct depth {
      depth() { ++inline_calls_depth; }
      ~depth() { --inline_calls_depth; }
    } inside;
    try {
      c.owner->run_call(c.source, c.id, c.fn, c.signature, c.payload);
    } catch (std::exception const& x) {  // the call's own errors are its reply: this is
                                         // out of memory for the reply itself
      strata::detail::log(strata::detail::log_level::info,
                          std::string("strata::dist: a remote call could not reply: ") + x.what());
    }
    did = true;
  }
  return did;
}

void mpi_thread::waiter_parks() noexcept {
  // Sequentially consistent with main()'s nap: either it sees the flag before it
  // sleeps, or this sees it napping and wakes it (under the mutex: no lost wake-up).
  waiter_parked_.store(true);
  if (!deferring_.load()) return;
  { std::lock_guard lock(mutex_); }
  cv_.notify_one();
}

bool mpi_thread::run_ops() {
  if (!has_ops_.load(std::memory_order_acquire)) return false;
  std::deque<op_fn> batch;
  {
    std::lock_guard lock(mutex_);
    batch.swap(ops_);
    has_ops_.store(false, std::memory_order_relaxed);
  }
  for (auto& op : batch) run_op(op);
  return !batch.empty();
}

void mpi_thread::main() {
  using clock = std::chrono::steady_clock;
  auto last_active = clock::now();
  std::uint64_t seen_rounds = 0;  // waiter_rounds_ when this thread last looked
  clock::time_point failing_since{}, last_failure_note{};  // rounds that throw
  bool napped_for_waiter = false;
  // A thread waiting for an event ran a round since this one last looked (try_progress):
  // it polls for its reply and completes its event itself, so this one naps instead of
  // taking turns with it for a core (each turn a context switch, several times a
  // message's latency on an oversubscribed machine: docs/dist.md "Progress and its
  // latency"). A waiter that parks wakes it (waiter_parks); one that returns or helps
  // with a job leaves it napping for at most idle_cap_, after which it polls hot (the
  // nap counts as activity). A change since the last look may be the last rounds of a
  // wait that has ended (the look before was a nap ago): the waiter still polls if its
  // clock stamp, taken every waiter_stamp_rounds rounds, is recent.
  auto nap_for_waiter = [&](clock::time_point now) {
    auto const rounds = waiter_rounds_.load(std::memory_order_relaxed);
    bool const polling =
        rounds != seen_rounds && !waiter_parked_.load() &&
        !has_ops_.load(std::memory_order_acquire) &&
        now - clock::time_point(clock::duration(waiter_stamp_.load(std::memory_order_relaxed))) <
            waiter_window;
    seen_rounds = rounds;
    napped_for_waiter = polling;
    if (!polling) return false;
    {
      std::unique_lock lock(mutex_);
      deferring_.store(true);
      cv_.wait_for(lock, idle_cap_, [&] {
        return stop_ || !ops_.empty() || waiter_parked_.load() || nudged_.load();
      });
      deferring_.store(false);
      nudged_.store(false);
    }
    last_active = clock::now();
    return true;
  };
  for (;;) {
    engine* e;
    {
      std::unique_lock lock(mutex_);
      if (stop_ && ops_.empty()) return;
      e = engine_;
      if (!e && ops_.empty()) {
        // No runtime: sleep until one attaches or work is posted.
        cv_.wait(lock, [&] { return stop_ || engine_ || !ops_.empty(); });
        last_active = clock::now();
        continue;
      }
    }
    // After a nap for a polling waiter (below), the look comes again before this thread's
    // own round: a round of its own while the waiter still polls would take what the
    // waiter's next round takes, and a remote call received here goes to the pool (a
    // worker woken, then spinning on a core the pollers need: one call in about 500 did
    // so in the round-trip benchmark before this look).
    if (napped_for_waiter && nap_for_waiter(clock::now())) continue;
    // A round needs the progress token; a thread that holds it is making progress
    // itself, so this one just stays hot.
    bool did = false;
    bool busy = true;  // while another thread runs a round, something is going on
    if (token_.try_lock()) {
      token_scope held(token_);
      {
        // Again under the token: another thread's round may have detached it.
        std::lock_guard lock(mutex_);
        e = engine_;
      }
      did = run_ops();
      // A round's failure is logged, as in try_progress, and the thread backs off as when
      // idle; rounds that keep failing for failing_rounds_limit end the job with the
      // reason (an MPI call that fails every time would otherwise hang it, and the
      // shutdown check at a round's end would never be reached).
      try {
        if (e) did = e->progress() || did;
        failing_since = {};
      } catch (std::exception const& x) {
        auto const t = clock::now();
        if (failing_since == clock::time_point{}) failing_since = t;
        if (t - last_failure_note > std::chrono::seconds(1)) {
          last_failure_note = t;
          strata::detail::log(strata::detail::log_level::info,
                              std::string("strata::dist: a progress round failed: ") + x.what());
        }
        if (t - failing_since > failing_rounds_limit)
          abort_job(std::string("strata::dist: progress rounds have failed for ") +
                    std::to_string(failing_rounds_limit.count()) +
                    " s, the last with: " + x.what());
      }
      busy = e && e->busy();
    }
    auto const now = clock::now();
    if (did) {
      last_active = now;
      continue;
    }
    if (nap_for_waiter(now)) continue;
    // Back-off (docs/dist.md): poll hot (yielding the core to any runnable thread) for a
    // while after the last activity, longer while operations are outstanding; then sleep
    // for growing intervals up to a cap, so an idle rank costs no core. Work posted by
    // this process wakes the thread at once; messages from others wait for the next poll.
    auto const idle = now - last_active;
    auto const hot = busy ? std::chrono::microseconds(2000) : std::chrono::microseconds(200);
    if (idle < hot) {
      std::this_thread::yield();
      continue;
    }
    auto const cap = busy ? std::min(idle_cap_, std::chrono::microseconds(50)) : idle_cap_;
    auto nap = std::min<clock::duration>(cap, (idle - hot) / 4 + std::chrono::microseconds(5));
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, nap, [&] { return stop_ || !ops_.empty() || nudged_.load(); });
    nudged_.store(false);
  }
}

// --- the engine -----------------------------------------------------------------------

engine::engine(MPI_Comm am, MPI_Comm coll, MPI_Comm teams, int rank, int size,
               std::unique_ptr<am_rings> rings)
    : am_(am), coll_(coll), teams_(teams), rank_(rank), size_(size) {
  if (rings && rings->active()) rings_ = std::move(rings);
  static std::atomic<std::uint64_t> serials{1};
  serial_ = serials.fetch_add(1, std::memory_order_relaxed);
  int* ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(am_, MPI_TAG_UB, &ub, &flag);
  if (flag && ub) tag_ub_ = *ub;
  world_ = std::make_shared<team_state>();
  world_->comm = coll_;
  for (int r = 0; r < size_; ++r) world_->ranks.push_back(r);
  world_->my = rank_;
  world_->owner = this;
}

engine::~engine() = default;

bool engine::rings_in_use() const noexcept {
  return rings_ && rings_->any();
}

std::uint64_t engine::ring_messages() const noexcept {
  return rings_ ? rings_->received() : 0;
}

bool engine::busy() const noexcept {
  return outstanding_.load(std::memory_order_relaxed) > 0 || !requests_.empty() ||
         !watches_.empty() || (rings_ && rings_->queued());
}

event engine::watch(std::function<bool()> ready) {
  auto ev = event::pending();
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  mpi_thread::get().post([this, ready = std::move(ready), ev]() mutable {
    watches_.emplace_back(std::move(ready), ev);
  });
  return ev;
}

bool engine::poll_watches() {
  if (watches_.empty()) return false;
  std::vector<std::pair<event, std::exception_ptr>> done;
  std::size_t kept = 0;
  for (auto& w : watches_) {
    bool ready = false;
    std::exception_ptr err;
    try {
      ready = w.first();
    } catch (...) {
      err = std::current_exception();
    }
    if (ready || err)
      done.emplace_back(std::move(w.second), err);
    else
      watches_[kept++] = std::move(w);
  }
  watches_.resize(kept);
  // Completed after the list is settled: a continuation may add a watch of its own.
  for (auto& [ev, err] : done) {
    outstanding_.fetch_sub(1, std::memory_order_acq_rel);
    ev.complete(err);
  }
  return !done.empty();
}

void engine::check_rank(int rank, char const* operation) const {
  if (rank < 0 || rank >= size_)
    throw invalid_argument(std::string(operation) + ": rank " + std::to_string(rank) +
                           " is out of range; expected 0.." + std::to_string(size_ - 1) + " (" +
                           std::to_string(size_) + " ranks)");
}

int engine::next_tag(bool put) noexcept {
  // Puts use odd tags, gets even ones, each counted by the origin: data messages from X
  // to Y are either X's puts or Y's gets, so a tag never matches the wrong transfer.
  auto const span = static_cast<std::uint64_t>((tag_ub_ - 1) / 2);
  if (put) return static_cast<int>(1 + 2 * (put_tags_++ % span));
  return static_cast<int>(2 + 2 * (get_tags_++ % span));
}

void engine::track(MPI_Request r, callback done) {
  requests_.push_back(r);
  callbacks_.push_back(std::move(done));
}

void engine::send(int to, header const& h, void const* payload, std::size_t n) {
  if (rings_ && rings_->reaches(to)) {
    bool const was_queued = rings_->queued();
    if (rings_->send(to, &h, sizeof h, payload, n)) return;
    // What waits in a queue goes out in later rounds: a thread other than the MPI thread
    // wakes it for them (a flag its sleeps check: an empty operation would be taken by
    // this very thread's round), or an idle rank would leave the rest of a long message
    // for its next poll, up to a millisecond later.
    if (!was_queued && rings_->queued() && !mpi_thread::get().on_thread())
      mpi_thread::get().nudge();
    return;
  }
  if (to == rank_) ++self_messages_;
  bytes buffer(sizeof(header) + n);
  std::memcpy(buffer.data(), &h, sizeof h);
  if (n) std::memcpy(buffer.data() + sizeof h, payload, n);
  MPI_Request r;
  check_mpi(
      MPI_Isend(buffer.data(), static_cast<int>(buffer.size()), MPI_BYTE, to, am_tag, am_, &r),
      "MPI_Isend");
  // The buffer lives in the completion callback until the send completes (a vector's move
  // keeps its data where it is).
  track(r, [buffer = std::move(buffer)](MPI_Status const&) {});
}

std::uint64_t engine::pending_table::insert(pending p) {
  auto [id, op] = emplace();
  op = std::move(p);
  return id;
}

std::pair<std::uint64_t, engine::pending&> engine::pending_table::emplace() {
  std::uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(slots_.size());
    // Room for every slot's index in the free list, so that erase never allocates.
    if (free_.capacity() < slots_.size() + 1) free_.reserve(2 * (slots_.size() + 1));
    auto fresh = std::make_unique<slot>();
    slots_.push_back(std::move(fresh));
  }
  auto& s = *slots_[index];
  s.used = true;
  return {(std::uint64_t{s.generation} << 32) | index, s.op};
}

engine::pending* engine::pending_table::find(std::uint64_t id) noexcept {
  auto const index = static_cast<std::uint32_t>(id);
  if (index >= slots_.size()) return nullptr;
  auto& s = *slots_[index];
  return s.used && s.generation == static_cast<std::uint32_t>(id >> 32) ? &s.op : nullptr;
}

void engine::pending_table::erase(std::uint64_t id) noexcept {
  auto const index = static_cast<std::uint32_t>(id);
  auto& s = *slots_[index];
  s.used = false;
  // What the operation held goes now (what is empty costs nothing to reset; the slot's
  // own memory stays for the next operation).
  auto& op = s.op;
  op.ev = event();
  op.rank = -1;
  op.what.clear();
  op.lasting_what = nullptr;
  op.call = false;
  op.result.reset();
  op.dst = nullptr;
  op.n = 0;
  op.chunks_left = 0;
  op.receives.clear();
  op.keep.reset();
  if (++s.generation == 0) s.generation = 1;
  free_.push_back(index);  // within the capacity insert reserved
}

std::uint64_t engine::begin(pending p) {
  return pending_.insert(std::move(p));
}

void engine::finish(std::uint64_t id, std::exception_ptr err) {
  if (auto* p = pending_.find(id)) finish(id, *p, std::move(err));
}

void engine::finish(std::uint64_t id, pending& p, std::exception_ptr err) {
  auto ev = std::move(p.ev);
  pending_.erase(id);
  outstanding_.fetch_sub(1, std::memory_order_acq_rel);
  ev.complete(std::move(err));
}

void engine::fail(std::uint64_t id, std::string const& message) {
  auto* p = pending_.find(id);
  if (!p) return;
  for (auto& r : p->receives)
    if (r != MPI_REQUEST_NULL) MPI_Cancel(&r);
  auto const& what = p->lasting_what ? *p->lasting_what : p->what;
  finish(id,
         remote(p->rank, (p->call ? "remote call of " + demangle(what) : what) + ": " + message));
}

void engine::issue_call(int rank, std::uint64_t id, std::uint64_t signature,
                        std::string const& what, bool what_lasts, bytes const& payload,
                        std::shared_ptr<bytes> result, event ev) noexcept {
  std::uint64_t req = 0;
  try {
    auto [id_, op] = pending_.emplace();  // filled in place (a call's issue path is short)
    req = id_;
    op.rank = rank;
    op.call = true;
    op.result = std::move(result);
    if (what_lasts)
      op.lasting_what = &what;
    else
      op.what = what;  // (may throw: then the slot is left as fresh as it came)
    op.ev = std::move(ev);
  } catch (...) {
    if (req) pending_.erase(req);  // (ids have a generation >= 1: never 0)
    outstanding_.fetch_sub(1, std::memory_order_acq_rel);
    return ev.complete(std::current_exception());
  }
  try {
    send(rank, {.kind = am::call, .id = req, .a = id, .b = signature}, payload.data(),
         payload.size());
  } catch (...) {
    finish(req, std::current_exception());
  }
}

event engine::call(int rank, std::uint64_t id, std::uint64_t signature, std::string const& what,
                   bool what_lasts, bytes args, std::shared_ptr<bytes> result, after const& deps) {
  check_rank(rank, "dist::async");
  auto ev = event::pending();
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  // The common case: no dependencies, another rank, and the progress token free. The
  // message goes out from here, nothing is kept or handed over in between (on one node a
  // remote call's round trip is well under a microsecond: docs/dist.md "Active messages
  // on one node").
  if (deps.events.empty() && rank != rank_ && mpi_thread::get().try_run([&] {
        issue_call(rank, id, signature, what, what_lasts, args, std::move(result), ev);
      }))
    return ev;
  // Everything the call carries, in one block: its continuations then capture a pointer
  // (kept in place), and the function's name is demangled only for an error message.
  struct outgoing {
    int rank;
    std::uint64_t id, signature;
    std::string what;            // empty when `lasting` names it
    std::string const* lasting;  // async's name, alive as long as the program
    bytes payload;
    std::shared_ptr<bytes> result;
    event ev;
    std::string const& name() const { return lasting ? *lasting : what; }
  };
  auto call = std::make_unique<outgoing>(
      outgoing{rank, id, signature, what_lasts ? std::string() : what, what_lasts ? &what : nullptr,
               std::move(args), std::move(result), ev});
  auto start = [this](std::unique_ptr<outgoing> c, std::exception_ptr err) {
    if (err) {
      outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      return c->ev.complete(err);
    }
    if (c->rank == rank_) {
      // A call to this rank runs through the same code, minus the network.
      strata::detail::defer([this, c = std::shared_ptr<outgoing>(std::move(c))] {
        bytes unused;  // a call without a result has no buffer (dist::async)
        auto error_text = invoke(c->id, c->signature, c->payload, c->result ? *c->result : unused);
        outstanding_.fetch_sub(1, std::memory_order_acq_rel);
        c->ev.complete(error_text.empty() ? nullptr
                                          : remote(rank_, "remote call of " + demangle(c->name()) +
                                                              ": " + error_text));
      });
      return;
    }
    mpi_thread::get().post([this, c = std::move(c)] {
      issue_call(c->rank, c->id, c->signature, c->name(), c->lasting != nullptr, c->payload,
                 std::move(c->result), std::move(c->ev));
    });
  };
  if (deps.events.empty()) {
    start(std::move(call), nullptr);
    return ev;
  }
  auto ready = when_all(deps);
  if (ready.ready()) {
    start(std::move(call), ready.error());
  } else {
    auto* rs = ready.state();  // alive while it runs its continuations (see when_all)
    ready.then([start, c = std::move(call), rs]() mutable { start(std::move(c), rs->error()); });
  }
  return ev;
}

event engine::put(int rank, std::uintptr_t dst, void const* src, std::size_t n, after const& deps) {
  check_rank(rank, "dist::put");
  if (rank != rank_) {
    if (auto const* w = window_for(rank, dst, n)) {
      // A peer's segment mapped here: the put is a memory copy into it, complete when
      // done (the release fence orders it before whatever this thread tells the owner).
      if (deps.ready() && !deps.error()) {
        copy_bytes(w->at(dst), src, n);
        std::atomic_thread_fence(std::memory_order_release);
        direct_ops_.fetch_add(1, std::memory_order_relaxed);
        return event::completed();
      }
      // After the dependencies: hold the window (this thread's last one may change).
      if (auto keep = window_ref(rank, dst, n))
        return direct(deps, [keep, dst, src, n, this] {
          copy_bytes(keep->at(dst), src, n);
          std::atomic_thread_fence(std::memory_order_release);
          direct_ops_.fetch_add(1, std::memory_order_relaxed);
        });
    }
  }
  auto ev = event::pending();
  auto ready = when_all(deps);
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  auto* rs = ready.state();
  auto start = [this, rank, dst, src, n, ev, rs] {
    if (auto err = rs ? rs->error() : nullptr) {
      outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      return ev.complete(err);
    }
    if (rank == rank_) {
      if (auto dev = device_segment(dst, n)) {
        // This rank's device memory: the memory layer's copy from the caller's buffer.
        auto copied = device_copy(true, const_cast<void*>(src), dst, n, *dev);
        copied.then([this, copied, ev]() mutable {
          outstanding_.fetch_sub(1, std::memory_order_acq_rel);
          ev.complete(copied.error());
        });
        return;
      }
      std::exception_ptr err;
      if (segment_contains(dst, n))
        std::memcpy(reinterpret_cast<void*>(dst), src, n);
      else
        err = remote(rank, "put of " + segment_problem(rank, dst, n));
      outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      return ev.complete(err);
    }
    mpi_thread::get().post([this, rank, dst, src, n, ev] {
      auto what = "put of " + std::to_string(n) + " bytes to rank " + std::to_string(rank);
      if (n <= inline_limit) {
        auto req = begin({.ev = ev, .rank = rank, .what = what});
        send(rank, {.kind = am::put, .id = req, .a = dst, .b = n}, src, n);
        return;
      }
      auto req = begin({.ev = ev, .rank = rank, .what = what});
      int const tag = next_tag(true);
      send(rank, {.kind = am::put_rdv, .id = req, .a = dst, .b = n, .c = std::uint64_t(tag)},
           nullptr, 0);
      for (int i = 0, k = chunk_count(n); i < k; ++i) {
        MPI_Request r;
        check_mpi(MPI_Isend(static_cast<char const*>(src) + std::size_t(i) * chunk_bytes,
                            chunk_size(n, i), MPI_BYTE, rank, tag, am_, &r),
                  "MPI_Isend");
        track(r, [](MPI_Status const&) {});  // completion comes with the target's ack
      }
    });
  };
  if (ready.ready())
    start();
  else
    ready.then(std::move(start));
  return ev;
}

event engine::get(void* dst, int rank, std::uintptr_t src, std::size_t n, after const& deps) {
  check_rank(rank, "dist::get");
  if (rank != rank_) {
    if (auto const* w = window_for(rank, src, n)) {
      if (deps.ready() && !deps.error()) {
        std::atomic_thread_fence(std::memory_order_acquire);
        copy_bytes(dst, w->at(src), n);
        direct_ops_.fetch_add(1, std::memory_order_relaxed);
        return event::completed();
      }
      if (auto keep = window_ref(rank, src, n))
        return direct(deps, [keep, dst, src, n, this] {
          std::atomic_thread_fence(std::memory_order_acquire);
          copy_bytes(dst, keep->at(src), n);
          direct_ops_.fetch_add(1, std::memory_order_relaxed);
        });
    }
  }
  auto ev = event::pending();
  auto ready = when_all(deps);
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  auto* rs = ready.state();
  auto start = [this, rank, dst, src, n, ev, rs] {
    if (auto err = rs ? rs->error() : nullptr) {
      outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      return ev.complete(err);
    }
    if (rank == rank_) {
      if (auto dev = device_segment(src, n)) {
        auto copied = device_copy(false, dst, src, n, *dev);
        copied.then([this, copied, ev]() mutable {
          outstanding_.fetch_sub(1, std::memory_order_acq_rel);
          ev.complete(copied.error());
        });
        return;
      }
      std::exception_ptr err;
      if (segment_contains(src, n))
        std::memcpy(dst, reinterpret_cast<void const*>(src), n);
      else
        err = remote(rank, "get of " + segment_problem(rank, src, n));
      outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      return ev.complete(err);
    }
    mpi_thread::get().post([this, rank, dst, src, n, ev] {
      auto what = "get of " + std::to_string(n) + " bytes from rank " + std::to_string(rank);
      if (n <= inline_limit) {
        auto req = begin({.ev = ev, .rank = rank, .what = what, .dst = dst, .n = n});
        send(rank, {.kind = am::get, .id = req, .a = src, .b = n, .c = 0}, nullptr, 0);
        return;
      }
      int const tag = next_tag(false);
      int const k = chunk_count(n);
      auto req =
          begin({.ev = ev, .rank = rank, .what = what, .dst = dst, .n = n, .chunks_left = k});
      // Receives first, so the data lands in place whatever the target's timing.
      for (int i = 0; i < k; ++i) {
        MPI_Request r;
        check_mpi(MPI_Irecv(static_cast<char*>(dst) + std::size_t(i) * chunk_bytes,
                            chunk_size(n, i), MPI_BYTE, rank, tag, am_, &r),
                  "MPI_Irecv");
        pending_.find(req)->receives.push_back(r);
        track(r, [this, req](MPI_Status const& st) {
          int cancelled = 0;
          MPI_Test_cancelled(&st, &cancelled);
          auto* p = pending_.find(req);
          if (cancelled || !p) return;
          if (--p->chunks_left == 0) finish(req, nullptr);
        });
      }
      send(rank, {.kind = am::get, .id = req, .a = src, .b = n, .c = std::uint64_t(tag)}, nullptr,
           0);
    });
  };
  if (ready.ready())
    start();
  else
    ready.then(std::move(start));
  return ev;
}

event engine::atomic(int rank, std::uintptr_t address, atomic_kind kind, scalar type,
                     std::uint64_t operand, std::uint64_t expected, std::shared_ptr<bytes> old) {
  check_rank(rank, "dist atomic");
  auto const size = scalar_size(type);
  // std::atomic_ref needs its type's alignment: a misaligned address is undefined (a
  // split lock, or a torn value), on this rank, through a mapping or on the target.
  if (address % size != 0)
    throw invalid_argument("dist atomic: address 0x" + fmt_hex(address) + " on rank " +
                           std::to_string(rank) + " is not aligned to " + std::to_string(size) +
                           " bytes; expected the address of a " + std::to_string(size) +
                           "-byte element");
  if (rank == rank_) {
    if (!segment_contains(address, size))
      return event::failed(remote(rank, "atomic on " + segment_problem(rank, address, size)));
    // (Device segments are not host segments: segment_problem says so.)
    try {
      auto w = apply_atomic(address, kind, type, operand, expected);
      old->resize(size);
      std::memcpy(old->data(), &w, size);
    } catch (...) {
      return event::failed(std::current_exception());
    }
    return event::completed();
  }
  if (auto const* w = window_for(rank, address, size)) {
    // On a mapped segment: the same atomic instruction the owner's MPI thread would run
    // (std::atomic_ref on shared memory), so it mixes with others' atomics by message.
    try {
      auto v = apply_atomic(reinterpret_cast<std::uintptr_t>(w->at(address)), kind, type, operand,
                            expected);
      old->resize(size);
      std::memcpy(old->data(), &v, size);
    } catch (...) {
      return event::failed(std::current_exception());
    }
    direct_ops_.fetch_add(1, std::memory_order_relaxed);
    return event::completed();
  }
  auto ev = event::pending();
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  mpi_thread::get().post([=, this] {
    auto req = begin(
        {.ev = ev,
         .rank = rank,
         .what = "atomic on " + std::to_string(size) + " bytes on rank " + std::to_string(rank),
         .result = old});
    header h{.kind = am::atomic,
             .op = static_cast<std::uint8_t>(kind),
             .type = static_cast<std::uint8_t>(type),
             .id = req,
             .a = address,
             .b = operand,
             .c = expected};
    send(rank, h, nullptr, 0);
  });
  return ev;
}

std::string engine::invoke(std::uint64_t fn, std::uint64_t signature, bytes const& payload,
                           bytes& out) const {
  try {
    reader r(payload.data(), payload.size());
    writer w(out);
    // The common case: the function this thread ran last, the registry unchanged since,
    // run without the lock or a copy (a lookup under the mutex and a std::function copy
    // are a fifth of a remote call's work on its target). Not while that very function
    // runs here (a call it waits for, run by this thread meanwhile, looks up its own).
    auto& last = last_invoked;
    auto const version = registry_version.load(std::memory_order_acquire);
    if (!last.running && last.version == version && last.fn == fn && last.signature == signature) {
      last.running = true;
      struct done {
        bool& running;
        ~done() { running = false; }
      } running{last.running};
      last.run(r, w);
    } else {
      auto run = find_invoker(fn, signature);
      if (!last.running) {
        last.version = 0;
        last.run = run;  // (may throw: nothing is kept then)
        last.fn = fn;
        last.signature = signature;
        last.version = version;
      }
      run(r, w);
    }
    if (r.left())
      throw error("the call carried " + std::to_string(r.left()) +
                  " bytes more than the function's arguments");
    return {};
  } catch (std::exception const& e) {
    return std::string(*e.what() ? e.what() : "an exception with an empty message");
  } catch (...) {
    return "a non-standard exception";
  }
}

invoker engine::find_invoker(std::uint64_t fn, std::uint64_t signature) const {
  {
    std::unique_lock lock(registry_mutex());
    auto it = registry().find(fn);
    if (it == registry().end())
      throw error("no function with this name is registered on rank " + std::to_string(rank_) +
                  " (register it there with dist::register_function, or run the same binary "
                  "on every rank)");
    if (it->second.ambiguous)
      throw error("two different functions are registered under this name on rank " +
                  std::to_string(rank_));
    if (it->second.signature_id != signature)
      throw error("the function registered on rank " + std::to_string(rank_) + " has type " +
                  demangle(it->second.signature) +
                  ", not the argument and result types of this call");
    return it->second.run;
  }
}

void engine::run_call(int source, std::uint64_t id, std::uint64_t fn, std::uint64_t signature,
                      bytes const& payload) {
  bytes out;
  auto error_text = invoke(fn, signature, payload, out);
  bool const ok = error_text.empty();
  bytes reply = ok ? std::move(out) : bytes();
  if (!ok) {
    reply.resize(error_text.size());
    std::memcpy(reply.data(), error_text.data(), error_text.size());
  }
  auto respond = [this, source, id, ok](bytes const& r) {
    send(source, {.kind = ok ? am::reply_ok : am::reply_err, .id = id}, r.data(), r.size());
  };
  // From here when this thread can take the progress token (as post would), nothing
  // captured; else the reply waits for the MPI thread with its bytes.
  auto& thread = mpi_thread::get();
  if (thread.try_run([&] {
        try {
          respond(reply);
        } catch (std::exception const& x) {
          strata::detail::log(
              strata::detail::log_level::info,
              std::string("strata::dist: a remote call's reply failed: ") + x.what());
        }
      }))
    return;
  thread.post([respond, reply = std::move(reply)] { respond(reply); });
}

void engine::handle(int source, std::byte const* msg, std::size_t n) {
  if (n < sizeof(header)) {
    strata::detail::log(strata::detail::log_level::info,
                        "strata::dist: dropped a malformed message of " + std::to_string(n) +
                            " bytes from rank " + std::to_string(source));
    return;
  }
  header h;
  std::memcpy(&h, msg, sizeof h);
  std::byte const* body = msg + sizeof h;
  std::size_t const body_n = n - sizeof h;
  auto text = [&] { return std::string(reinterpret_cast<char const*>(body), body_n); };
  switch (h.kind) {
    case am::call: {
      // The handler only enqueues (Phalanx §IV-C). A thread that polls in its own wait
      // keeps the round's first call and runs it right after the round, without the token
      // (as a waiting thread helps with the pool's work): no hand-off, no wake-up, which
      // is most of a remote call's latency on a loaded machine. The MPI thread, a thread
      // already inside such a call, and the round's further calls go to the pool.
      if (inline_calls_depth == 0 && !inline_call_kept &&
          !the_thread.load(std::memory_order_relaxed)->on_thread()) {
        inline_call_kept.emplace(
            inline_call{this, source, h.id, h.a, h.b, bytes(body, body + body_n)});
        return;
      }
      auto payload = std::make_shared<bytes>(body, body + body_n);
      strata::detail::defer([this, source, id = h.id, fn = h.a, sig = h.b, payload] {
        run_call(source, id, fn, sig, *payload);
      });
      return;
    }
    case am::reply_ok: {
      auto* p = pending_.find(h.id);
      if (!p) return;
      if (p->result) p->result->assign(body, body + body_n);
      return finish(h.id, *p, nullptr);
    }
    case am::reply_err:
    case am::ack_err:
      return fail(h.id, text());
    case am::ack_ok:
      return finish(h.id, nullptr);
    case am::put: {
      if (auto dev = body_n == h.b ? device_segment(h.a, h.b) : std::nullopt) {
        // Device memory: the memory layer copies the message's bytes in, then the ack.
        auto data = std::make_shared<bytes>(body, body + body_n);
        after_device_copy(device_copy(true, data->data(), h.a, h.b, *dev),
                          [this, source, id = h.id, data](std::string const& problem) {
                            reply_ack(source, id, problem);
                          });
        return;
      }
      bool ok = body_n == h.b && segment_contains(h.a, h.b);
      if (ok) std::memcpy(reinterpret_cast<void*>(h.a), body, body_n);
      if (ok) return send(source, {.kind = am::ack_ok, .id = h.id}, nullptr, 0);
      auto problem = segment_problem(rank_, h.a, h.b);
      return send(source, {.kind = am::ack_err, .id = h.id}, problem.data(), problem.size());
    }
    case am::put_rdv: {
      std::size_t const len = h.b;
      int const tag = static_cast<int>(h.c);
      auto const dev = device_segment(h.a, len);
      bool const ok = dev || segment_contains(h.a, len);
      // A bad target still receives the data (into a scratch buffer) to drain it; device
      // memory receives into host staging, then the memory layer copies it in.
      std::shared_ptr<bytes> scratch =
          ok && !dev ? nullptr : std::make_shared<bytes>(std::max<std::size_t>(len, 1));
      char* base =
          scratch ? reinterpret_cast<char*>(scratch->data()) : reinterpret_cast<char*>(h.a);
      auto left = std::make_shared<int>(chunk_count(len));
      for (int i = 0, k = *left; i < k; ++i) {
        MPI_Request r;
        check_mpi(MPI_Irecv(base + std::size_t(i) * chunk_bytes, chunk_size(len, i), MPI_BYTE,
                            source, tag, am_, &r),
                  "MPI_Irecv");
        track(r,
              [this, source, id = h.id, left, scratch, ok, dev, a = h.a, len](MPI_Status const&) {
                if (--*left) return;
                if (dev)
                  return after_device_copy(device_copy(true, scratch->data(), a, len, *dev),
                                           [this, source, id, scratch](std::string const& problem) {
                                             reply_ack(source, id, problem);
                                           });
                if (ok) return send(source, {.kind = am::ack_ok, .id = id}, nullptr, 0);
                auto problem = segment_problem(rank_, a, len);
                send(source, {.kind = am::ack_err, .id = id}, problem.data(), problem.size());
              });
      }
      return;
    }
    case am::segment: {
      auto const info = find_segment(h.a);
      return send(source, {.kind = am::reply_ok, .id = h.id}, &info, sizeof info);
    }
    case am::get: {
      if (auto dev = device_segment(h.a, h.b)) {
        // Device memory: copied to host staging by the memory layer, then sent from there.
        auto staging = std::make_shared<bytes>(std::max<std::size_t>(h.b, 1));
        after_device_copy(
            device_copy(false, staging->data(), h.a, h.b, *dev),
            [this, source, id = h.id, n = h.b, tag = h.c, staging](std::string const& problem) {
              if (!problem.empty()) return reply_ack(source, id, problem);
              if (tag == 0)
                return send(source, {.kind = am::get_data, .id = id}, staging->data(), n);
              for (int i = 0, k = chunk_count(n); i < k; ++i) {
                MPI_Request r;
                check_mpi(
                    MPI_Isend(reinterpret_cast<char const*>(staging->data()) +
                                  std::size_t(i) * chunk_bytes,
                              chunk_size(n, i), MPI_BYTE, source, static_cast<int>(tag), am_, &r),
                    "MPI_Isend");
                track(r, [staging](MPI_Status const&) {});
              }
            });
        return;
      }
      if (!segment_contains(h.a, h.b)) {
        auto problem = segment_problem(rank_, h.a, h.b);
        return send(source, {.kind = am::ack_err, .id = h.id}, problem.data(), problem.size());
      }
      if (h.c == 0)
        return send(source, {.kind = am::get_data, .id = h.id}, reinterpret_cast<void const*>(h.a),
                    h.b);
      for (int i = 0, k = chunk_count(h.b); i < k; ++i) {
        MPI_Request r;
        check_mpi(MPI_Isend(reinterpret_cast<char const*>(h.a) + std::size_t(i) * chunk_bytes,
                            chunk_size(h.b, i), MPI_BYTE, source, static_cast<int>(h.c), am_, &r),
                  "MPI_Isend");
        track(r, [](MPI_Status const&) {});
      }
      return;
    }
    case am::get_data: {
      auto* p = pending_.find(h.id);
      if (!p) return;
      if (body_n != p->n)
        return fail(h.id, "the reply has " + std::to_string(body_n) + " bytes; expected " +
                              std::to_string(p->n));
      std::memcpy(p->dst, body, body_n);
      return finish(h.id, nullptr);
    }
    case am::atomic: {
      auto const kind = static_cast<atomic_kind>(h.op);
      auto const type = static_cast<scalar>(h.type);
      auto const size = scalar_size(type);
      std::string problem;
      std::uint64_t old = 0;
      if (!segment_contains(h.a, size)) {
        problem = segment_problem(rank_, h.a, size);
      } else if (h.a % size != 0) {  // refused by the origin too; never trust the wire
        problem = "atomic at address 0x" + fmt_hex(h.a) + " on rank " + std::to_string(rank_) +
                  ": not aligned to " + std::to_string(size) + " bytes";
      } else {
        try {
          old = apply_atomic(h.a, kind, type, h.b, h.c);
        } catch (std::exception const& e) {
          problem = e.what();
        }
      }
      if (!problem.empty())
        return send(source, {.kind = am::ack_err, .id = h.id}, problem.data(), problem.size());
      return send(source, {.kind = am::atomic_reply, .id = h.id, .a = old, .b = size}, nullptr, 0);
    }
    case am::atomic_reply: {
      auto* p = pending_.find(h.id);
      if (p && p->result) {
        p->result->resize(h.b);
        std::memcpy(p->result->data(), &h.a, h.b);
      }
      return finish(h.id, nullptr);
    }
  }
  strata::detail::log(
      strata::detail::log_level::info,
      "strata::dist: dropped a message of unknown kind from rank " + std::to_string(source));
}

bool engine::progress(bool waiter) {
  bool did = false;
  // Incoming active messages, a bounded number per round so requests keep moving: from
  // the rings of this node's ranks first (queued ones out, then those that came in),
  // then through MPI, which needs no probe when every other rank has a ring.
  bool received = false;
  if (rings_) {
    did = rings_->flush();
    received = rings_->receive(
                   [this](int source, std::byte const* m, std::size_t n) { handle(source, m, n); },
                   64) > 0;
    did = received || did;
  }
  // A round that received from a ring ends here, every other round at most: a call it
  // kept runs as soon as the round ends (mpi_thread::try_progress), and the requests'
  // test (an MPI_Testsome, 40-100 ns here, is most of a round) waits for the next round.
  if (received && !skipped_requests_) {
    skipped_requests_ = true;
    return true;
  }
  skipped_requests_ = false;
  bool const probe = !rings_ || !rings_->node_only() || self_messages_ > 0;
  for (int k = 0; probe && k < 64; ++k) {
    int flag = 0;
    MPI_Message msg;
    MPI_Status st;
    check_mpi(MPI_Improbe(MPI_ANY_SOURCE, am_tag, am_, &flag, &msg, &st), "MPI_Improbe");
    if (!flag) break;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    // Into a buffer kept between rounds: handle() copies what it keeps.
    auto& buffer = receive_scratch_;
    buffer.resize(static_cast<std::size_t>(count));
    check_mpi(MPI_Mrecv(buffer.data(), count, MPI_BYTE, &msg, &st), "MPI_Mrecv");
    if (st.MPI_SOURCE == rank_ && self_messages_ > 0) --self_messages_;
    handle(st.MPI_SOURCE, buffer.data(), buffer.size());
    if (buffer.capacity() > 65536) bytes().swap(buffer);  // a large message's memory goes back
    did = true;
  }
  // A waiter's rounds test the requests every request_test_stride-th round while rings
  // carry this node's messages: an MPI_Testsome (with the progress of MPI's own
  // collectives under it) is four fifths of such a round, and a message that comes
  // meanwhile waits for it to end. A request's completion is seen a few short rounds
  // (well under MPI's own latency) later; the MPI thread tests every round.
  bool const test = !rings_ || !waiter || (++untested_rounds_ & (request_test_stride - 1)) == 0;
  if (test && !requests_.empty()) {
    auto& done = done_scratch_;
    auto& statuses = status_scratch_;
    done.resize(requests_.size());
    statuses.resize(requests_.size());
    int count = 0;
    // MPI_ERR_IN_STATUS: some request failed (a truncated receive); its callback sees the
    // error in its status, the others complete as usual.
    if (int const rc = MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &count,
                                    done.data(), statuses.data());
        rc != MPI_ERR_IN_STATUS)
      check_mpi(rc, "MPI_Testsome");
    if (count > 0 && count != MPI_UNDEFINED) {
      did = true;
      // Taken out while the callbacks run: one may track new requests (a continuation
      // that posts an operation while this thread holds the token runs it here).
      auto run = std::move(run_scratch_);
      run.clear();
      for (int i = 0; i < count; ++i)
        run.emplace_back(std::move(callbacks_[static_cast<std::size_t>(done[i])]),
                         statuses[static_cast<std::size_t>(i)]);
      std::size_t kept = 0;
      for (std::size_t i = 0; i < requests_.size(); ++i) {
        if (requests_[i] == MPI_REQUEST_NULL) continue;
        requests_[kept] = requests_[i];
        callbacks_[kept] = std::move(callbacks_[i]);
        ++kept;
      }
      requests_.resize(kept);
      callbacks_.resize(kept);
      // Each on its own: one that throws (no memory for a reply) must not drop the
      // others, whose requests are already gone from the list.
      for (auto& [cb, st] : run) {
        try {
          cb(st);
        } catch (std::exception const& x) {
          strata::detail::log(strata::detail::log_level::info,
                              std::string("strata::dist: a completion failed: ") + x.what());
        }
      }
      run.clear();
      if (run.capacity() > run_scratch_.capacity()) run_scratch_ = std::move(run);
    }
  }
  did = poll_watches() || did;
  if (closing_ && barrier_done_ && requests_.empty() && on_closed_ &&
      !(rings_ && rings_->queued())) {
    // Waits nobody will end now (a member left without waiting for its copies) fail.
    for (auto& w : watches_) {
      outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      w.second.complete(std::make_exception_ptr(
          error("dist: the runtime shut down while a copy waited for another rank")));
    }
    watches_.clear();
    auto done = std::move(on_closed_);
    on_closed_ = nullptr;
    done();
  }
  return did;
}

void engine::shut_down(std::function<void()> done) {
  closing_ = true;
  on_closed_ = std::move(done);
  MPI_Request r;
  // The barrier is on the active-message communicator's collective context while this
  // thread keeps serving requests: a rank that finished early still answers the others.
  check_mpi(MPI_Ibarrier(am_, &r), "MPI_Ibarrier");
  track(r, [this](MPI_Status const&) { barrier_done_ = true; });
}

void engine::free_communicators() {
  std::lock_guard lock(teams_mutex_);
  for (auto& t : teams_made_) {
    t->alive.store(false);
    if (t->comm != MPI_COMM_NULL) MPI_Comm_free(&t->comm);
  }
  teams_made_.clear();
  world_->alive.store(false);
  for (MPI_Comm* c : {&am_, &coll_, &teams_})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

// --- collectives ----------------------------------------------------------------------

void team_state::start_in_order(std::uint64_t place, std::function<void()> start) {
  if (place != next_to_start) {
    held.emplace(place, std::move(start));
    return;
  }
  start();
  ++next_to_start;
  for (auto it = held.find(next_to_start); it != held.end(); it = held.find(next_to_start)) {
    auto next = std::move(it->second);
    held.erase(it);
    next();
    ++next_to_start;
  }
}

event engine::collective(std::shared_ptr<team_state> const& t, collective_args const& a,
                         std::uint64_t place) {
  auto ev = event::pending();
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  mpi_thread::get().post([this, t, a, ev, place] {
    t->start_in_order(place, [this, t, a, ev] {
      auto fail_with = [&](std::exception_ptr err) {
        outstanding_.fetch_sub(1, std::memory_order_acq_rel);
        ev.complete(err);
      };
      try {
        MPI_Datatype type = MPI_BYTE;
        bool made = false;
        if (a.typed) {
          type = mpi_type(a.type);
        } else if (a.kind != collective::barrier) {
          check_mpi(MPI_Type_contiguous(static_cast<int>(a.elem_size), MPI_BYTE, &type),
                    "MPI_Type_contiguous");
          check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
          made = true;
        }
        if (a.count > static_cast<std::size_t>(INT_MAX))
          throw invalid_argument("dist collective: " + std::to_string(a.count) +
                                 " elements per rank; expected at most " + std::to_string(INT_MAX));
        int const n = static_cast<int>(a.count);
        MPI_Request r = MPI_REQUEST_NULL;
        MPI_Comm c = t->comm;
        int rc = MPI_SUCCESS;
        switch (a.kind) {
          case collective::barrier:
            rc = MPI_Ibarrier(c, &r);
            break;
          case collective::broadcast:
            rc = MPI_Ibcast(a.out, n, type, a.root, c, &r);
            break;
          case collective::reduce:
            rc = MPI_Ireduce(a.in, a.out, n, type, mpi_op(a.op), a.root, c, &r);
            break;
          case collective::all_reduce:
            rc = MPI_Iallreduce(a.in, a.out, n, type, mpi_op(a.op), c, &r);
            break;
          case collective::gather:
            rc = MPI_Igather(a.in, n, type, a.out, n, type, a.root, c, &r);
            break;
          case collective::scatter:
            rc = MPI_Iscatter(a.in, n, type, a.out, n, type, a.root, c, &r);
            break;
          case collective::all_gather:
            rc = MPI_Iallgather(a.in, n, type, a.out, n, type, c, &r);
            break;
          case collective::all_to_all:
            rc = MPI_Ialltoall(a.in, n, type, a.out, n, type, c, &r);
            break;
          case collective::all_to_all_v: {
            auto const k = a.counts->size() / 4;
            int const* v = a.counts->data();
            rc = MPI_Ialltoallv(a.in, v, v + k, type, a.out, v + 2 * k, v + 3 * k, type, c, &r);
            break;
          }
        }
        if (rc != MPI_SUCCESS) {
          if (made) MPI_Type_free(&type);
          throw error("dist collective failed to start: " + mpi_error_text(rc));
        }
        track(r, [this, ev, type, made, t, keep = a.counts](MPI_Status const& st) mutable {
          if (made) MPI_Type_free(&type);
          outstanding_.fetch_sub(1, std::memory_order_acq_rel);
          if (st.MPI_ERROR != MPI_SUCCESS && st.MPI_ERROR != MPI_ERR_PENDING)
            return ev.complete(std::make_exception_ptr(
                error("dist collective failed: " + mpi_error_text(st.MPI_ERROR))));
          ev.complete();
        });
      } catch (...) {
        fail_with(std::current_exception());
      }
    });
  });
  return ev;
}

event engine::point_to_point(std::shared_ptr<team_state> const& t, bool send, int peer, int tag,
                             void* buffer, std::size_t n) {
  auto ev = event::pending();
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  mpi_thread::get().post([this, t, send, peer, tag, buffer, n, ev] {
    MPI_Request r = MPI_REQUEST_NULL;
    int const rc = send ? MPI_Isend(buffer, static_cast<int>(n), MPI_BYTE, peer, tag, t->comm, &r)
                        : MPI_Irecv(buffer, static_cast<int>(n), MPI_BYTE, peer, tag, t->comm, &r);
    char const* what = send ? "dist::send" : "dist::recv";
    if (rc != MPI_SUCCESS) {
      outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      return ev.complete(std::make_exception_ptr(error(std::string(what) + " to/from team rank " +
                                                       std::to_string(peer) +
                                                       " failed to start: " + mpi_error_text(rc))));
    }
    track(r, [this, ev, send, n, peer, what](MPI_Status const& st) {
      outstanding_.fetch_sub(1, std::memory_order_acq_rel);
      // A message larger than the buffer is MPI_ERR_TRUNCATE: the same mistake as a
      // smaller one (the sizes of a send and its receive differ), so the same error.
      bool const truncated = !send && st.MPI_ERROR == MPI_ERR_TRUNCATE;
      if (!truncated && st.MPI_ERROR != MPI_SUCCESS && st.MPI_ERROR != MPI_ERR_PENDING)
        return ev.complete(std::make_exception_ptr(
            error(std::string(what) + " with team rank " + std::to_string(peer) +
                  " failed: " + mpi_error_text(st.MPI_ERROR))));
      if (!send) {
        int got = 0;
        MPI_Get_count(&st, MPI_BYTE, &got);
        // Open MPI counts the whole message of a truncated receive; an MPI that counts
        // only what fit still says more than `n` was sent.
        std::string const sent = truncated && static_cast<std::size_t>(got) <= n
                                     ? "more than " + std::to_string(n)
                                     : std::to_string(got);
        if (truncated || static_cast<std::size_t>(got) != n)
          return ev.complete(std::make_exception_ptr(
              invalid_argument("dist::recv: team rank " + std::to_string(peer) + " sent " + sent +
                               " bytes; expected " + std::to_string(n) +
                               " (the sizes of a send and its receive differ)")));
      }
      ev.complete();
    });
  });
  return ev;
}

std::shared_ptr<team_state> engine::make_team(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  if (ranks.empty())
    throw invalid_argument("dist::make_team: no ranks; expected at least one world rank");
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    check_rank(ranks[i], "dist::make_team");
    if (i && ranks[i] == ranks[i - 1])
      throw invalid_argument("dist::make_team: rank " + std::to_string(ranks[i]) +
                             " is listed twice; expected distinct ranks");
  }
  auto mine = std::find(ranks.begin(), ranks.end(), rank_);
  if (mine == ranks.end())
    throw invalid_argument("dist::make_team: rank " + std::to_string(rank_) +
                           " is not in the team it is making; expected only members to call it");
  auto t = std::make_shared<team_state>();
  t->ranks = ranks;
  t->my = static_cast<int>(mine - ranks.begin());
  t->owner = this;
  auto create = [&] {
    MPI_Group world_group, group;
    check_mpi(MPI_Comm_group(teams_, &world_group), "MPI_Comm_group");
    check_mpi(MPI_Group_incl(world_group, static_cast<int>(ranks.size()), ranks.data(), &group),
              "MPI_Group_incl");
    int rc = MPI_Comm_create_group(teams_, group, 0, &t->comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    check_mpi(rc, "MPI_Comm_create_group");
    MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN);
  };
  // With MPI_THREAD_MULTIPLE the blocking creation runs in the caller, so the progress
  // thread keeps serving requests meanwhile; below that, on the MPI thread.
  if (mpi_thread::get().level() == MPI_THREAD_MULTIPLE)
    create();
  else
    mpi_thread::get().run_sync(create);
  std::lock_guard lock(teams_mutex_);
  teams_made_.push_back(t);
  return t;
}

}  // namespace strata::dist::detail
