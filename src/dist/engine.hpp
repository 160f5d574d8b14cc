// The progress engine of strata::dist (docs/dist.md, Phalanx §IV-C): one thread per
// process (the MPI thread) initializes MPI, receives active messages and handles them
// (calls are only enqueued on the worker pool; transfers and atomics are checked and
// done here, like an RDMA engine), posts what other threads hand it, completes MPI
// requests and thereby events. It polls with back-off and sleeps when idle, so it does
// not take a core. Under MPI_THREAD_MULTIPLE, threads that post operations or wait for
// events take the progress token and do this work themselves when nobody else is (no
// hand-off); below it, the MPI thread makes every MPI call (FUNNELED suffices).
#pragma once

#include <strata/dist/async.hpp>
#include <strata/dist/collectives.hpp>
#include <strata/dist/global_ptr.hpp>
#include <strata/exec/inline_function.hpp>

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace strata::dist::detail {

/// Throws strata::error naming `what` unless `rc` is MPI_SUCCESS.
void check_mpi(int rc, char const* what);
std::string mpi_error_text(int rc);

class engine;
class am_rings;

struct team_state {
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<int> ranks;  // world ranks, ascending
  int my = -1;             // this process's team rank
  engine* owner = nullptr;
  std::atomic<bool> alive{true};
  // The order of the team's collectives (reserve_collective): places handed out, the next
  // place to start, and started-too-early collectives waiting for their turn. The last two
  // are touched only by whoever runs MPI (the MPI thread or the progress token's holder).
  std::atomic<std::uint64_t> next_place{0};
  std::uint64_t next_to_start = 0;
  std::map<std::uint64_t, std::function<void()>> held;
  /// Runs `start` now if `place` is next, then the held ones that follow; else holds it.
  void start_in_order(std::uint64_t place, std::function<void()> start);
  // A second communicator of the same members, made at the first dist::for_ranks on this
  // team (detail::control_team): its rounds never meet the body's own collectives.
  std::mutex control_mutex;
  std::shared_ptr<team_state> control;
  // dist::for_ranks calls on this team so far (collective, so the same count on every
  // member): each call's departure notices take a tag of their own, so that a for_ranks
  // nested in another's body never receives the outer one's (src/dist/for_ranks.cpp).
  std::atomic<std::uint64_t> for_ranks_calls{0};
};

/// The process-wide MPI thread: started by the first dist::runtime, it initializes MPI
/// and finalizes it at process exit; between runtimes it sleeps.
/// The progress token's lock (mpi_thread::token_): a flag, not a mutex. Every polling
/// thread tries it once a round and a remote call's issue and reply each take it, where
/// glibc's mutex costs about 80 instructions a try and as many an unlock (a sixth of a
/// call's round trip on one node). Only mpi_thread::stop() waits for it (lock), yielding
/// until the round that holds it ends, once per process.
class progress_token {
 public:
  bool try_lock() noexcept {
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }
  void lock() noexcept {
    while (!try_lock()) std::this_thread::yield();
  }

 private:
  std::atomic<bool> held_{false};
};

class mpi_thread {
 public:
  /// An operation for the MPI thread: the data path's sends and receives capture up to
  /// 96 bytes (team, buffer, sizes, event), kept without a heap allocation.
  using op_fn = strata::detail::inline_function<void(), 96>;
  static mpi_thread& get();
  /// Runs `op` on the MPI thread, soon (any thread may call it).
  /// Under MPI_THREAD_MULTIPLE a caller that can take the progress token runs `op`
  /// itself, after the operations queued before it (docs/dist.md "Progress").
  void post(op_fn op);
  /// Runs `f` now in the calling thread if it can take the progress token (as post does
  /// under MPI_THREAD_MULTIPLE, after the queued operations); returns false, running
  /// nothing, where post would queue. `f` must not throw.
  template <class F>
  bool try_run(F&& f) {
    return try_run([](void* c) { (*static_cast<std::remove_reference_t<F>*>(c))(); }, &f);
  }
  bool try_run(void (*fn)(void*), void* context);
  /// Wakes the MPI thread from a sleep or nap for a round (work that waits in a queue of
  /// the engine, not in this thread's operations).
  void nudge() noexcept;
  /// Runs `op` on the MPI thread (or, as post, in the caller holding the progress
  /// token) and waits for it; rethrows its exception.
  void run_sync(std::function<void()> op);
  /// One progress round (queued operations, then the engine) in the calling thread if
  /// it can take the progress token; returns whether anything happened. The wait hook
  /// of every thread that waits (src/exec/wait_hook.hpp).
  bool try_progress() noexcept;
  /// A thread that ran try_progress every round stops polling (it parks): the MPI thread
  /// polls again (the exec layer's park hook).
  void waiter_parks() noexcept;
  void attach(engine* e);
  void detach();
  int level() const noexcept { return level_; }
  bool owns_mpi() const noexcept { return owns_; }
  bool on_thread() const noexcept { return std::this_thread::get_id() == thread_.get_id(); }
  /// Whether the calling thread holds the progress token (the MPI thread during its
  /// rounds, or a thread running a round of its own).
  static bool holds_token() noexcept;
  void stop();

 private:
  mpi_thread();
  void main();
  bool run_ops();

  // The progress token: whoever holds it may touch the engine's MPI-thread state
  // (requests, pending operations) and make MPI calls of the data path. The MPI thread
  // takes it for each round; under MPI_THREAD_MULTIPLE, posting and waiting threads
  // take it when it is free and do the work themselves (no hand-off).
  progress_token token_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<op_fn> ops_;
  std::atomic<bool> has_ops_{false};
  std::atomic<bool> closed_{false};  // stop() began: other threads make no more MPI calls
  // Progress rounds run by threads other than the MPI thread (a count that changes), when
  // one of them last read the clock, and whether one of them parked since. Their own cache line:
  // written by every waiter's round, while the MPI thread's rounds read the flags around it.
  alignas(64) std::atomic<std::uint64_t> waiter_rounds_{0};
  std::atomic<std::int64_t> waiter_stamp_{0};  // steady clock ticks, every few rounds
  std::atomic<bool> waiter_parked_{false};
  std::atomic<bool> deferring_{false};  // main() naps, leaving the polling to waiters
  std::atomic<bool> nudged_{false};     // nudge(): a round is wanted
  bool stop_ = false;
  std::atomic<engine*> engine_{nullptr};  // set under mutex_; cleared under the token
  std::thread thread_;
  int level_ = MPI_THREAD_SINGLE;
  bool owns_ = false;
  std::exception_ptr init_error_;
  std::chrono::microseconds idle_cap_{1000};
};

/// The wire header of every active message (payload bytes follow).
enum class am : std::uint8_t {
  call,
  reply_ok,
  reply_err,
  put,      // inline data
  put_rdv,  // data follows in messages on tag c
  ack_ok,
  ack_err,
  get,  // c = tag (0: reply inline)
  get_data,
  atomic,
  atomic_reply,
  segment  // which dist::allocate segment holds address a (reply_ok: a segment_info)
};
struct header {
  am kind;
  std::uint8_t op = 0;
  std::uint8_t type = 0;
  std::uint8_t pad = 0;
  std::uint32_t pad2 = 0;
  std::uint64_t id = 0;
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
};

/// Where a device segment lives: its space and its place on this rank's machine.
struct device_range {
  space_id space;
  std::uint32_t place_id;
};

class engine {
 public:
  /// `rings`: the active-message rings to the ranks of this node (null or inactive: every
  /// active message goes through MPI).
  engine(MPI_Comm am, MPI_Comm coll, MPI_Comm teams, int rank, int size,
         std::unique_ptr<am_rings> rings = nullptr);
  ~engine();

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }

  // --- any thread -----------------------------------------------------------------
  /// A remote call; `what_lasts`: `what` outlives the call (dist::async's signature, a
  /// static), so it is kept by reference.
  event call(int rank, std::uint64_t id, std::uint64_t signature, std::string const& what,
             bool what_lasts, bytes args, std::shared_ptr<bytes> result, after const& deps);
  event put(int rank, std::uintptr_t dst, void const* src, std::size_t n, after const& deps);
  event get(void* dst, int rank, std::uintptr_t src, std::size_t n, after const& deps);
  event atomic(int rank, std::uintptr_t address, atomic_kind kind, scalar type,
               std::uint64_t operand, std::uint64_t expected, std::shared_ptr<bytes> old);
  event collective(std::shared_ptr<team_state> const& t, collective_args const& a,
                   std::uint64_t place);
  /// A non-blocking send (or receive) of `n` bytes to (from) team rank `peer` with `tag`
  /// on the team's communicator (MPI_Isend / MPI_Irecv on the MPI thread).
  event point_to_point(std::shared_ptr<team_state> const& t, bool send, int peer, int tag,
                       void* buffer, std::size_t n);
  /// An event the MPI thread completes once `ready()` returns true (polled every round
  /// while it is pending, like an MPI request; an exception from it fails the event):
  /// how waits on other processes' shared-memory words join the one wake-up path.
  event watch(std::function<bool()> ready);
  std::shared_ptr<team_state> make_team(std::vector<int> ranks);
  std::shared_ptr<team_state> const& world() const noexcept { return world_; }
  /// Origin operations not yet complete.
  long outstanding() const noexcept { return outstanding_.load(std::memory_order_acquire); }

  // --- the MPI thread -------------------------------------------------------------
  /// One round: incoming messages, then requests. Returns whether anything happened.
  /// `waiter`: a round of a thread that polls in its wait (mpi_thread::try_progress).
  bool progress(bool waiter = false);
  /// Whether the engine waits for something (outstanding operations or requests).
  bool busy() const noexcept;
  /// Starts the shutdown barrier; `done` runs on the MPI thread once it and every
  /// request have completed, and the communicators are freed.
  void shut_down(std::function<void()> done);
  /// Frees every communicator of this engine and its teams (after shut_down).
  void free_communicators();

 private:
  // (pending_table::erase resets each field by name, cheaper than assigning a fresh
  // pending: a field added here must be reset there too.)
  struct pending {
    event ev;
    int rank = -1;
    std::string what;
    std::string const* lasting_what = nullptr;  // instead of `what`: a name kept elsewhere
    bool call = false;  // `what` is a remote call's function type (demangled in fail)
    std::shared_ptr<bytes> result;
    void* dst = nullptr;  // gets: where the data goes
    std::size_t n = 0;
    int chunks_left = 0;
    std::vector<MPI_Request> receives;  // gets: to cancel on failure
    std::shared_ptr<void> keep;         // a buffer that must live until completion
  };
  // Kept in place up to 64 bytes (a point-to-point completion captures 48).
  using callback = strata::detail::inline_function<void(MPI_Status const&), 64>;

  // A peer's segment on this node, mapped here (docs/dist.md "Put and get on one
  // node"): puts, gets and atomics into it are loads and stores, no message.
  struct window {
    std::uintptr_t base = 0;  // in the owner's address space
    std::size_t bytes = 0;
    std::shared_ptr<void const> mapped;  // null: not mappable, use messages
    bool holds(std::uintptr_t address, std::size_t n) const {
      return address >= base && address - base < std::max<std::size_t>(bytes, 1) &&
             n <= bytes - (address - base);
    }
    char* at(std::uintptr_t address) const {
      return const_cast<char*>(static_cast<char const*>(mapped.get())) + (address - base);
    }
  };
  /// The mapped window of world rank `rank` holding [address, address + n), or null (not
  /// on this node, not mappable, freed, out of bounds: messages, which check and report).
  /// The first access to a segment asks its owner (one round trip, blocking; never on the
  /// MPI thread).
  std::shared_ptr<window const> window_ref(int rank, std::uintptr_t address, std::size_t n);
  /// window_ref through this thread's last window (no lock when it holds the range); the
  /// pointer stays valid until this thread's next call.
  window const* window_for(int rank, std::uintptr_t address, std::size_t n);
  /// The memory layer's copy of n bytes between host memory and a device segment.
  static event device_copy(bool to_device, void* host, std::uintptr_t device, std::size_t n,
                           device_range where);
  /// Runs `then` on the MPI thread once `copied` completes, with "" or what went wrong.
  void after_device_copy(event const& copied, std::function<void(std::string)> then);
  /// Acknowledges a put (ok when `problem` is empty).
  void reply_ack(int to, std::uint64_t id, std::string const& problem);
  /// Runs `op` (a direct put or get) after `deps`: at once when they are complete.
  event direct(after const& deps, std::function<void()> op);

  /// Registers a remote call and sends its message (under the progress token); a
  /// failure completes `ev` with it.
  void issue_call(int rank, std::uint64_t id, std::uint64_t signature, std::string const& what,
                  bool what_lasts, bytes const& payload, std::shared_ptr<bytes> result,
                  event ev) noexcept;
  void track(MPI_Request r, callback done);
  bool poll_watches();
  void send(int to, header const& h, void const* payload, std::size_t n);
  std::uint64_t begin(pending p);
  void finish(std::uint64_t id, std::exception_ptr err);
  void finish(std::uint64_t id, pending& p, std::exception_ptr err);  // p: find(id)'s
  void fail(std::uint64_t id, std::string const& message);
  void handle(int source, std::byte const* msg, std::size_t n);
  void run_call(int source, std::uint64_t id, std::uint64_t fn, std::uint64_t signature,
                bytes const& payload);
  friend class mpi_thread;
  /// Runs registered function `fn`; returns the error text ("" on success).
  std::string invoke(std::uint64_t fn, std::uint64_t signature, bytes const& payload,
                     bytes& out) const;
  /// The registered function `fn` (a copy, taken under the registry's lock); throws what
  /// the caller reports when there is none, two, or one of another type.
  invoker find_invoker(std::uint64_t fn, std::uint64_t signature) const;
  int next_tag(bool put) noexcept;
  void check_rank(int rank, char const* operation) const;

  MPI_Comm am_, coll_, teams_;
  int rank_, size_;
  std::unique_ptr<am_rings> rings_;  // null or active
  // Active messages this rank sent itself through MPI and has not received yet: with
  // rings to every other rank (node_only), progress() probes MPI for them alone.
  long self_messages_ = 0;
  bool skipped_requests_ = false;  // the last round ended after its rings (progress)
  unsigned untested_rounds_ = 0;   // waiters' rounds (every request_test_stride-th tests)
  int tag_ub_ = 32767;
  std::atomic<long> outstanding_{0};
  std::shared_ptr<team_state> world_;
  std::vector<std::shared_ptr<team_state>> teams_made_;
  std::mutex teams_mutex_;

  // MPI-thread state.
  std::vector<MPI_Request> requests_;
  std::vector<callback> callbacks_;
  // progress()'s MPI_Testsome arrays and completed callbacks, kept between rounds (a
  // waiter runs a round per spin: allocating them each time was most of a round's cost).
  std::vector<int> done_scratch_;
  std::vector<MPI_Status> status_scratch_;
  std::vector<std::pair<callback, MPI_Status>> run_scratch_;
  bytes receive_scratch_;  // progress()'s incoming active message
  // Pending watch() predicates and their events (the MPI thread's only).
  std::vector<std::pair<std::function<bool()>, event>> watches_;
  // The origin operations waiting for their replies, by id. Slots are reused (no
  // allocation per operation once warm: a remote call's round trip is a microsecond);
  // an id carries its slot's generation, so a reply for a finished operation finds none.
  class pending_table {
   public:
    std::uint64_t insert(pending p);
    /// A fresh slot (every field as default-constructed, ids aside) and its id: filled in
    /// place, no temporary moved in.
    std::pair<std::uint64_t, pending&> emplace();
    /// The operation with this id, or null (finished, or never issued).
    pending* find(std::uint64_t id) noexcept;
    void erase(std::uint64_t id) noexcept;

   private:
    struct slot {
      std::uint32_t generation = 1;
      bool used = false;
      pending op;
    };
    // Each slot in a block of its own, so that slots stay where they are as the table
    // grows and a lookup is one index (a deque's costs 60 instructions).
    std::vector<std::unique_ptr<slot>> slots_;
    std::vector<std::uint32_t> free_;
  };
  pending_table pending_;
  std::uint64_t put_tags_ = 0, get_tags_ = 0;
  bool closing_ = false;
  bool barrier_done_ = false;
  std::function<void()> on_closed_;

  // Peers' segments seen here, per world rank, by base address (window_for).
  std::mutex windows_mutex_;
  std::vector<std::map<std::uintptr_t, std::shared_ptr<window const>>> windows_;
  std::atomic<std::uint64_t> direct_ops_{0};
  std::uint64_t serial_;  // tags this thread's last window (window_for)

 public:
  /// Drops the windows of segments their owners have freed (at every first access to a
  /// segment, and at this rank's own dist::allocate and dist::deallocate).
  void sweep_windows();
  /// Peers' segments mapped here now (a diagnostic for tests).
  std::size_t mapped_windows();
  /// Active messages received through the rings so far (a diagnostic for tests).
  std::uint64_t ring_messages() const noexcept;
  /// Whether active messages to this node's ranks go through rings.
  bool rings_in_use() const noexcept;
  /// Puts, gets and atomics done through mapped windows so far (a diagnostic for tests).
  std::uint64_t direct_operations() const noexcept {
    return direct_ops_.load(std::memory_order_relaxed);
  }
};

