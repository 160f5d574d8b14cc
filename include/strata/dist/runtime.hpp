// The distributed runtime: every MPI process is a place with a rank (Phalanx §IV-C).
//
//   int main(int argc, char** argv) {
//     strata::dist::runtime rt(argc, argv);   // MPI + this rank's strata::runtime
//     strata::place cluster = rt.cluster();   // one child per rank, each a whole machine
//     auto f = strata::dist::async(rt.rank_place(1), add{}, 2, 3);
//     int five = f.get();
//   }
//
// A `dist::runtime` is a layer over a `strata::runtime`, not a subclass: the core library
// knows nothing of MPI (it builds and runs without it), and a program that already has a
// `strata::runtime` (the `strata bench` harness, a library) attaches to it. MPI is
// initialized once per process by Strata's progress thread and finalized at exit, so
// runtimes may come and go (one at a time, collectively on every rank). See docs/dist.md.
#pragma once

#include <strata/error.hpp>
#include <strata/machine/place.hpp>
#include <strata/runtime.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace strata::dist {

namespace detail {
struct team_state;
struct runtime_impl;
}  // namespace detail

/// An exception thrown by a remote task or operation, rethrown where it is waited for.
class remote_error : public error {
 public:
  remote_error(int rank, std::string const& what)
      : error("on rank " + std::to_string(rank) + ": " + what), rank_(rank) {}
  /// The rank where the failure happened.
  int rank() const noexcept { return rank_; }

 private:
  int rank_;
};

/// A set of ranks that run collectives together (an MPI communicator). Team ranks are
/// numbered 0..size()-1 in the order of `ranks()` (ascending world ranks).
class team {
 public:
  team() = default;
  /// Members, as world ranks, ascending.
  std::vector<int> const& ranks() const;
  int size() const { return static_cast<int>(ranks().size()); }
  /// This process's rank in the team, or -1 when it is not a member.
  int rank() const;
  bool contains_world_rank(int world_rank) const;
  /// The world rank of team rank `r` (throws invalid_argument when out of range).
  int world_rank(int r) const;
  bool valid() const noexcept { return state_ != nullptr; }
  /// The implementation's state (what collectives run on).
  std::shared_ptr<detail::team_state> const& state() const noexcept { return state_; }

 private:
  friend struct detail::runtime_impl;
  explicit team(std::shared_ptr<detail::team_state> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::team_state> state_;
};

class runtime {
 public:
  /// Starts MPI (if nobody has) and this rank's own `strata::runtime` (consuming Strata's
  /// flags from argv, see strata::runtime). Collective: every rank must construct it.
  runtime(int& argc, char** argv, runtime_options const& options = {});
  explicit runtime(runtime_options const& options = {});
  /// Attaches to a `strata::runtime` that is already alive in this process (it must
  /// outlive this object). Collective.
  explicit runtime(strata::runtime& local);
  /// Waits for this rank's outstanding remote operations, then for every rank to arrive
  /// (serving their requests meanwhile), then releases the communicators. Collective.
  /// A rank that leaves the runtime's scope by an exception waits for the others (10 s,
  /// STRATA_DIST_FAILURE_GRACE);
  /// if they have not all arrived by then (they wait in something this rank left), it
  /// says so on stderr and ends the job with MPI_Abort rather than hang every rank.
  /// Print the exception's message before the runtime ends, or it is lost with the job.
  ~runtime();

  runtime(runtime const&) = delete;
  runtime& operator=(runtime const&) = delete;

  int rank() const noexcept;
  int size() const noexcept;
  /// The cluster place tree: the root (type cluster) has one child of type `rank` per
  /// process, holding a copy of that process's machine tree; every place in it has
  /// `info().rank` set to its process. Slices work as on any tree.
  place cluster() const;
  /// The child of the cluster root for world rank `r` (invalid_argument if out of range).
  place rank_place(int r) const;
  /// This process's rank place.
  place here() const { return rank_place(rank()); }
  /// A place of the cluster tree under this process's rank, as the same place of the
  /// local machine (what launches and allocations take). Throws invalid_argument for a
  /// place of another rank or another tree.
  place to_local(place const& p) const;

  /// This process's own runtime and machine.
  strata::runtime& local() const noexcept;
  place machine() const { return local().machine(); }

  /// Every rank.
  team const& world() const noexcept;
  /// A team of the given world ranks (any order, no duplicates). Collective over the
  /// members only; non-members must not call it.
  team make_team(std::vector<int> world_ranks) const;

  /// The MPI thread level obtained: "multiple", "serialized", "funneled" or "single".
  std::string thread_level() const;
  /// The MPI library's version string.
  std::string mpi_version() const;

  static runtime& current();
  static bool active() noexcept;

  detail::runtime_impl& impl() const noexcept { return *impl_; }

 private:
  void start();
  std::unique_ptr<strata::runtime> owned_;
  std::unique_ptr<detail::runtime_impl> impl_;
};

namespace detail {
/// How long a rank whose failure others cannot learn of waits for them before it ends the
/// job (STRATA_DIST_FAILURE_GRACE, in seconds; 10 by default): ~runtime of a rank leaving
/// by an exception, and dist::for_ranks's failed member (docs/dist.md "When a rank fails").
std::chrono::duration<double> failure_grace();
/// Writes `why` to stderr and ends every rank of the job (MPI_Abort).
[[noreturn]] void abort_job(std::string const& why);
/// A team of the same members on a communicator of its own, made by the first call for
/// `t` (collective over its members) and kept with it: dist::for_ranks's syncs.
team control_team(team const& t);
}  // namespace detail

/// The world rank a place of the cluster tree belongs to; throws invalid_argument for a
/// place that is not part of the live dist::runtime's cluster, naming `operation`.
int rank_of(place const& p, char const* operation = "dist");

/// Whether this process was started by mpiexec/mpirun (so a dist::runtime has peers).
bool launched_by_mpi() noexcept;

}  // namespace strata::dist
