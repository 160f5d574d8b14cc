// mpi thread arrays (PARRAY §4, Listing 3's `for i mpi n`, §4.8 `tid_mpi`, §4.10 `sync`):
// the processes of a team as an array with a dimension tree. PARRAY creates the processes
// from a thread; here they already run (mpiexec), so `for P { ... }` is collective: every
// member of the team calls
//
//   dist::for_ranks(team, thread_array<thread_kind::mpi>{dims{2, 2}}, [&](auto const& p) {
//     p.tid(); p.tid(0); p.sync();
//   });
//
// and runs the body once as the process whose tid is its team rank (the type's size must
// be the team's). `sync()` meets every process of the array. `sync(path)` meets them too:
// a sub-dimension's groups are not communicators of their own, so a group sync is the
// whole array's (more synchronization than PARRAY asks, never less).
//
// Nothing hangs: each sync is one all-reduce of the members' states (arrived, returned,
// failed), on a communicator of its own (the body's collectives never meet it), and a
// member whose body has ended keeps taking part in rounds until every member's has. A
// process that returns while others wait in a sync, or one that throws, ends everybody's
// body at their next sync: every member's for_ranks throws (the failing process its own
// exception, the others an error naming that process and its message). A body may use
// the team's collectives too, but a process that throws between them leaves the others
// inside one, which MPI cannot cancel: if they reach no sync within the failure grace
// (runtime.hpp), the failed process ends the job with a message instead of hanging. A
// process that returns tells the others how many of the team's collectives it started:
// one that started more and does not end its body within the grace waits in a collective
// nobody will complete, and ends the job with a message naming both.
#pragma once

#include <strata/dist/collectives.hpp>
#include <strata/dist/runtime.hpp>
#include <strata/layout/thread_type.hpp>

#include <algorithm>
#include <array>
#include <climits>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace strata::dist {

class rank_context;