/// What the owner of a segment tells a peer that asks (am::segment).
struct segment_info {
  std::uint64_t base = 0, bytes = 0;  // bytes = 0: no segment holds the address
  std::int64_t fd = -1;               // its memory file (-1: private memory)
  std::uint64_t serial = 0;
};
segment_info find_segment(std::uintptr_t address);

/// A dist::allocate segment in device memory (sim or CUDA), registered like host ones;
/// puts and gets reach it through the memory layer's copies, staged through host.
std::uintptr_t allocate_device_segment(place const& where, std::size_t size, space_id space,
                                       std::uint32_t* place_id);
/// memcpy, or `rep movsb` for large copies where the processor does that faster
/// (dist/segments.cpp): the puts and gets through mapped windows.
void copy_bytes(void* dst, void const* src, std::size_t n);

/// The device segment holding [address, address + n), if one does.
std::optional<device_range> device_segment(std::uintptr_t address, std::size_t n);

/// The engine of the live dist::runtime (throws strata::error when there is none).
engine& current_engine();

/// Host memory that remote ranks may access, process-wide.
bool segment_contains(std::uintptr_t address, std::size_t n);
std::string segment_problem(int rank, std::uintptr_t address, std::size_t n);
std::string fmt_hex(std::uintptr_t v);

}  // namespace strata::dist::detail
