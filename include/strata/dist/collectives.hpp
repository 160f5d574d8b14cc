// Team collectives (Phalanx §V-B and future work: broadcast and reduce; PARRAY §4.12-4.16
// scatter / gather / all-to-all), all non-blocking: each returns an event that the
// progress engine completes (MPI's non-blocking collectives underneath).
//
//   auto t = rt.world();
//   std::vector<double> part(k), all(k * t.size());
//   dist::all_gather(t, std::span<double const>(part), std::span(all)).wait();
//
// As in MPI, every member calls the same collectives in the same order (from one thread
// per rank, or ordered by the caller), with matching sizes; buffers stay valid and
// untouched until the event completes. Sizes that can be checked on one rank (a root's
// buffer against the team size, in against out) are, with invalid_argument; roots are
// team ranks. Counts that differ between ranks are not detectable without an extra
// message and are an error of the program (MPI reports some as truncation).
#pragma once

#include <strata/dist/global_ptr.hpp>
#include <strata/dist/runtime.hpp>
#include <strata/exec/event.hpp>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace strata::dist {

enum class reduce_op : std::uint8_t { sum, prod, min, max };

namespace detail {

enum class collective : std::uint8_t {
  barrier,
  broadcast,
  reduce,
  all_reduce,
  gather,
  scatter,
  all_gather,
  all_to_all,
  all_to_all_v
};

/// One collective on the team: `count` elements of `type` (bytes for `scalar` = none);
/// `in`/`out` as MPI's send/receive buffers for that operation.
struct collective_args {
  collective kind;
  void const* in = nullptr;
  void* out = nullptr;
  std::size_t count = 0;      // elements per rank (per pair for all_to_all)
  std::size_t elem_size = 1;  // bytes per element
  bool typed = false;         // reductions: `type` applies
  scalar type = scalar::i32;
  reduce_op op = reduce_op::sum;
  int root = 0;
  // all_to_all_v: send counts, send displacements, receive counts, receive displacements
  // (team size each, in elements), kept alive until the operation completes (MPI reads
  // them until then).
  std::shared_ptr<std::vector<int> const> counts;
};
event start_collective(team const& t, collective_args const& a);
/// A place in the team's order of collectives, taken now for a collective started later
/// (from a callback): MPI needs every member to start a communicator's collectives in the
/// same order, and callbacks run in different orders on different ranks. The engine starts
/// the team's collectives in the order of their places, holding back later ones until
/// the earlier places are started; so a reserved place must be started exactly once.
std::uint64_t reserve_collective(team const& t);
/// Starts a collective at the place `reserve_collective` gave.
event start_collective(team const& t, collective_args const& a, std::uint64_t place);
void check_member(team const& t, char const* operation);
void check_root(team const& t, int root, char const* operation);
[[noreturn]] void size_mismatch(char const* operation, std::string const& what);

/// Runs `start(error)` (which returns an event) once `dep` has completed, with dep's
/// error (null when it succeeded), and completes the returned event with the started
/// one's outcome.
template <class F>
strata::event start_when_done(strata::event const& dep, F start) {
  if (dep.ready()) return start(dep.error());
  auto out = strata::event::pending();
  dep.then([dep, out, start = std::move(start)]() mutable {
    try {
      auto started = start(dep.error());
      started.then([started, out] { out.complete(started.error()); });
    } catch (...) {
      out.complete(std::current_exception());
    }
  });
  return out;
}

/// Runs `start()` (which returns an event) once `dep` has completed, and completes the
/// returned event with the started one's outcome; a failed `dep` fails it without
/// starting anything.
template <class F>
strata::event start_after_event(strata::event const& dep, F start) {
  return start_when_done(dep, [start = std::move(start)](std::exception_ptr failed) mutable {
    return failed ? strata::event::failed(failed) : start();
  });
}

/// start_after_event for a collective whose place in the team's order was reserved:
/// `start()` runs once `dep` has completed, failed or not (the other members wait in the
/// collective for this one; a failure is reported after it), and the returned event
/// completes with dep's error if any, else the collective's outcome.
template <class F>
strata::event start_reserved_after(strata::event const& dep, F start) {
  auto out = strata::event::pending();
  dep.then([dep, out, start = std::move(start)]() mutable {
    auto const before = dep.error();
    try {
      auto started = start();
      started.then([started, out, before] { out.complete(before ? before : started.error()); });
    } catch (...) {
      out.complete(before ? before : std::current_exception());
    }
  });
  return out;
}

template <class T>
constexpr void check_element() {
  static_assert(std::is_trivially_copyable_v<T>,
                "dist collectives: elements must be trivially copyable");
}

}  // namespace detail

/// Completes when every member has entered the barrier.
strata::event barrier(team const& t);

