#include <strata/dist.hpp>
#include <strata/exec/trace.hpp>
#include <strata/machine/json.hpp>

#include "dist/am_ring.hpp"
#include "dist/direct.hpp"
#include "dist/engine.hpp"
#include "log.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <thread>

namespace strata::dist {

namespace detail {

struct runtime_impl {
  engine* eng = nullptr;
  std::unique_ptr<engine> owned_engine;
  int rank = 0;
  int size = 1;
  place cluster;
  std::vector<place> rank_places;
  team world;
  strata::runtime* local = nullptr;
  int level = 0;
  std::string version;
  // The local machine's places in depth-first order, matching this rank's subtree.
  std::vector<place> local_places;
  // Who shares this node, and whether its ranks read each other directly.
  direct_peers direct;
  // Exceptions in flight when the runtime started: more at its end means this rank is
  // leaving the runtime's scope by an exception (see ~runtime).
  int unwinding_at_start = 0;

  static team make(std::shared_ptr<team_state> s) { return team(std::move(s)); }
};

namespace {
std::atomic<dist::runtime*> live{nullptr};

// Copies `from` (a machine tree) under `parent`, every place owned by `rank`.
void copy_tree(machine_builder& b, machine_builder::node_id parent, place const& from, int rank) {
  auto info = from.info();
  info.rank = rank;
  auto id = b.add(parent, info);
  for (auto const& c : from.children()) copy_tree(b, id, c, rank);
}
}  // namespace

engine& current_engine() {
  return *runtime::current().impl().eng;
}

int my_rank() {
  return runtime::current().rank();
}

[[noreturn]] void empty_future(char const* operation) {
  throw invalid_argument(std::string("dist::future::") + operation +
                         ": the future is empty (default-constructed); expected one from "
                         "dist::async, dist::allocate or a dist atomic");
}

[[noreturn]] void not_local(int rank, std::uintptr_t address) {
  throw invalid_argument("global_ptr::local: address 0x" + fmt_hex(address) + " is on rank " +
                         std::to_string(rank) + ", not on this rank (" + std::to_string(my_rank()) +
                         "); expected a pointer with is_local()");
}

event call(int rank, std::uint64_t id, std::uint64_t signature, std::string const& what,
           bool what_lasts, bytes args, std::shared_ptr<bytes> result, after const& deps) {
  return current_engine().call(rank, id, signature, what, what_lasts, std::move(args),
                               std::move(result), deps);
}

event put_bytes(int rank, std::uintptr_t dst, void const* src, std::size_t n, after const& deps) {
  return current_engine().put(rank, dst, src, n, deps);
}

std::uint32_t position_under_rank(place const& where) {
  auto& rt = runtime::current();
  int const r = rank_of(where, "dist::allocate");
  auto const full = where.unsliced();
  auto const all = rt.rank_place(r).descendants();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i] == full) return static_cast<std::uint32_t>(i);
  throw invalid_argument("dist::allocate: place '" + where.path() +
                         "' was not found under its rank's place");
}

place place_at_position(std::uint32_t position) {
  auto& rt = runtime::current();
  auto const all = rt.here().descendants();
  if (position >= all.size())
    throw invalid_argument("dist::allocate: no place at position " + std::to_string(position) +
                           " under rank " + std::to_string(rt.rank()) +
                           " (the ranks' cluster trees differ?)");
  return rt.to_local(all[position]);
}

std::uintptr_t allocate_device_bytes(std::uint32_t position, std::size_t size, space_id* space,
                                     std::uint32_t* place_id) {
  auto const where = place_at_position(position);
  switch (where.isa()) {
    case strata::isa::sim:
      *space = space_id::sim;
      break;
    case strata::isa::cuda:
      *space = space_id::cuda;
      break;
    default:
      throw invalid_argument("dist::allocate: place '" + where.path() +
                             "' is not a device; expected a sim or CUDA device or its memory");
  }
  return allocate_device_segment(where, size, *space, place_id);
}

