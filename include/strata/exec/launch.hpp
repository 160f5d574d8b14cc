// launch(place, shape, kernel, args...) -> event (Phalanx async; Alpaka's enqueue of a
// kernel executor). The kernel is called as kernel(self, args...) for every thread, with
// `self` the domain handle (domain.hpp); arguments are copied, as CUDA copies kernel
// parameters. launch(after(e...), ...) starts once the events complete (Phalanx
// async_after) without blocking the caller.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/serial/backend.hpp>
#include <strata/exec/shape.hpp>
#include <strata/exec/threads/backend.hpp>
#if defined(_OPENMP)
#include <strata/exec/openmp/backend.hpp>
#endif

#include <exception>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace strata {

namespace detail {

/// The backends compiled into this translation unit, tried in order at run time.
template <class... B>
struct backend_list {};

#if defined(_OPENMP)
using cpu_backends = backend_list<serial::backend, threads::backend, openmp::backend>;
#else
using cpu_backends = backend_list<serial::backend, threads::backend>;
#endif

[[noreturn]] void backend_not_compiled(backend_id b);

/// Whether launches on `t` run their kernels in the launching thread.
bool runs_inline(target const& t);
/// Runs `fn` on the runtime's pool, soon, on any processor.
void defer(std::function<void()> fn);

template <class... B, class S, class K, class Args>
event dispatch(backend_list<B...>, placement const& p, S const& s, K const& k, Args& args) {
  event result;
  bool found = ((B::id == p.backend ? (result = B::launch(p, s, k, args), true) : false) || ...);
  if (!found) backend_not_compiled(p.backend);
  return result;
}

}  // namespace detail

template <shape_type S, class Kernel, class... Args>
event launch(target const& where, S const& s, Kernel&& kernel, Args&&... args) {
  auto p = detail::resolve(where);
  std::tuple<std::decay_t<Args>...> copied(std::forward<Args>(args)...);
  std::decay_t<Kernel> const& k = kernel;
  return detail::dispatch(detail::cpu_backends{}, p, s, k, copied);
}

template <shape_type S, class Kernel, class... Args>
event launch(after const& deps, target const& where, S const& s, Kernel&& kernel, Args&&... args) {
  if (deps.ready()) {
    if (auto err = deps.error()) return event::failed(err);
    return launch(where, s, std::forward<Kernel>(kernel), std::forward<Args>(args)...);
  }
  detail::resolve(where);  // a bad target fails now, in the caller, not later
  auto result = event::pending();
  auto ready = when_all(deps);
  auto start = [result, where, s, k = std::decay_t<Kernel>(std::forward<Kernel>(kernel)),
                args = std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...), ready]() {
    if (auto err = ready.error()) return result.complete(err);
    try {
      auto inner =
          std::apply([&](auto const&... a) { return strata::launch(where, s, k, a...); }, args);
      inner.then([inner, result] { result.complete(inner.error()); });
    } catch (...) {
      result.complete(std::current_exception());
    }
  };
  // The launch is made by whoever completes the last event. Backends that run kernels
  // inline (serial, openmp) go through the pool instead, so that a long chain completing
  // at once does not recurse one stack frame per launch.
  if (detail::runs_inline(where))
    ready.then([start = std::move(start)]() mutable { detail::defer(std::move(start)); });
  else
    ready.then(std::move(start));
  return result;
}

}  // namespace strata