namespace detail {

/// What a member brings to a round: still in the body at a sync, or its body has ended.
enum rank_state : int { at_sync = 0, returned = 1, failed = 2 };

/// One round: every member's state in; the largest and the smallest state out. A member
/// whose body failed (`failure`: its message) cannot tell whether the others are still
/// computing or wait in a collective its body left: it waits for them until the failure
/// grace has passed, then ends the job rather than hang (runtime.hpp).
inline std::pair<int, int> state_round(team const& t, int mine,
                                       std::string const* failure = nullptr) {
  std::array<int, 2> in{mine, -mine}, out{};
  auto done = all_reduce(t, std::span<int const>(in), std::span<int>(out), reduce_op::max);
  if (failure && !done.wait_for(failure_grace())) {
    char grace[32];
    std::snprintf(grace, sizeof grace, "%g", failure_grace().count());
    abort_job("dist::for_ranks: the body of process " + std::to_string(t.rank()) +
              " of the mpi thread array failed (" + *failure +
              ") and the other processes did not reach a sync or the end of theirs within " +
              grace +
              " s (STRATA_DIST_FAILURE_GRACE): they may wait in a collective that body left, "
              "which MPI cannot cancel");
  }
  done.wait();
  return {out[0], -out[1]};
}

/// The message of a caught exception.
inline std::string what_of(std::exception_ptr const& e) {
  try {
    std::rethrow_exception(e);
  } catch (std::exception const& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

/// Raised inside a body whose sync learned that another member's body has ended: by
/// failing (`cancelled`: that failure is the one reported) or by returning too early (a
/// mistake of its own, reported).
struct rank_array_ended : error {
  rank_array_ended(std::string const& what, bool c) : error(what), cancelled(c) {}
  bool cancelled;
};

/// for_ranks's watch on members whose bodies end before this one's (src/dist/for_ranks.cpp):
/// a member that leaves its body tells the others how many collectives of the team it has
/// started; a member that has started more, and does not end its own body within the
/// failure grace, waits in one the other will never join and ends the job with a message.
class departures {
 public:
  departures(team const& members, team const& control);
  ~departures();
  departures(departures const&) = delete;
  departures& operator=(departures const&) = delete;
  /// This member's body has ended (`failed`: by an exception): tells the others.
  void leave(bool failed);
  /// After the rounds: waits until every member's notice has arrived and ours were sent.
  void finish();

 private:
  struct state;
  std::shared_ptr<state> s_;
};

}  // namespace detail

/// A process of an mpi thread array, as its body sees it.
class rank_context {
 public:
  rank_context(team const& t, thread_tree const& tree)
      : team_(t), control_(detail::control_team(t)), tree_(tree) {}

  /// The process's id in the array (its team rank; PARRAY `tid`).
  index_t tid() const { return team_.rank(); }
  /// Its index in a sub-dimension: `tid(0, 1)` is PARRAY's `tid_0_1`.
  template <std::integral... I>
  requires(sizeof...(I) >= 1) index_t tid(I... path)
  const { return tree_.index(node(path...), tid()); }
  /// Processes in the array, or in a sub-dimension.
  template <std::integral... I>
  index_t size(I... path) const {
    return tree_.nodes[node(path...)].size;
  }
  /// Waits until every process of the array has arrived (PARRAY `sync`).
  void sync() const {
    auto [most, least] = detail::state_round(control_, detail::at_sync);
    (void)least;
    if (most == detail::failed)
      throw detail::rank_array_ended(
          "sync: another process of the mpi thread array failed (its error is reported)", true);
    if (most == detail::returned)
      throw detail::rank_array_ended(
          "sync: a process of the mpi thread array returned without reaching this sync; every "
          "process must call the same syncs (PARRAY §4.10; with MPI's barrier it would hang)",
          false);
  }
  /// PARRAY `sync_1`: here the whole array's sync (see the header's comment).
  template <std::integral... I>
  requires(sizeof...(I) >= 1) void sync(I... path) const {
    (void)node(path...);
    sync();
  }
  team const& members() const { return team_; }
  /// The team the syncs run on (detail::control_team of members()).
  team const& control() const { return control_; }

 private:
  template <class... I>
  int node(I... path) const {
    if constexpr (sizeof...(I) == 0) {
      return 0;
    } else {
      int const p[] = {static_cast<int>(path)...};
      int const n = tree_.find(p, static_cast<int>(sizeof...(I)));
      if (n < 0)
        throw invalid_argument(
            "mpi thread array: no such sub-dimension; expected a path inside "
            "the type (tid(0, 1) is PARRAY's tid_0_1)");
      return n;
    }
  }

  team team_;
  team control_;  // the syncs' rounds: never matched against the body's own collectives
  thread_tree tree_;
};

/// PARRAY's `for P { ... }` for an mpi thread array: collective over `t`, whose size must
/// be P's; each member runs `body(rank_context const&)` once. Throws on every member if any
/// member's body failed or the members' syncs did not match.
template <class F>
requires std::invocable<F&, rank_context const&>
void for_ranks(team const& t, thread_array<thread_kind::mpi> const& threads, F&& body) {
  strata::dist::detail::check_member(t, "dist::for_ranks");
  // The members compare the array's sizes before any body runs (a body may send): a
  // member with a wrong size that threw alone would leave the others waiting in their
  // first sync. One all-gather of the sizes; every member then throws the same error,
  // naming the first member whose size is not the team's.
  {
    std::int64_t const mine = threads.size();
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(t.size()));
    all_gather(t, std::span<std::int64_t const>(&mine, 1), std::span<std::int64_t>(sizes)).wait();
    for (int r = 0; r < t.size(); ++r)
      if (sizes[static_cast<std::size_t>(r)] != t.size())
        throw invalid_argument(
            "dist::for_ranks: team rank " + std::to_string(r) + " passed an mpi thread array of " +
            std::to_string(sizes[static_cast<std::size_t>(r)]) + " processes and the team has " +
            std::to_string(t.size()) + " members; expected equal sizes on every member");
  }
  rank_context const ctx(t, threads.tree());
  detail::departures gone(t, ctx.control());
  std::exception_ptr mine;
  int state = detail::returned;
  bool cancelled = false;  // ended by another member's failure: not the one to report
  try {
    body(ctx);
  } catch (detail::rank_array_ended const& e) {
    mine = std::current_exception();
    state = detail::failed;
    cancelled = e.cancelled;
  } catch (...) {
    mine = std::current_exception();
    state = detail::failed;
  }
  // Rounds until every member's body has ended (a member still in the body is in a sync,
  // which this round ends with rank_array_ended). On the control team, as the syncs: the
  // body may have left the others in a collective of `t` (see state_round).
  gone.leave(state == detail::failed);
  auto const& control = ctx.control();
  bool const failed_here = state == detail::failed && !cancelled;
  std::string const failure = failed_here ? detail::what_of(mine) : "";
  int most = state;
  for (;;) {
    auto [hi, lo] = detail::state_round(control, state, failed_here ? &failure : nullptr);
    most = std::max(most, hi);
    if (lo >= detail::returned) break;
  }
  gone.finish();
  if (most < detail::failed) return;
  // The lowest failing member tells everybody what went wrong.
  int const me = t.rank();
  std::array<int, 1> candidate{state == detail::failed && !cancelled ? me : INT_MAX}, first{};
  all_reduce(control, std::span<int const>(candidate), std::span<int>(first), reduce_op::min)
      .wait();
  std::array<char, 512> text{};
  if (first[0] == INT_MAX) first[0] = 0;  // cannot happen: a cancellation has a cause
  if (me == first[0] && mine) {
    std::string const what = detail::what_of(mine);
    std::strncpy(text.data(), what.c_str(), text.size() - 1);
  }
  broadcast(control, std::span<char>(text), first[0]).wait();
  if (mine && !cancelled) std::rethrow_exception(mine);
  throw error("dist::for_ranks: process " + std::to_string(first[0]) +
              " of the mpi thread array failed: " + std::string(text.data()));
}

}  // namespace strata::dist
