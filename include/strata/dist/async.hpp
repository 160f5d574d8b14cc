// Remote tasks (Phalanx §III-B async/after/wait, §IV-C active messages):
//
//   struct add { int operator()(int a, int b) const { return a + b; } };
//   strata::dist::future<int> f = strata::dist::async(rt.rank_place(1), add{}, 2, 3);
//   strata::dist::async(strata::after(f.event(), local_kernel), rt.rank_place(2), g{});
//   int five = f.get();
//
// The function is a function object (a lambda too) whose bytes travel with the call, so it
// must be serializable (trivially copyable captures: numbers, global_ptr, never raw
// pointers). A plain function travels as `strata::dist::fn<&function>`. Every such
// (function type, argument types) pair is registered at program start in every process
// of the job (they run the same binary), keyed by its type name. Functions may also be
// registered by name at run time (`register_function`), on every rank that runs them.
//
// On the target rank, the message handler only enqueues the call on that rank's worker
// pool; the result (or the exception's message) travels back and completes the caller's
// event. An exception is rethrown by get()/wait() as `remote_error`, naming the rank.
#pragma once

#include <strata/dist/runtime.hpp>
#include <strata/dist/serialize.hpp>
#include <strata/exec/event.hpp>
#include <strata/machine/place.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace strata::dist {

namespace detail {

using bytes = std::vector<std::byte>;
using invoker = std::function<void(reader& args, writer& result)>;

/// Registers `run` under `name` in this process; returns the id calls use
/// (signature_id(name), a hash of the name). `signature` names the argument and result types,
/// checked on every call.
std::uint64_t register_invoker(std::string const& name, std::string const& signature, invoker run);
std::uint64_t signature_id(std::string const& signature) noexcept;

/// Sends a call of function `id` with serialized `args` to `rank` once `deps` complete;
/// the reply's bytes land in `*result`. `what` names the function in error messages.
/// `what_lasts`: `what` outlives the call (a static of dist::async), so the runtime keeps a
/// reference to it instead of a copy.
event call(int rank, std::uint64_t id, std::uint64_t signature, std::string const& what,
           bool what_lasts, bytes args, std::shared_ptr<bytes> result, after const& deps);

template <class T>
std::string type_name() {
  return typeid(T).name();
}

// The function object of a call: a stateless one (empty, trivially copyable: the usual
// remote task) travels as no bytes, so such a call carries no payload and allocates none.
// (Only here: inside containers an element must take bytes, or a corrupt count of them
// could not be told from the input's length.)
template <class F>
inline constexpr bool stateless_function = std::is_empty_v<F>&& std::is_trivially_copyable_v<F>;
template <class F>
void write_function(writer& w, F const& f) {
  if constexpr (!stateless_function<F>) w(f);
}
template <class F>
F read_function(reader& in) {
  if constexpr (stateless_function<F>) {
    std::array<std::byte, sizeof(F)> raw{};  // bit_cast: a closure has no default constructor
    return std::bit_cast<F>(raw);
  } else {
    return in.read<F>();
  }
}

template <class F, class R, class... A>
struct auto_invoker {
  static void run(reader& in, writer& out) {
    F f = read_function<F>(in);
    std::tuple<A...> args{in.read<A>()...};
    if constexpr (std::is_void_v<R>)
      std::apply(f, std::move(args));
    else
      out(std::apply(f, std::move(args)));
  }
  static std::string signature() { return type_name<R(F, A...)>(); }
  // Instantiated by every `async` that names this pair, registered before main runs in
  // every process of the job (a static member of a class template specialization).
  static inline std::uint64_t const id = register_invoker(signature(), signature(), &run);
};

template <class R>
R decode(bytes const& b) {
  reader r(b.data(), b.size());
  return r.read<R>();
}

/// Throws invalid_argument: `operation` on a future that refers to no operation.
[[noreturn]] void empty_future(char const* operation);

}  // namespace detail

/// A plain function as a function object, so that it can be called remotely:
/// `dist::async(p, dist::fn<&compute>{}, x)`.
template <auto Function>
struct fn {
  template <class... A>
  decltype(auto) operator()(A&&... a) const {
    return std::invoke(Function, std::forward<A>(a)...);
  }
};

/// The result of a remote task: an event plus the value it carries. A default-constructed
/// future (a slot not filled yet) refers to no operation: valid() is false, ready() is
/// false (no value will ever come), and wait(), wait_for() and get() throw
/// invalid_argument; its event() is an empty event.
template <class R>
class future {
 public:
  future() = default;
  /// `result` receives the value's bytes; a future<void> needs none (null: one allocation
  /// less per remote call; its event is then never empty).
  future(strata::event e, std::shared_ptr<detail::bytes> result)
      : event_(std::move(e)), result_(std::move(result)) {}

  /// Whether it refers to an operation (it came from async, allocate, an atomic...); false
  /// for a default-constructed or moved-from future.
  bool valid() const noexcept { return result_ != nullptr || event_.state() != nullptr; }
  /// The completion event: usable in `after(...)` with local events.
  strata::event const& event() const noexcept { return event_; }
  /// Whether the value (or the failure) is there: get() returns without waiting.
  bool ready() const noexcept { return valid() && event_.ready(); }
  /// Waits; rethrows a remote exception as remote_error.
  void wait() const {
    if (!valid()) detail::empty_future("wait");
    event_.wait();
  }
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    if (!valid()) detail::empty_future("wait_for");
    return event_.wait_for(timeout);
  }
  /// Waits and returns the value (decoded anew on every call).
  R get() const {
    if (!valid()) detail::empty_future("get");
    event_.wait();
    if constexpr (!std::is_void_v<R>) return detail::decode<R>(*result_);
  }

 private:
  strata::event event_;
  std::shared_ptr<detail::bytes> result_;
};

