// Resolving a launch target: which backend runs it and on which processors.
#include <strata/error.hpp>
#include <strata/exec/backend.hpp>
#include <strata/exec/domain.hpp>
#include <strata/exec/launch.hpp>
#include <strata/exec/trace.hpp>
#include <strata/exec/work_division.hpp>
#include <strata/memory/allocate.hpp>
#include <strata/runtime.hpp>

#include "exec/cuda/pointers.hpp"
#include "exec/exec_state.hpp"
#include "exec/sim/device.hpp"
#include "exec/threads/pool.hpp"
#include "machine/place_tree.hpp"

#include <array>

#include <fmt/format.h>

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
namespace {

// The GPUs of a launch on `p`: the one it is in, or every one below it (Phalanx's
// multi-grid: one launch over several GPUs).
placement resolve_cuda(place const& p, slot_set const* slots) {
  if (!STRATA_ENABLE_CUDA)
    throw not_supported("launch: '" + p.path() +
                        "' needs the cuda backend, and this libstrata was built without CUDA "
                        "(configure with -DSTRATA_ENABLE_CUDA=ON where nvcc exists)");
  std::vector<place> gpus;
  for (std::optional<place> q = p; q; q = q->parent())
    if (q->type() == place_type::device && q->isa() == isa::cuda) {
      gpus.push_back(*q);
      break;
    }
  if (gpus.empty())
    for (auto const& d : p.descendants(place_type::device))
      if (d.isa() == isa::cuda) gpus.push_back(d);
  if (gpus.empty())
    throw invalid_argument("launch: no CUDA device in '" + p.path() + "'" +
                           (runtime::current().notes().empty()
                                ? std::string()
                                : " (" + runtime::current().notes().front() + ")") +
                           "; expected a CUDA GPU or a place holding some");
  if (!current_exec().this_system)
    throw invalid_argument("launch: '" + p.path() +
                           "' is a GPU of a described machine (STRATA_TOPOLOGY), not of this "
                           "one; kernels run only on GPUs the CUDA runtime reports");
  placement r{backend_id::cuda, 0, slots};
  for (auto const& g : gpus) {
    auto ordinal = g.os_index();
    if (ordinal < 0 || ordinal >= 64)
      throw not_supported("launch: CUDA device '" + g.path() + "' has ordinal " +
                          std::to_string(ordinal) + "; the CUDA backend handles ordinals 0-63");
    r.devices |= std::uint64_t{1} << ordinal;
    r.threads += static_cast<int>(g.descendants(place_type::compute_unit).size());
  }
  r.device = gpus.front().os_index();
  auto memories = gpus.front().descendants(place_type::device_memory);
  if (!memories.empty()) r.memory = memories.front().id();
  return r;
}

}  // namespace

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
  check_runtime_place(p, "launch");
  if (p.kind() == place_kind::memory)
    throw invalid_argument("launch: '" + p.path() +
                           "' is a memory; expected a processor or a group of processors");
  auto [threads, slots] = exec.slots.of(p);
  backend_id b = t.backend.value_or(rt.default_cpu_backend());
  if (!t.backend && threads == 0) {
    // No host processor here: the place is (in) a device, which has its own backend.
    auto procs = p.processors();
    if (procs.empty())
      throw invalid_argument("launch: '" + p.path() + "' holds no processor to run on");
    b = procs.front().isa() == isa::cuda ? backend_id::cuda : backend_id::sim;
  }
  if (b == backend_id::cuda) {
    last.result = resolve_cuda(p, slots);
    last.generation = exec.generation;
    last.where = p;
    last.backend = t.backend;
    return last.result;
  }
  if (b == backend_id::sim) {
    int device = exec.sims.of_place(p);
    if (device < 0)
      throw invalid_argument("launch: the sim backend runs on sim devices, and '" + p.path() +
                             "' is not one (nor inside one)");
    auto const& sim = exec.sims.at(device);
    last.generation = exec.generation;
    last.where = p;
    last.backend = t.backend;
    last.result = {b, sim.units > 0 ? sim.units : 1, slots, device, sim.memory};
    return last.result;
  }
  if (threads == 0)
    throw invalid_argument("launch: the " + std::string(to_string(b)) + " backend runs on host " +
                           "processors, and '" + p.path() + "' has none");
  last.generation = exec.generation;
  last.where = p;
  last.backend = t.backend;
  last.result = {b, threads, slots};
  return last.result;
}

[[noreturn]] void cuda_not_compiled(char const* kernel) {
  throw not_supported(std::string("launch: kernel ") + kernel +
                      " was not compiled for CUDA: compile this file with nvcc (a .cu file, "
                      "or LANGUAGE CUDA in CMake) to launch it on a GPU");
}

[[noreturn]] void scratchpad_overflow(std::size_t requested, std::size_t available) {
  throw invalid_argument("scratchpad: the block asked for " + std::to_string(requested) +
                         " bytes but its shape provides " + std::to_string(available) +
                         "; give the shape .scratchpad(bytes) with enough room");
}

[[noreturn]] void bad_group_size(index_t size, index_t parent) {
  throw invalid_argument("group(" + std::to_string(size) + "): cannot cut " +
                         std::to_string(parent) +
                         " threads into equal groups of that size; expected a size that "
                         "divides the block's (or the parent group's) thread count");
}

