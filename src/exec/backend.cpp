// Resolving a launch target: which backend runs it and on which processors.
#include <strata/error.hpp>
#include <strata/exec/backend.hpp>
#include <strata/exec/domain.hpp>
#include <strata/exec/work_division.hpp>
#include <strata/runtime.hpp>

#include "exec/exec_state.hpp"
#include "exec/threads/pool.hpp"
#include "machine/place_tree.hpp"

#include <array>

namespace strata {
namespace {
constexpr std::array backend_names{"serial", "threads", "openmp", "cuda", "sim"};
}

std::string_view to_string(backend_id b) noexcept {
  return backend_names.at(static_cast<std::size_t>(b));
}

std::optional<backend_id> parse_backend(std::string_view text) noexcept {
  for (std::size_t i = 0; i < backend_names.size(); ++i)
    if (text == backend_names[i]) return static_cast<backend_id>(i);
  return std::nullopt;
}

namespace detail {

placement resolve(target const& t) {
  auto& rt = runtime::current();
  auto& exec = current_exec();
  // Launch overhead matters (a launch of an empty kernel costs well under a
  // microsecond), so each thread remembers the target it resolved last.
  thread_local struct {
    std::uint64_t generation = 0;
    place where;  // keeps the tree alive, so its address identifies it
    std::optional<backend_id> backend;
    placement result{};
  } last;
  if (last.generation == exec.generation && last.backend == t.backend &&
      place_access::tree(last.where) == place_access::tree(t.where) &&
      place_access::index(last.where) == place_access::index(t.where) && t.where.valid())
    return last.result;
  auto const& p = t.where;
  if (!p.valid())
    throw invalid_argument(
        "launch: the target place is empty (default-constructed); expected a place of "
        "runtime::machine()");
  if (!p.same_machine(rt.machine()))
    throw invalid_argument("launch: place '" + p.path() +
                           "' is not part of this runtime's machine; expected a place "
                           "obtained from runtime::machine()");
  if (p.kind() == place_kind::memory)
    throw invalid_argument("launch: '" + p.path() +
                           "' is a memory; expected a processor or a group of processors");
  auto [threads, slots] = exec.host_slots(p);
  backend_id b = t.backend.value_or(rt.default_cpu_backend());
  if (!t.backend && threads == 0) {
    // No host processor here: the place is a device, whose backend comes later.
    auto procs = p.processors();
    if (procs.empty())
      throw invalid_argument("launch: '" + p.path() + "' holds no processor to run on");
    b = procs.front().isa() == isa::cuda ? backend_id::cuda : backend_id::sim;
  }
  if (b == backend_id::cuda || b == backend_id::sim)
    throw not_supported("launch: '" + p.path() + "' needs the " + std::string(to_string(b)) +
                        " backend, which this build of Strata does not have yet");
  if (threads == 0)
    throw invalid_argument("launch: the " + std::string(to_string(b)) + " backend runs on host " +
                           "processors, and '" + p.path() + "' has none");
  last.generation = exec.generation;
  last.where = p;
  last.backend = t.backend;
  last.result = {b, threads, slots};
  return last.result;
}

[[noreturn]] void backend_not_compiled(backend_id b) {
  throw not_supported("launch: the " + std::string(to_string(b)) +
                      " backend is not compiled into this translation unit" +
                      (b == backend_id::openmp ? " (compile it with OpenMP, e.g. -fopenmp)" : ""));
}

[[noreturn]] void scratchpad_overflow(std::size_t requested, std::size_t available) {
  throw invalid_argument("scratchpad: the block asked for " + std::to_string(requested) +
                         " bytes but its shape provides " + std::to_string(available) +
                         "; give the shape .scratchpad(bytes) with enough room");
}

bool runs_inline(target const& t) {
  auto b = resolve(t).backend;
  return b == backend_id::serial || b == backend_id::openmp;
}

void defer(std::function<void()> fn) {
  auto& exec = current_exec();
  auto [threads, slots] = exec.host_slots(exec.machine);
  (void)threads;
  auto body = [fn = std::move(fn)](index_t) { fn(); };
  submit(std::make_shared<body_job<decltype(body)>>(1, slots, std::move(body)));
}

target_traits traits_of(target const& t) {
  auto p = resolve(t);
  return {p.threads, p.backend != backend_id::cuda && p.backend != backend_id::sim};
}

}  // namespace detail
}  // namespace strata