/// `data` of team rank `root` lands in `data` of every member.
template <class T>
strata::event broadcast(team const& t, std::span<T> data, int root) {
  detail::check_element<T>();
  detail::check_root(t, root, "dist::broadcast");
  return detail::start_collective(t, {.kind = detail::collective::broadcast,
                                      .in = data.data(),
                                      .out = data.data(),
                                      .count = data.size(),
                                      .elem_size = sizeof(T),
                                      .root = root});
}

/// Element-wise `op` over every member's `in`, into `out` of `root` (others' `out` is
/// not written and may be empty).
template <class T>
strata::event reduce(team const& t, std::span<T const> in, std::span<T> out, reduce_op op,
                     int root) {
  detail::check_root(t, root, "dist::reduce");
  if (t.rank() == root && out.size() != in.size())
    detail::size_mismatch("dist::reduce", "the root's out has " + std::to_string(out.size()) +
                                              " elements and in has " + std::to_string(in.size()) +
                                              "; expected equal");
  return detail::start_collective(t, {.kind = detail::collective::reduce,
                                      .in = in.data(),
                                      .out = out.data(),
                                      .count = in.size(),
                                      .elem_size = sizeof(T),
                                      .typed = true,
                                      .type = detail::scalar_of<T>(),
                                      .op = op,
                                      .root = root});
}

/// Element-wise `op` over every member's `in`, into every member's `out`.
template <class T>
strata::event all_reduce(team const& t, std::span<T const> in, std::span<T> out, reduce_op op) {
  detail::check_member(t, "dist::all_reduce");
  if (out.size() != in.size())
    detail::size_mismatch("dist::all_reduce", "out has " + std::to_string(out.size()) +
                                                  " elements and in has " +
                                                  std::to_string(in.size()) + "; expected equal");
  return detail::start_collective(t, {.kind = detail::collective::all_reduce,
                                      .in = in.data(),
                                      .out = out.data(),
                                      .count = in.size(),
                                      .elem_size = sizeof(T),
                                      .typed = true,
                                      .type = detail::scalar_of<T>(),
                                      .op = op});
}

/// Every member's `in` (k elements each) into `out` of `root`, in team-rank order
/// (k * size elements there; others' `out` may be empty).
template <class T>
strata::event gather(team const& t, std::span<T const> in, std::span<T> out, int root) {
  detail::check_element<T>();
  detail::check_root(t, root, "dist::gather");
  if (t.rank() == root && out.size() != in.size() * static_cast<std::size_t>(t.size()))
    detail::size_mismatch("dist::gather", "the root's out has " + std::to_string(out.size()) +
                                              " elements; expected in.size() * team size = " +
                                              std::to_string(in.size() * t.size()));
  return detail::start_collective(t, {.kind = detail::collective::gather,
                                      .in = in.data(),
                                      .out = out.data(),
                                      .count = in.size(),
                                      .elem_size = sizeof(T),
                                      .root = root});
}

/// `in` of `root` (k * size elements) cut into k-element pieces, piece i to team rank i's
/// `out` (k elements).
template <class T>
strata::event scatter(team const& t, std::span<T const> in, std::span<T> out, int root) {
  detail::check_element<T>();
  detail::check_root(t, root, "dist::scatter");
  if (t.rank() == root && in.size() != out.size() * static_cast<std::size_t>(t.size()))
    detail::size_mismatch("dist::scatter", "the root's in has " + std::to_string(in.size()) +
                                               " elements; expected out.size() * team size = " +
                                               std::to_string(out.size() * t.size()));
  return detail::start_collective(t, {.kind = detail::collective::scatter,
                                      .in = in.data(),
                                      .out = out.data(),
                                      .count = out.size(),
                                      .elem_size = sizeof(T),
                                      .root = root});
}

/// Every member's `in` (k elements) into every member's `out` (k * size), in rank order.
template <class T>
strata::event all_gather(team const& t, std::span<T const> in, std::span<T> out) {
  detail::check_element<T>();
  detail::check_member(t, "dist::all_gather");
  if (out.size() != in.size() * static_cast<std::size_t>(t.size()))
    detail::size_mismatch("dist::all_gather", "out has " + std::to_string(out.size()) +
                                                  " elements; expected in.size() * team size = " +
                                                  std::to_string(in.size() * t.size()));
  return detail::start_collective(t, {.kind = detail::collective::all_gather,
                                      .in = in.data(),
                                      .out = out.data(),
                                      .count = in.size(),
                                      .elem_size = sizeof(T)});
}

/// Block j (k elements) of member i's `in` lands as block i of member j's `out`; both
/// hold k * size elements.
template <class T>
strata::event all_to_all(team const& t, std::span<T const> in, std::span<T> out) {
  detail::check_element<T>();
  detail::check_member(t, "dist::all_to_all");
  auto const n = static_cast<std::size_t>(t.size());
  if (in.size() != out.size() || in.size() % n != 0)
    detail::size_mismatch(
        "dist::all_to_all",
        "in has " + std::to_string(in.size()) + " and out " + std::to_string(out.size()) +
            " elements; expected equal sizes, a multiple of the team size " + std::to_string(n));
  return detail::start_collective(t, {.kind = detail::collective::all_to_all,
                                      .in = in.data(),
                                      .out = out.data(),
                                      .count = in.size() / n,
                                      .elem_size = sizeof(T)});
}