std::uint64_t direct_operations() {
  return current_engine().direct_operations();
}

std::uint64_t ring_messages() {
  return current_engine().ring_messages();
}

bool ring_transport() {
  return current_engine().rings_in_use();
}

std::size_t mapped_segments() {
  return current_engine().mapped_windows();
}

event get_bytes(void* dst, int rank, std::uintptr_t src, std::size_t n, after const& deps) {
  return current_engine().get(dst, rank, src, n, deps);
}

event atomic_bytes(int rank, std::uintptr_t address, atomic_kind kind, scalar type,
                   std::uint64_t operand, std::uint64_t expected, std::shared_ptr<bytes> old) {
  return current_engine().atomic(rank, address, kind, type, operand, expected, std::move(old));
}

void check_member(team const& t, char const* operation) {
  if (!t.valid())
    throw invalid_argument(std::string(operation) +
                           ": the team is empty (default-constructed); expected runtime::world() "
                           "or a team from runtime::make_team");
  if (!t.state()->alive.load())
    throw error(std::string(operation) + ": the team belongs to a dist::runtime that has ended");
  if (t.rank() < 0)
    throw invalid_argument(std::string(operation) + ": this rank (" + std::to_string(my_rank()) +
                           ") is not a member of the team; expected only members to call it");
}

void check_root(team const& t, int root, char const* operation) {
  check_member(t, operation);
  if (root < 0 || root >= t.size())
    throw invalid_argument(std::string(operation) + ": root " + std::to_string(root) +
                           " is out of range; expected a team rank 0.." +
                           std::to_string(t.size() - 1));
}

void size_mismatch(char const* operation, std::string const& what) {
  throw invalid_argument(std::string(operation) + ": " + what);
}

event start_collective(team const& t, collective_args const& a) {
  check_member(t, "dist collective");
  if (t.state()->owner != &current_engine())
    throw error("dist collective: the team belongs to an earlier dist::runtime");
  return current_engine().collective(t.state(), a, reserve_collective(t));
}

std::uint64_t reserve_collective(team const& t) {
  check_member(t, "dist collective");
  return t.state()->next_place.fetch_add(1, std::memory_order_relaxed);
}

event start_collective(team const& t, collective_args const& a, std::uint64_t place) {
  check_member(t, "dist collective");
  if (t.state()->owner != &current_engine())
    throw error("dist collective: the team belongs to an earlier dist::runtime");
  return current_engine().collective(t.state(), a, place);
}

event start_point_to_point(team const& t, bool send, int peer, int tag, void* buffer, std::size_t n,
                           char const* operation) {
  check_member(t, operation);
  if (peer < 0 || peer >= t.size())
    throw invalid_argument(std::string(operation) + ": team rank " + std::to_string(peer) +
                           " is out of range; expected 0.." + std::to_string(t.size() - 1));
  if (t.state()->owner != &current_engine())
    throw error(std::string(operation) + ": the team belongs to an earlier dist::runtime");
  if (tag < 0 || tag > 32767)
    throw invalid_argument(std::string(operation) + ": tag " + std::to_string(tag) +
                           " is out of range; expected 0..32767");
  if (n > static_cast<std::size_t>(INT_MAX))
    throw invalid_argument(std::string(operation) + ": " + std::to_string(n) +
                           " bytes in one message; expected at most " + std::to_string(INT_MAX));
  return current_engine().point_to_point(t.state(), send, peer, tag, buffer, n);
}

}  // namespace detail

// --- team -------------------------------------------------------------------------------

std::vector<int> const& team::ranks() const {
  if (!state_)
    throw invalid_argument(
        "dist::team: the team is empty (default-constructed); expected "
        "runtime::world() or a team from runtime::make_team");
  return state_->ranks;
}

int team::rank() const {
  ranks();
  return state_->my;
}

