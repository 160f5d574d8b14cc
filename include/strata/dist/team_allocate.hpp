// Collective allocations: Phalanx's `who` domain for allocate/deallocate (§III-C: "the who
// parameter informs the runtime about collective allocations performed by a group of
// threads versus allocations performed by a single thread"). Here the group is a team of
// ranks; dist::allocate(place, n) is the single-thread form.
//
//   auto t = rt.world();
//   // every member calls it; the memory is made once, on rank 0's host, and every
//   // member gets the same pointer:
//   auto shared = dist::allocate<double>(t, rt.rank_place(0), n).get();
//   // every member allocates n on its own rank and gets every member's pointer:
//   auto parts = dist::allocate_each<double>(t, n).get();   // parts[i] on team rank i
//   ...
//   dist::deallocate(t, shared).wait();     // collective: freed once all have called
//   dist::deallocate_each(t, parts).wait();
//
// Like every collective, members call these in the same order as their other collectives
// on the team (MPI's rule; see collectives.hpp).
#pragma once

#include <strata/dist/agreement.hpp>
#include <strata/dist/collectives.hpp>
#include <strata/dist/global_ptr.hpp>
#include <strata/dist/runtime.hpp>
#include <strata/error.hpp>
#include <strata/exec/event.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace strata::dist {

namespace detail {

/// A collective's result, filled before `done` completes: what team futures hand out.
template <class R>
struct team_result {
  R value{};
};

/// The member of `who` that makes (and frees) a collective allocation on `owner_world`'s
/// rank: that rank if it is a member, else team rank 0.
inline int allocating_member(team const& who, int owner_world) {
  for (int r = 0; r < who.size(); ++r)
    if (who.world_rank(r) == owner_world) return r;
  return 0;
}

}  // namespace detail

/// The value of a collective operation that every member receives.
template <class R>
class team_future {
 public:
  team_future(strata::event done, std::shared_ptr<detail::team_result<R>> r)
      : done_(std::move(done)), result_(std::move(r)) {}
  strata::event const& event() const noexcept { return done_; }
  bool ready() const noexcept { return done_.ready(); }
  void wait() const { done_.wait(); }
  /// Waits and returns the value (rethrows the operation's failure).
  R const& get() const {
    done_.wait();
    return result_->value;
  }

 private:
  strata::event done_;
  std::shared_ptr<detail::team_result<R>> result_;
};

/// Collective over `who`: `n` elements on the rank of `where` (host or device memory, as
/// dist::allocate), made once by `who`'s member on that rank if it is one, else by team
/// rank 0, and the same pointer handed to every member. Every member passes the same
/// `where` and `n`.
template <class T>
team_future<global_ptr<T>> allocate(team const& who, place const& where, std::size_t n) {
  static_assert(std::is_trivially_copyable_v<T>, "dist::allocate: T must be trivially copyable");
  detail::check_member(who, "dist::allocate(team, ...)");
  // Every member (all pass the same n) refuses a size that overflows, before the
  // broadcast: not the maker alone, which would leave the others waiting in it.
  detail::check_allocation_size(detail::bytes_for<T>(n, "dist::allocate(team, ...)"),
                                "dist::allocate(team, ...)");
  int const root = detail::allocating_member(who, rank_of(where, "dist::allocate(team, ...)"));
  auto result = std::make_shared<detail::team_result<global_ptr<T>>>();
  // The broadcast takes its place in the team's order now (members may call other
  // collectives before the root's allocation has come back).
  auto const slot = detail::reserve_collective(who);
  auto broadcast_at = [who, result, root, slot] {
    return detail::start_collective(who,
                                    {.kind = detail::collective::broadcast,
                                     .in = &result->value,
                                     .out = &result->value,
                                     .count = 1,
                                     .elem_size = sizeof(global_ptr<T>),
                                     .root = root},
                                    slot);
  };
  if (who.rank() != root) {
    auto received = detail::start_reserved_after(strata::event::completed(), broadcast_at);
    return {detail::start_after_event(received,
                                      [result, root] {
                                        if (result->value) return strata::event::completed();
                                        return strata::event::failed(std::make_exception_ptr(error(
                                            "dist::allocate(team, ...): the allocation made by "
                                            "team rank " +
                                            std::to_string(root) + " failed there")));
                                      }),
            result};
  }
  auto made = dist::allocate<T>(where, n);
  // The root fills the value before the broadcast sends it; if the allocation failed,
  // the broadcast still runs (the others wait in it) with a null pointer: the root's
  // event carries the failure, the others' a clear error naming the root.
  auto filled = strata::event::pending();
  made.event().then([made, result, filled] {
    if (!made.event().error()) result->value = made.get();
    filled.complete(made.event().error());
  });
  return {detail::start_reserved_after(filled, broadcast_at), result};
}