void check_kernel_pointer(placement const& p, void const* address, space_id space, bool typed,
                          std::uint32_t place_id, std::size_t index) {
  bool const sim = p.backend == backend_id::sim;
  bool const gpu = p.backend == backend_id::cuda;
  auto host_like = [](space_id s) {
    return s == space_id::host || s == space_id::pinned || s == space_id::mapped ||
           s == space_id::managed;
  };
  auto where = [&] {
    return sim   ? "sim device " + current_exec().sims.at(p.device).device.name()
           : gpu ? "CUDA device " + std::to_string(p.device)
                 : std::string("host processors");
  };
  auto fail = [&](std::string const& what) {
    throw invalid_argument(
        fmt::format("launch on {}: argument {} ({}) {}", where(), index + 1, address, what));
  };
  // CUDA kernels reach any CUDA memory (peers through unified addressing), managed memory
  // and page-locked host memory, which unified addressing maps into every device. Host
  // kernels reach managed memory too (the driver migrates its pages).
  auto fits = [&](space_id s, std::uint32_t memory) {
    return sim   ? s == space_id::sim && memory == p.memory
           : gpu ? s == space_id::cuda || s == space_id::managed || s == space_id::pinned
                 : host_like(s);
  };
  auto describe = [&](space_id s, std::uint32_t memory) {
    return sim ? fmt::format(
                     "is {} memory of '{}'; a sim kernel may only use its own device's "
                     "memory",
                     to_string(s), place_of_id(memory).path())
           : gpu
               ? fmt::format(
                     "is {} memory; CUDA kernels use CUDA device, managed or pinned host memory",
                     to_string(s))
               : fmt::format("is {} memory; kernels on host processors use host-accessible memory",
                             to_string(s));
  };
  if (typed && !fits(space, place_id)) fail(describe(space, place_id));
#if defined(NDEBUG)
  if (typed) return;
#endif
  // The allocation holding the address, or the one it is the end of (a past-the-end
  // pointer is a valid argument, and may equal the start of a neighbouring allocation).
  auto info = find_allocation(address);
  if (!info || !fits(info->space, info->place_id)) {
    auto before = find_allocation(static_cast<char const*>(address) - 1);
    if (before && static_cast<char const*>(before->base) + before->bytes == address &&
        fits(before->space, before->place_id))
      info = before;
  }
  if (!info) {
    if (!sim && !gpu) return;  // host memory Strata did not allocate: a vector, the stack
    // Memory of cudaMalloc, cuBLAS or Thrust (or cudaHostAlloc/cudaHostRegister): the CUDA
    // runtime knows it even though the registry does not.
    if (gpu)
      if (auto foreign = cuda::foreign_memory_of(address); foreign && fits(foreign->space, 0))
        return;
    fail(sim ? "is not memory of this device (a host address, or freed?); allocate it with "
               "strata::allocate<T, strata::sim_space>(device, n)"
             : "is not memory of a CUDA device (a host address, or freed?); allocate it with "
               "strata::allocate<T, strata::cuda_space>(gpu, n) or cudaMalloc");
  }
  if (info->machine != current_machine_key())
    fail("belongs to an allocation of an earlier runtime");
  if (!fits(info->space, info->place_id)) fail(describe(info->space, info->place_id));
}

bool names_cuda(target const& t) noexcept {
  return t.backend == backend_id::cuda;
}

bool runs_inline(target const& t) {
  auto b = resolve(t).backend;
  return b == backend_id::serial || b == backend_id::openmp;
}

void defer(std::function<void()> fn) {
  auto& exec = current_exec();
  auto [threads, slots] = exec.slots.of(exec.machine);
  (void)threads;
  auto body = [fn = std::move(fn)](index_t) { fn(); };
  submit(std::make_shared<body_job<decltype(body)>>(1, slots, std::move(body)));
}

namespace {
// How deep small starts run inside the continuations of the ones before (start_after).
thread_local int small_start_depth = 0;
constexpr int max_small_start_depth = 8;
}  // namespace

event start_after(after const& deps, bool inline_start, std::function<event()> start, bool small) {
  auto ready = when_all(deps);
  if (ready.ready()) {
    if (auto err = ready.error()) return event::failed(err);
    return start();
  }
  auto result = event::pending();
  // Runs once: starts the operation and forwards its completion to `result`.
  auto go = [result, start = std::move(start),
             flow =
                 trace::enabled() ? trace::detail::origin_here() : trace::detail::flow_origin{}]() {
    trace::detail::adopt_flow from_caller(flow);  // the trace's arrow from who asked
    try {
      complete_with(start(), result);
    } catch (...) {
      result.complete(std::current_exception());
    }
  };
  // The continuation reads `ready` through its state (alive while it runs continuations),
  // not through a handle of its own: see complete_with.
  event_state* state = ready.state();
  ready.then([state, result, inline_start, small, go = std::move(go)]() mutable {
    if (auto err = state->error()) return result.complete(err);
    if (!inline_start) return go();
    // A small operation (a few bytes' host copy after a kernel: a reduction's partials)
    // runs in the completing thread, as a non-inline start does: a job for it woke
    // another thread each time (50 us on the VM, once per kernel of a graph). Nested
    // only so deep: a chain of them completes inside each other's continuations.
    if (small && small_start_depth < max_small_start_depth) {
      ++small_start_depth;
      go();
      --small_start_depth;
      return;
    }
    try {
      defer(std::move(go));
    } catch (...) {
      // No pool to run it (the runtime is shutting down): the result must still complete.
      result.complete(std::current_exception());
    }
  });
  return result;
}

void track_device_work(placement const& p, event const& result) {
  if (p.backend == backend_id::sim && !result.ready())
    current_exec().sims.device(p.device).track(result);
}

target_traits traits_of(target const& t) {
  auto p = resolve(t);
  // sim devices run their kernels on host threads, so they get CPU-style divisions too.
  return {p.threads, p.backend != backend_id::cuda};
}

}  // namespace detail
}  // namespace strata