bool team::contains_world_rank(int world_rank) const {
  auto const& r = ranks();
  return std::binary_search(r.begin(), r.end(), world_rank);
}

int team::world_rank(int r) const {
  auto const& all = ranks();
  if (r < 0 || r >= static_cast<int>(all.size()))
    throw invalid_argument("dist::team::world_rank: team rank " + std::to_string(r) +
                           " is out of range; expected 0.." + std::to_string(all.size() - 1));
  return all[static_cast<std::size_t>(r)];
}

namespace detail {

bool direct_access(team const& t) {
  auto const& d = runtime::current().impl().direct;
  if (!d.usable) return false;
  auto const& host = d.hosts[static_cast<std::size_t>(runtime::current().rank())];
  for (int r : t.ranks())
    if (d.hosts[static_cast<std::size_t>(r)] != host) return false;
  return true;
}

bool direct_mapping(team const& t) {
  return runtime::current().impl().direct.map && direct_access(t);
}

bool node_peer(int w) {
  auto& rt = runtime::current();
  auto const& d = rt.impl().direct;
  auto const me = static_cast<std::size_t>(rt.rank());
  return d.map && w != rt.rank() && w >= 0 && static_cast<std::size_t>(w) < d.hosts.size() &&
         d.hosts[static_cast<std::size_t>(w)] == d.hosts[me];
}

bool node_has_peers() {
  auto& rt = runtime::current();
  for (int w = 0; w < rt.size(); ++w)
    if (node_peer(w)) return true;
  return false;
}

std::shared_ptr<void const> map_segment(int w, block_handle const& h) {
  if (h.fd < 0 || !node_peer(w)) return nullptr;
  return direct_map(runtime::current().impl().direct.pids[static_cast<std::size_t>(w)], w, h, true);
}

std::shared_ptr<void const> map_peer_block(team const& t, int q, block_handle const& h) {
  if (h.fd < 0 || !runtime::current().impl().direct.map) return nullptr;
  int const w = t.world_rank(q);
  return direct_map(runtime::current().impl().direct.pids[static_cast<std::size_t>(w)], w, h);
}

strata::event when_peers_pulled(team const& t, std::vector<block_handle> peers, std::uint64_t n,
                                std::vector<std::shared_ptr<void const>> mapped) {
  auto const& pids = runtime::current().impl().direct.pids;
  struct peer {
    long pid;
    block_handle handle;
    std::shared_ptr<void const> mapped;
  };
  std::vector<peer> waiting;
  for (int q = 0; q < t.size(); ++q) {
    if (q == t.rank()) continue;
    auto const uq = static_cast<std::size_t>(q);
    int const w = t.world_rank(q);
    waiting.push_back(
        {pids[static_cast<std::size_t>(w)], peers[uq], uq < mapped.size() ? mapped[uq] : nullptr});
  }
  return current_engine().watch([waiting = std::move(waiting), n]() mutable {
    std::erase_if(waiting, [n](peer const& p) {
      return direct_count(p.pid, p.handle, p.mapped.get(), block_count::pulls_done) >= n;
    });
    return waiting.empty();
  });
}

strata::event pull_halo(team const& t, int q, shared_block const& mine, block_handle peer,
                        std::shared_ptr<void const> peer_mapped, void* into, std::size_t expected,
                        std::uint64_t n, std::shared_ptr<void const> keep) {
  if (q < 0 || q >= t.size())
    throw invalid_argument("dist::tensor: a halo exchange with team rank " + std::to_string(q) +
                           "; expected 0.." + std::to_string(t.size() - 1));
  int const w = t.world_rank(q);
  long const pid = runtime::current().impl().direct.pids[static_cast<std::size_t>(w)];
  // One predicate for both halves (one watch, polled each round): copy once q has
  // published, then wait for q's copy of ours.
  return current_engine().watch([pid, w, q, &mine, peer, mapped = std::move(peer_mapped), into,
                                 expected, n, keep = std::move(keep), pulled = false]() mutable {
    // A block that its owner freed (it destroyed its tensor, or left) never counts on:
    // a count that falls short after the block is seen gone (read again: the owner may
    // have counted and freed between the two reads) is an error, not a wait.
    auto const short_for_good = [&](block_count which) {
      if (!mapped || block_alive(mapped.get()) || direct_count(pid, peer, mapped.get(), which) >= n)
        return false;
      throw error("dist::tensor: team rank " + std::to_string(q) +
                  " freed its halo rows before this rank's exchange " + std::to_string(n) +
                  " with it ended; expected every member to fill its padding as often as its "
                  "neighbours and to keep the tensor until then");
    };
    if (!pulled) {
      if (direct_count(pid, peer, mapped.get(), block_count::started) < n)
        return short_for_good(block_count::started);
      try {
        // The slot: the rows' bytes, then their address in q's memory.
        std::uint64_t slot[2] = {0, 0};
        if (mapped) {
          auto const* s = static_cast<halo_slot const*>(mapped.get());
          slot[0] = s->bytes.load(std::memory_order_relaxed);
          slot[1] = s->address.load(std::memory_order_relaxed);
        } else {
          static_assert(sizeof(halo_slot) == sizeof slot);
          remote_run const run{static_cast<std::uintptr_t>(peer.address), sizeof slot};
          direct_read(pid, w, std::span(&run, 1), slot);
        }
        std::uint64_t const published = slot[0];
        if (published == halo_failed)
          throw error("dist::tensor: team rank " + std::to_string(q) + "'s side of halo exchange " +
                      std::to_string(n) +
                      " failed (its padding policy or an earlier exchange; the error is "
                      "reported there)");
        if (published != expected)
          throw invalid_argument("dist::tensor: team rank " + std::to_string(q) + " sends " +
                                 std::to_string(published) + " bytes of halo rows; this rank " +
                                 "expects " + std::to_string(expected) +
                                 " (the tensor's shape or padding differs between the ranks)");
        // Straight from q's tensor: q keeps the rows as they are until it sees this
        // rank's pulls_done (its exchange's event waits for it).
        remote_run const rows{static_cast<std::uintptr_t>(slot[1]), expected};
        direct_read(pid, w, std::span(&rows, 1), into);
      } catch (...) {
        // Counted all the same: q waits for it to end its own half, which went well.
        mine.pulls_done();
        throw;
      }
      mine.pulls_done();
      pulled = true;
    }
    return direct_count(pid, peer, mapped.get(), block_count::pulls_done) >= n ||
           short_for_good(block_count::pulls_done);
  });
}

void read_direct(team const& t, int q, std::span<remote_run const> runs, void* out) {
  int const w = t.world_rank(q);
  direct_read(runtime::current().impl().direct.pids[static_cast<std::size_t>(w)], w, runs, out);
}

}  // namespace detail