/// Collective over `who`: every member allocates `n` elements on its own rank (host
/// memory) and gets every member's pointer, in team order (a symmetric allocation).
template <class T>
team_future<std::vector<global_ptr<T>>> allocate_each(team const& who, std::size_t n) {
  static_assert(std::is_trivially_copyable_v<T>,
                "dist::allocate_each: T must be trivially copyable");
  detail::check_member(who, "dist::allocate_each");
  // A member whose allocation fails must still take part in the all-gather (the others
  // wait in it): its outcome travels with the pointers, and then every member fails
  // with the same error naming the first member that failed, and frees its own part.
  struct part {
    global_ptr<T> p;
    detail::local_outcome outcome;
  };
  auto mine = std::make_shared<part>();
  mine->outcome = detail::outcome_of([&] { mine->p = detail::allocate_fn<T>{n}(); });
  auto parts = std::make_shared<std::vector<part>>(static_cast<std::size_t>(who.size()));
  auto gathered = all_gather(who, std::span<part const>(mine.get(), 1), std::span<part>(*parts));
  auto result = std::make_shared<detail::team_result<std::vector<global_ptr<T>>>>();
  // `mine` and `parts` must outlive the collective: kept by the continuation.
  auto done = detail::start_after_event(gathered, [mine, parts, result] {
    try {
      detail::agree("dist::allocate_each", static_cast<int>(parts->size()),
                    [&](int r) -> detail::local_outcome const& {
                      return (*parts)[static_cast<std::size_t>(r)].outcome;
                    });
    } catch (...) {
      auto const failure = std::current_exception();
      try {
        if (mine->p) detail::free_segment(mine->p.address());
      } catch (...) {  // the agreed failure is the one to report
      }
      return strata::event::failed(failure);
    }
    result->value.reserve(parts->size());
    for (auto const& x : *parts) result->value.push_back(x.p);
    return strata::event::completed();
  });
  return {done, result};
}

/// Collective over `who`: frees memory from allocate(who, ...) once every member has
/// called it (no member may use it after its own call). Every member passes the same
/// pointer.
template <class T>
strata::event deallocate(team const& who, global_ptr<T> p) {
  detail::check_member(who, "dist::deallocate(team, ...)");
  auto all_done = barrier(who);
  if (!p || who.rank() != detail::allocating_member(who, p.rank())) return all_done;
  return detail::start_after_event(all_done, [p] { return dist::deallocate(p); });
}

/// Collective over `who`: frees memory from allocate_each once every member has called
/// it; each member frees its own part.
template <class T>
strata::event deallocate_each(team const& who, std::vector<global_ptr<T>> const& parts) {
  detail::check_member(who, "dist::deallocate_each");
  if (parts.size() != static_cast<std::size_t>(who.size()))
    detail::size_mismatch("dist::deallocate_each",
                          "the team has " + std::to_string(who.size()) +
                              " members; expected one pointer per member, got " +
                              std::to_string(parts.size()));
  auto all_done = barrier(who);
  auto const mine = parts[static_cast<std::size_t>(who.rank())];
  return detail::start_after_event(all_done, [mine] { return dist::deallocate(mine); });
}

}  // namespace strata::dist
