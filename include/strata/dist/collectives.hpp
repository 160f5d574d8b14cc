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

#include <cstddef>
#include <span>
#include <type_traits>

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
  all_to_all
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
};
event start_collective(team const& t, collective_args const& a);
void check_member(team const& t, char const* operation);
void check_root(team const& t, int root, char const* operation);
[[noreturn]] void size_mismatch(char const* operation, std::string const& what);

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