event barrier(team const& t) {
  return detail::start_collective(t, {.kind = detail::collective::barrier});
}

// --- runtime ----------------------------------------------------------------------------

runtime::runtime(int& argc, char** argv, runtime_options const& options)
    : owned_(std::make_unique<strata::runtime>(argc, argv, options)) {
  start();
}

runtime::runtime(runtime_options const& options)
    : owned_(std::make_unique<strata::runtime>(options)) {
  start();
}

runtime::runtime(strata::runtime& local) {
  if (&strata::runtime::current() != &local)
    throw invalid_argument("dist::runtime: the strata::runtime to attach to is not the live one");
  start();
}

void runtime::start() {
  using namespace detail;
  impl_ = std::make_unique<runtime_impl>();
  impl_->unwinding_at_start = std::uncaught_exceptions();
  (void)failure_grace();  // a bad STRATA_DIST_FAILURE_GRACE is an error here, not at a failure
  impl_->local = owned_ ? owned_.get() : &strata::runtime::current();
  dist::runtime* expected = nullptr;
  if (!live.compare_exchange_strong(expected, this))
    throw error(
        "a strata::dist::runtime is already alive in this process; expected one at a "
        "time (create it once in main)");
  try {
    auto& thread = mpi_thread::get();
    impl_->level = thread.level();
    std::string local_json = to_json(impl_->local->machine(), {}, -1);
    std::vector<std::string> trees;
    std::string host;
    MPI_Comm am = MPI_COMM_NULL, coll = MPI_COMM_NULL, teams = MPI_COMM_NULL;
    std::unique_ptr<am_rings> rings;
    thread.run_sync([&] {
      // All ranks construct their runtimes together, and the previous runtime ended with
      // a barrier, so these blocking calls cannot meet stray messages.
      check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &am), "MPI_Comm_dup");
      check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &coll), "MPI_Comm_dup");
      check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &teams), "MPI_Comm_dup");
      for (auto c : {am, coll, teams}) MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
      MPI_Comm_rank(am, &impl_->rank);
      MPI_Comm_size(am, &impl_->size);
      char name[MPI_MAX_PROCESSOR_NAME];
      int len = 0;
      MPI_Get_processor_name(name, &len);
      host.assign(name, static_cast<std::size_t>(len));
      char version[MPI_MAX_LIBRARY_VERSION_STRING];
      MPI_Get_library_version(version, &len);
      impl_->version.assign(version, static_cast<std::size_t>(len));
      // Every rank's machine tree as JSON, to every rank (Phalanx: the cluster is a place).
      std::string mine = local_json + '\n' + host;
      int n = static_cast<int>(mine.size());
      std::vector<int> sizes(static_cast<std::size_t>(impl_->size)), offsets(sizes.size());
      check_mpi(MPI_Allgather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, coll), "MPI_Allgather");
      long total = 0;
      for (std::size_t r = 0; r < sizes.size(); ++r) {
        offsets[r] = static_cast<int>(total);
        total += sizes[r];
      }
      if (total > INT_MAX) throw error("dist::runtime: the machine descriptions exceed 2 GiB");
      std::string all(static_cast<std::size_t>(total), '\0');
      check_mpi(MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(),
                               MPI_CHAR, coll),
                "MPI_Allgatherv");
      std::vector<std::string> hosts;
      for (std::size_t r = 0; r < sizes.size(); ++r) {
        trees.push_back(
            all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(sizes[r])));
        hosts.push_back(trees.back().substr(trees.back().rfind('\n') + 1));
      }
      impl_->direct = direct_setup(coll, impl_->rank, std::move(hosts));
      rings = std::make_unique<am_rings>(coll, impl_->rank, impl_->direct);
    });
    // Each rank traces to a file of its own, told apart when tracing started (before MPI
    // knew the rank) from the launcher's environment; says so if that did not work.
    strata::trace::detail::check_rank(impl_->rank, impl_->size);
    impl_->owned_engine =
        std::make_unique<engine>(am, coll, teams, impl_->rank, impl_->size, std::move(rings));
    impl_->eng = impl_->owned_engine.get();
    impl_->world = runtime_impl::make(impl_->eng->world());

    machine_builder b(place_info{.type = place_type::cluster,
                                 .name = "Cluster",
                                 .attributes = {{"ranks", std::to_string(impl_->size)},
                                                {"mpi_thread_level", thread_level()}}});
    for (int r = 0; r < impl_->size; ++r) {
      auto const& text = trees[static_cast<std::size_t>(r)];
      auto cut = text.rfind('\n');
      auto machine = machine_from_json(std::string_view(text).substr(0, cut));
      auto node = b.add(b.root(), place_info{.type = place_type::rank,
                                             .name = "Rank " + std::to_string(r),
                                             .rank = r,
                                             .attributes = {{"host", text.substr(cut + 1)}}});
      copy_tree(b, node, machine, r);
    }
    impl_->cluster = b.build();
    impl_->rank_places = impl_->cluster.children();
    impl_->local_places = impl_->local->machine().descendants();
    thread.attach(impl_->eng);
  } catch (...) {
    live.store(nullptr);
    throw;
  }
}

