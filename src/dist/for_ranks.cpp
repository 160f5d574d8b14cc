// dist::for_ranks's watch on members whose bodies end first (include/strata/dist/thread_array.hpp,
// docs/dist.md "mpi thread arrays"). A member whose body has ended (returned or failed) can
// no longer join a collective of the team; one that the others have started waits forever,
// and MPI cannot cancel it. The member that leaves tells the others how many collectives of
// the team it started (the team's collective places, reserve_collective); a member that has
// started more, and whose own body does not end within the failure grace, waits in one that
// will never complete: it ends the job with a message naming both, instead of hanging. (A
// member whose body failed ends the job itself, with its error: thread_array.hpp.)
#include <strata/dist.hpp>

#include "dist/engine.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace strata::dist::detail {

namespace {
// The notices' tags on the control team's communicator, whose only other traffic is the
// syncs' collectives (they never match a point-to-point message): one per for_ranks call,
// cycling through 1024 of them, so that calls nested in each other's bodies (up to that
// depth) keep their notices apart.
constexpr int first_notice_tag = 32767 - 1023;
constexpr std::uint64_t notice_tags = 1024;
constexpr std::uint64_t none = std::numeric_limits<std::uint64_t>::max();
}  // namespace

struct departures::state : std::enable_shared_from_this<departures::state> {
  std::shared_ptr<team_state> members;  // the body's team: its collective places
  team control;
  int me = 0;
  // Per member: the places it had started when its body ended, and whether it failed.
  std::vector<std::array<std::uint64_t, 2>> inbox;
  std::array<std::uint64_t, 2> outbox{};
  int tag = first_notice_tag;
  std::vector<event> messages;  // the receives, then the sends (finish waits for them)

  std::mutex mutex;
  bool ended = false;     // this member's body has ended: nothing more to watch
  bool watching = false;  // a watch runs on the progress engine
  std::uint64_t limit = none;
  int who = -1;
  std::optional<std::chrono::steady_clock::time_point> since;  // started beyond `limit`

  void arrived(int from);
  bool check();
};

void departures::state::arrived(int from) {
  auto const [count, failed] = inbox[static_cast<std::size_t>(from)];
  {
    std::lock_guard lock(mutex);
    if (count == none) return;  // the receive failed; finish() reports it
    // A member whose body failed ends the job itself after the grace, with its own error
    // (thread_array.hpp, state_round): aborting here too would race it and could cut its
    // message off.
    if (failed) return;
    if (count < limit) {
      limit = count;
      who = from;
    }
    if (ended || watching) return;
    watching = true;
  }
  // Polled by the progress engine until this member's body ends (a continuation runs
  // where the receive completed, which may hold the progress token: watch() queues).
  // Outside the lock: a post may run queued operations, whose events may complete.
  current_engine().watch([self = shared_from_this()] { return self->check(); });
}

bool departures::state::check() {
  std::unique_lock lock(mutex);
  if (ended) return true;
  auto const started = members->next_place.load();
  if (started <= limit) {
    since.reset();
    return false;
  }
  auto const now = std::chrono::steady_clock::now();
  if (!since) since = now;
  if (now - *since < failure_grace()) return false;
  char grace[32];
  std::snprintf(grace, sizeof grace, "%g", failure_grace().count());
  std::string const why =
      "dist::for_ranks: process " + std::to_string(who) +
      " of the mpi thread array returned from its body after starting " + std::to_string(limit) +
      " collectives of the team, and process " + std::to_string(me) + " has started " +
      std::to_string(started) +
      " (one that process will never join) and has not ended its body within " + grace +
      " s (STRATA_DIST_FAILURE_GRACE); every process must call the same collectives, and "
      "MPI cannot cancel one";
  lock.unlock();
  abort_job(why);
}

departures::departures(team const& members, team const& control) : s_(std::make_shared<state>()) {
  auto& s = *s_;
  s.members = members.state();
  s.control = control;
  s.me = control.rank();
  s.tag =
      first_notice_tag + static_cast<int>(s.members->for_ranks_calls.fetch_add(1) % notice_tags);
  auto const n = static_cast<std::size_t>(control.size());
  s.inbox.assign(n, {none, 0});
  for (int r = 0; r < control.size(); ++r) {
    if (r == s.me) continue;
    auto ev =
        start_point_to_point(control, false, r, s.tag, s.inbox[static_cast<std::size_t>(r)].data(),
                             sizeof(s.inbox[0]), "dist::for_ranks");
    // The continuation holds the state, so the buffer outlives the receive even if this
    // object does not.
    ev.then([self = s_, r] { self->arrived(r); });
    s.messages.push_back(std::move(ev));
  }
}

departures::~departures() = default;

void departures::leave(bool failed) {
  auto& s = *s_;
  {
    std::lock_guard lock(s.mutex);
    s.ended = true;
  }
  s.outbox = {s.members->next_place.load(), failed ? 1u : 0u};
  for (int r = 0; r < s.control.size(); ++r) {
    if (r == s.me) continue;
    auto ev = start_point_to_point(s.control, true, r, s.tag, s.outbox.data(), sizeof(s.outbox),
                                   "dist::for_ranks");
    // The MPI thread reads `outbox` when it starts the send: the state lives until then
    // even if for_ranks leaves by an exception before finish().
    ev.then([self = s_] {});
    s.messages.push_back(std::move(ev));
  }
}

void departures::finish() {
  // Every member sent its notice before its first round, so after the rounds every
  // receive completes soon; then no notice is left to meet the next for_ranks's receives.
  for (auto& ev : s_->messages) ev.wait();
  s_->messages.clear();
}

}  // namespace strata::dist::detail