/// Runs `f(args...)` on the rank of `target` (a place of the cluster tree) once `deps`
/// have completed; local and remote events mix freely in `deps`.
template <class F, class... Args>
auto async(after const& deps, place const& target, F&& f, Args&&... args) {
  using Fn = std::decay_t<F>;
  static_assert(!std::is_pointer_v<Fn>,
                "dist::async: a function pointer means nothing in another process; pass a "
                "function object or strata::dist::fn<&function>{}");
  static_assert(serializable<Fn>,
                "dist::async: the function object must be serializable (trivially copyable "
                "or with a strata::dist::serializer specialization)");
  static_assert((serializable<std::decay_t<Args>> && ...),
                "dist::async: every argument must be serializable (trivially copyable, "
                "std::string, std::vector, ... or with a strata::dist::serializer)");
  using R = std::invoke_result_t<Fn&, std::decay_t<Args>&&...>;
  static_assert(std::is_void_v<R> || serializable<std::decay_t<R>>,
                "dist::async: the result must be serializable or void");
  using Rv = std::conditional_t<std::is_void_v<R>, void, std::decay_t<R>>;
  using inv = detail::auto_invoker<Fn, Rv, std::decay_t<Args>...>;
  int rank = rank_of(target, "dist::async");
  detail::bytes payload;
  writer w(payload);
  detail::write_function(w, static_cast<Fn const&>(f));
  (w(static_cast<std::decay_t<Args> const&>(args)), ...);
  auto result = std::is_void_v<Rv> ? nullptr : std::make_shared<detail::bytes>();
  static std::string const what = inv::signature();
  static std::uint64_t const sig = detail::signature_id(what);
  auto e = detail::call(rank, inv::id, sig, what, true, std::move(payload), result, deps);
  return future<Rv>(std::move(e), std::move(result));
}

template <class F, class... Args>
auto async(place const& target, F&& f, Args&&... args) {
  return async(after{}, target, std::forward<F>(f), std::forward<Args>(args)...);
}

/// Registers `function` under `name` in this process, with the signature `Sig` (e.g.
/// `int(int, std::string)`). Call it on every rank that may run the function.
template <class Sig, class F>
void register_function(std::string const& name, F function);

template <class Sig>
struct signature_of;
template <class R, class... A>
struct signature_of<R(A...)> {
  using result = R;
  static std::string text() { return detail::type_name<R(std::decay_t<A>...)>(); }
  template <class F>
  static detail::invoker make(F function) {
    return [function](reader& in, writer& out) {
      std::tuple<std::decay_t<A>...> args{in.read<std::decay_t<A>>()...};
      if constexpr (std::is_void_v<R>)
        std::apply(function, std::move(args));
      else
        out(static_cast<R>(std::apply(function, std::move(args))));
    };
  }
};

template <class Sig, class F>
void register_function(std::string const& name, F function) {
  using S = signature_of<Sig>;
  detail::register_invoker("name:" + name, S::text(), S::make(std::move(function)));
}

/// Calls the function registered as `name` on the rank of `target`. The result type `R`
/// and the argument types must match the registration (checked on the remote rank).
template <class R, class... Args>
future<R> async_named(after const& deps, place const& target, std::string const& name,
                      Args&&... args) {
  static_assert((serializable<std::decay_t<Args>> && ...),
                "dist::async_named: every argument must be serializable");
  int rank = rank_of(target, "dist::async_named");
  detail::bytes payload;
  writer w(payload);
  (w(static_cast<std::decay_t<Args> const&>(args)), ...);
  auto result = std::make_shared<detail::bytes>();
  auto sig = signature_of<R(std::decay_t<Args>...)>::text();
  auto e = detail::call(rank, detail::signature_id("name:" + name), detail::signature_id(sig),
                        "'" + name + "'", false, std::move(payload), result, deps);
  return future<R>(std::move(e), std::move(result));
}
template <class R, class... Args>
future<R> async_named(place const& target, std::string const& name, Args&&... args) {
  return async_named<R>(after{}, target, name, std::forward<Args>(args)...);
}

/// A collective launch (Phalanx's `who`): `f(args...)` runs on every rank of `members`;
/// one future per team rank, in team order. Issued by one rank (one-sided).
template <class F, class... Args>
auto async_each(after const& deps, team const& members, F const& f, Args const&... args) {
  using Fut = decltype(async(deps, std::declval<place const&>(), f, args...));
  std::vector<Fut> out;
  out.reserve(static_cast<std::size_t>(members.size()));
  auto& rt = runtime::current();
  for (int r : members.ranks()) out.push_back(async(deps, rt.rank_place(r), f, args...));
  return out;
}
template <class F, class... Args>
auto async_each(team const& members, F const& f, Args const&... args) {
  return async_each(after{}, members, f, args...);
}

/// An event that completes when every future has (failing with the first failure).
template <class R>
strata::event when_all(std::vector<future<R>> const& futures) {
  std::vector<strata::event> events;
  for (auto const& f : futures) events.push_back(f.event());
  return strata::when_all(after(std::move(events)));
}

}  // namespace strata::dist