namespace detail {

// How long a failed rank waits for the others before it ends the job. Ranks that fail
// together (an error every member detects, as the collectives' agreed failures) arrive
// within it; a rank that fails alone leaves the others in a collective or a remote
// operation it will never join, and MPI cannot cancel those: only ending the job ends
// their wait (docs/dist.md "When a rank fails").
std::chrono::duration<double> failure_grace() {
  static std::chrono::duration<double> const grace = [] {
    char const* v = std::getenv("STRATA_DIST_FAILURE_GRACE");
    if (!v || !*v) return std::chrono::duration<double>(10.0);
    char* end = nullptr;
    double const s = std::strtod(v, &end);
    if (*end != '\0' || !(s > 0) || s > 1e6)
      throw config_error("STRATA_DIST_FAILURE_GRACE=\"" + std::string(v) +
                         "\": expected seconds, a number above 0 and at most 1e6");
    return std::chrono::duration<double>(s);
  }();
  return grace;
}

void abort_job(std::string const& why) {
  std::fprintf(stderr, "%s; ending the job with MPI_Abort so that it does not hang\n", why.c_str());
  std::fflush(stderr);
  // On the MPI thread: under a funneled thread level no other thread may call MPI. A
  // caller holding the progress token (the MPI thread in its round, e.g. a watch) may
  // call it itself; posting from there would queue the call behind this very round.
  if (mpi_thread::holds_token())
    MPI_Abort(MPI_COMM_WORLD, 1);
  else
    mpi_thread::get().post([] { MPI_Abort(MPI_COMM_WORLD, 1); });
  std::this_thread::sleep_for(std::chrono::seconds(10));
  std::_Exit(1);  // MPI_Abort did not end this process: end it without MPI
}

}  // namespace detail

