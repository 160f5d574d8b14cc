// How a collective operation fails together. A member whose local step fails (a bad
// argument only it can see, an allocation its rank refused) must not throw before the
// collective the others wait in: they would hang. So each member records its outcome
// without throwing, the outcome travels in the collective the operation makes anyway (an
// all-gather), and then every member throws the same exception, naming the first failing
// team rank and its reason (docs/dist.md).
#pragma once

#include <strata/error.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <span>
#include <string>

namespace strata::dist::detail {

/// One member's outcome of the local step of a collective operation: trivially
/// copyable, so that it rides in the operation's all-gather.
struct local_outcome {
  /// The exception's kind, so that every member throws the same type.
  enum kind_t : std::int32_t { ok = 0, bad_argument, no_memory, other };
  std::int32_t kind = ok;
  char text[244] = {};  // the reason, cut to fit (what() of the member's exception)

  bool failed() const noexcept { return kind != ok; }

  static local_outcome failure(kind_t k, std::string const& why) {
    local_outcome o;
    o.kind = k;
    std::size_t const n = std::min(why.size(), sizeof o.text - 1);
    std::memcpy(o.text, why.data(), n);
    if (n < why.size()) std::memcpy(o.text + n - 3, "...", 3);
    return o;
  }
  /// The outcome of a caught exception (call inside a catch block's reach).
  static local_outcome of(std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (invalid_argument const& x) {  // out_of_range too
      return failure(bad_argument, x.what());
    } catch (out_of_memory const& x) {
      return failure(no_memory, x.what());
    } catch (std::bad_alloc const& x) {
      return failure(no_memory, x.what());
    } catch (std::exception const& x) {
      return failure(other, x.what());
    } catch (...) {
      return failure(other, "unknown exception");
    }
  }
};

/// Runs `step` and returns its outcome instead of letting an exception escape.
template <class F>
local_outcome outcome_of(F&& step) {
  try {
    step();
    return {};
  } catch (...) {
    return local_outcome::of(std::current_exception());
  }
}

/// The exception every member throws for `failure` of team rank `rank`.
[[noreturn]] inline void throw_agreed(char const* operation, int rank,
                                      local_outcome const& failure) {
  // The text came over the wire: bounded by its buffer, not by a terminator.
  std::string const text(failure.text, ::strnlen(failure.text, sizeof failure.text));
  std::string const what =
      std::string(operation) + ": team rank " + std::to_string(rank) + " failed: " + text;
  switch (failure.kind) {
    case local_outcome::bad_argument:
      throw invalid_argument(what);
    case local_outcome::no_memory:
      throw out_of_memory(what);
    default:
      throw error(what);
  }
}

/// After the all-gather: throws (the same on every member) for the first failed outcome
/// in team order, `at(r)` being team rank r's.
template <class At>
void agree(char const* operation, int members, At at) {
  for (int r = 0; r < members; ++r)
    if (local_outcome const& o = at(r); o.failed()) throw_agreed(operation, r, o);
}

}  // namespace strata::dist::detail