namespace detail {

/// all_to_all_v (below), started at a reserved place in the team's order when given.
template <class T>
strata::event all_to_all_v(team const& t, std::span<T const> in,
                           std::vector<std::size_t> const& send_counts,
                           std::vector<std::size_t> const& send_displs, std::span<T> out,
                           std::vector<std::size_t> const& recv_counts,
                           std::vector<std::size_t> const& recv_displs,
                           std::optional<std::uint64_t> place) {
  detail::check_element<T>();
  detail::check_member(t, "dist::all_to_all_v");
  auto const n = static_cast<std::size_t>(t.size());
  for (auto const* v : {&send_counts, &send_displs, &recv_counts, &recv_displs})
    if (v->size() != n)
      detail::size_mismatch("dist::all_to_all_v",
                            "a count or displacement vector has " + std::to_string(v->size()) +
                                " entries; expected the team size " + std::to_string(n));
  auto all = std::make_shared<std::vector<int>>();
  all->reserve(4 * n);
  auto put = [&](std::vector<std::size_t> const& v, char const* what) {
    for (std::size_t j = 0; j < n; ++j) {
      if (v[j] > static_cast<std::size_t>(INT_MAX))
        detail::size_mismatch("dist::all_to_all_v", std::string(what) + " " + std::to_string(v[j]) +
                                                        " exceeds INT_MAX elements");
      all->push_back(static_cast<int>(v[j]));
    }
  };
  put(send_counts, "send count");
  put(send_displs, "send displacement");
  put(recv_counts, "receive count");
  put(recv_displs, "receive displacement");
  for (std::size_t j = 0; j < n; ++j) {
    if (send_displs[j] + send_counts[j] > in.size())
      detail::size_mismatch("dist::all_to_all_v",
                            "the block for member " + std::to_string(j) + " ends at element " +
                                std::to_string(send_displs[j] + send_counts[j]) + " of in's " +
                                std::to_string(in.size()));
    if (recv_displs[j] + recv_counts[j] > out.size())
      detail::size_mismatch("dist::all_to_all_v",
                            "the block from member " + std::to_string(j) + " ends at element " +
                                std::to_string(recv_displs[j] + recv_counts[j]) + " of out's " +
                                std::to_string(out.size()));
  }
  collective_args const args{.kind = detail::collective::all_to_all_v,
                             .in = in.data(),
                             .out = out.data(),
                             .elem_size = sizeof(T),
                             .counts = std::move(all)};
  return place ? start_collective(t, args, *place) : start_collective(t, args);
}

}  // namespace detail

/// All-to-all with a size per pair: `send_counts[j]` elements from `in` at
/// `send_displs[j]` go to member j, which receives them at `recv_displs[i]` of its `out`
/// (`recv_counts[i]` elements from member i). Every member's send count to j must equal
/// j's receive count from it (MPI's rule; not checkable locally). Counts and
/// displacements are team-size vectors of elements, each within `int`.
template <class T>
strata::event all_to_all_v(team const& t, std::span<T const> in,
                           std::vector<std::size_t> const& send_counts,
                           std::vector<std::size_t> const& send_displs, std::span<T> out,
                           std::vector<std::size_t> const& recv_counts,
                           std::vector<std::size_t> const& recv_displs) {
  return detail::all_to_all_v(t, in, send_counts, send_displs, out, recv_counts, recv_displs,
                              std::nullopt);
}

// Point-to-point messages on a team (PARRAY §4.12's sendrecv as two halves): what a halo
// exchange between ranks is made of. Non-blocking; the buffer stays valid (and, for a
// send, unchanged) until the event completes. Messages between two members with the same
// tag arrive in the order they were sent; tags are 0..32767.
namespace detail {
event start_point_to_point(team const& t, bool send, int peer, int tag, void* buffer,
                           std::size_t bytes, char const* operation);
}  // namespace detail

/// Sends `data` to team rank `to` with `tag`.
template <class T>
strata::event send(team const& t, int to, int tag, std::span<T const> data) {
  detail::check_element<T>();
  return detail::start_point_to_point(t, true, to, tag, const_cast<T*>(data.data()),
                                      data.size_bytes(), "dist::send");
}
/// Receives into `data` the message from team rank `from` with `tag`; it must have exactly
/// data.size() elements (anything else fails the event with invalid_argument).
template <class T>
strata::event recv(team const& t, int from, int tag, std::span<T> data) {
  detail::check_element<T>();
  return detail::start_point_to_point(t, false, from, tag, data.data(), data.size_bytes(),
                                      "dist::recv");
}

}  // namespace strata::dist