namespace {

[[noreturn]] void abort_failed_rank(int rank, int size) {
  char grace[32];
  std::snprintf(grace, sizeof grace, "%g", detail::failure_grace().count());
  detail::abort_job("strata::dist::runtime: rank " + std::to_string(rank) + " of " +
                    std::to_string(size) +
                    " left the runtime by an exception and the other ranks did not reach its "
                    "end within " +
                    grace +
                    " s (STRATA_DIST_FAILURE_GRACE; they wait in a collective or an operation "
                    "this rank no longer joins)");
}

}  // namespace

runtime::~runtime() {
  using namespace detail;
  if (!impl_ || !impl_->eng) return;
  auto& e = *impl_->eng;
  bool const failing = std::uncaught_exceptions() > impl_->unwinding_at_start;
  auto const start = std::chrono::steady_clock::now();
  auto const past_grace = [&] {
    return failing && std::chrono::steady_clock::now() - start > detail::failure_grace();
  };
  // 1. This rank's own operations (their replies come from ranks that still serve).
  auto last_note = start;
  while (e.outstanding() > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (past_grace()) abort_failed_rank(impl_->rank, impl_->size);
    if (std::chrono::steady_clock::now() - last_note > std::chrono::seconds(10)) {
      last_note = std::chrono::steady_clock::now();
      strata::detail::log(strata::detail::log_level::info,
                          "strata::dist::runtime: still waiting for " +
                              std::to_string(e.outstanding()) +
                              " remote operations of this rank before shutting down");
    }
  }
  // 2. Every rank arrives (serving the others meanwhile), then the communicators go.
  std::promise<void> closed;
  auto f = closed.get_future();
  auto& thread = mpi_thread::get();
  thread.post([&] {
    e.shut_down([&] {
      thread.detach();
      e.free_communicators();
      closed.set_value();
    });
  });
  if (failing) {
    auto const left = detail::failure_grace() - (std::chrono::steady_clock::now() - start);
    if (f.wait_for(std::max(left, decltype(left)::zero())) != std::future_status::ready)
      abort_failed_rank(impl_->rank, impl_->size);
  }
  f.wait();
  // One more round trip through the MPI thread: the round that closed has ended, and
  // the thread no longer looks at this engine.
  thread.run_sync([] {});
  live.store(nullptr);
}

int runtime::rank() const noexcept {
  return impl_->rank;
}
int runtime::size() const noexcept {
  return impl_->size;
}
place runtime::cluster() const {
  return impl_->cluster;
}

place runtime::rank_place(int r) const {
  if (r < 0 || r >= impl_->size)
    throw invalid_argument("dist::runtime::rank_place: rank " + std::to_string(r) +
                           " is out of range; expected 0.." + std::to_string(impl_->size - 1) +
                           " (" + std::to_string(impl_->size) + " ranks)");
  return impl_->rank_places[static_cast<std::size_t>(r)];
}

place runtime::to_local(place const& p) const {
  int r = rank_of(p, "dist::runtime::to_local");
  if (r != impl_->rank)
    throw invalid_argument("dist::runtime::to_local: place '" + p.path() + "' is on rank " +
                           std::to_string(r) + ", not on this rank (" +
                           std::to_string(impl_->rank) + ")");
  auto full = p.unsliced();
  auto here_place = impl_->rank_places[static_cast<std::size_t>(impl_->rank)];
  if (full == here_place) return impl_->local->machine();
  auto machine = here_place.children().front();
  auto mine = machine.descendants();
  for (std::size_t i = 0; i < mine.size(); ++i)
    if (mine[i] == full) return impl_->local_places.at(i);
  throw invalid_argument("dist::runtime::to_local: place '" + p.path() +
                         "' was not found under this rank's machine");
}

strata::runtime& runtime::local() const noexcept {
  return *impl_->local;
}
team const& runtime::world() const noexcept {
  return impl_->world;
}

namespace detail {

team control_team(team const& t) {
  auto& s = *t.state();
  std::lock_guard lock(s.control_mutex);
  if (!s.control) s.control = s.owner->make_team(s.ranks);
  return runtime_impl::make(s.control);
}

}  // namespace detail

team runtime::make_team(std::vector<int> world_ranks) const {
  return detail::runtime_impl::make(impl_->eng->make_team(std::move(world_ranks)));
}

std::string runtime::thread_level() const {
  switch (impl_->level) {
    case MPI_THREAD_MULTIPLE:
      return "multiple";
    case MPI_THREAD_SERIALIZED:
      return "serialized";
    case MPI_THREAD_FUNNELED:
      return "funneled";
    default:
      return "single";
  }
}

std::string runtime::mpi_version() const {
  return impl_->version;
}

runtime& runtime::current() {
  auto* rt = detail::live.load();
  if (!rt)
    throw error(
        "no strata::dist::runtime is alive; expected one created in main "
        "(strata::dist::runtime rt(argc, argv);)");
  return *rt;
}

bool runtime::active() noexcept {
  return detail::live.load() != nullptr;
}

int rank_of(place const& p, char const* operation) {
  auto& rt = runtime::current();
  if (!p.valid())
    throw invalid_argument(std::string(operation) +
                           ": the place is empty (default-constructed); expected a place of "
                           "dist::runtime::cluster()");
  if (!p.same_machine(rt.impl().cluster))  // (no copy of the cluster place per call)
    throw invalid_argument(std::string(operation) + ": place '" + p.path() +
                           "' is not part of the cluster tree; expected a place from "
                           "dist::runtime::cluster() or rank_place(r)");
  auto const& info = p.info();
  if (info.type == place_type::cluster)
    throw invalid_argument(std::string(operation) +
                           ": the cluster root spans every rank; expected a rank place or a "
                           "place below one");
  return info.rank;
}

bool launched_by_mpi() noexcept {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

}  // namespace strata::dist
