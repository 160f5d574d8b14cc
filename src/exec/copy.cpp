// Copies between memories: host copies inline or in parallel on the pool, copies that
// touch a sim device on that device's copy engine, at its link's modeled speed; copies
// that touch CUDA memory on a stream of the GPU (src/exec/cuda/copy.cpp).
#include <strata/error.hpp>
#include <strata/exec/copy.hpp>
#include <strata/exec/launch.hpp>
#include <strata/exec/sim/backend.hpp>
#include <strata/exec/trace.hpp>
#include <strata/memory/allocate.hpp>

#include "exec/copy_desc.hpp"
#include "exec/cuda/copy.hpp"
#include "exec/exec_state.hpp"
#include "exec/sim/device.hpp"
#include "exec/threads/pool.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace strata::detail {
namespace {

bool on_host(space_id s) {
  return s == space_id::host || s == space_id::pinned || s == space_id::mapped;
}

// Below this size a parallel copy costs more in hand-offs than it gains in bandwidth.
constexpr std::size_t parallel_copy_threshold = std::size_t{1} << 20;
constexpr std::size_t min_piece = std::size_t{256} << 10;
// A host copy after its dependencies this small starts in the thread that completes them
// (start_after's `small`).
constexpr std::size_t small_host_copy = std::size_t{4} << 10;

event host_copy(copy_desc const& d) {
  std::size_t const units = copy_units(d);
  if (d.bytes() < parallel_copy_threshold || d.overlapping) {
    copy_part(d, 0, units);
    return event::completed();
  }
  auto& exec = current_exec();
  auto [threads, slots] = exec.slots.of(exec.machine);
  // Pieces of at least min_piece bytes, a few per thread for balance.
  std::size_t const unit_bytes = d.contiguous() ? 1 : d.row_bytes;
  std::size_t pieces = std::max<std::size_t>(1, d.bytes() / min_piece);
  pieces = std::min<std::size_t>({pieces, static_cast<std::size_t>(threads) * 4, units});
  (void)unit_bytes;
  std::size_t const per = units / pieces + (units % pieces != 0);
  pieces = units / per + (units % per != 0);
  auto body = [d, per, units](index_t c) {
    std::size_t first = static_cast<std::size_t>(c) * per;
    copy_part(d, first, std::min(first + per, units));
  };
  auto j = std::make_shared<body_job<decltype(body)>>(static_cast<index_t>(pieces), slots,
                                                      std::move(body), "host copy");
  event done = j->done();
  submit(std::move(j));
  return done;
}

// `issued`: when the copy was asked for, the start of a sim transfer's model (the lookups
// below are the host's cost, not the link's).
event start_copy(copy_desc const& d, sim_device::clock::time_point issued) {
  if (cuda::involved(d)) return cuda::copy(d, nullptr);
  bool const dst_sim = d.dst.space == space_id::sim, src_sim = d.src.space == space_id::sim;
  if (!dst_sim && !src_sim) return host_copy(d);
  auto& exec = current_exec();
  // The device comes from the allocation registry, not from the pointer's place id,
  // which a hand-made ptr may get wrong.
  auto device_of = [&](copy_side const& s) {
    auto info = find_allocation(s.base);
    int i = info && info->space == space_id::sim && info->machine == exec.machine_key
                ? exec.sims.of_memory(info->place_id)
                : -1;
    if (i < 0)
      throw invalid_argument(fmt::format(
          "copy: {} is used as sim memory but is no live sim allocation of this runtime",
          static_cast<void*>(s.base)));
    return i;
  };
  if (dst_sim && src_sim) {
    int a = device_of(d.src), b = device_of(d.dst);
    auto& from = exec.sims.device(a);
    // Within one device's memory: no link time, on the outgoing engine (docs/memory.md).
    if (a == b) return from.enqueue_copy(d, link_dir::out, 0.0, issued);
    // Between two devices the bytes cross both links, through the host.
    auto& to = exec.sims.device(b);
    double modeled =
        std::max(from.params().latency, to.params().latency) +
        static_cast<double>(d.bytes()) / std::min(from.params().bandwidth, to.params().bandwidth);
    return sim_device::enqueue_copy_between(from, to, d, modeled, issued);
  }
  auto& device = exec.sims.device(device_of(dst_sim ? d.dst : d.src));
  return device.enqueue_copy(d, dst_sim ? link_dir::in : link_dir::out,
                             device.transfer_time(d.bytes()), issued);
}

copy_side to_side(copy_side_desc const& s) {
  return {static_cast<std::byte*>(s.base), s.pitch, s.slice_pitch, s.space, s.place_id};
}

}  // namespace

event copy_rows(after const& deps, copy_side_desc dst, copy_side_desc src, std::size_t row_bytes,
                std::size_t rows, std::size_t slices) {
  auto const issued = sim_device::clock::now();
  copy_desc d{to_side(dst), to_side(src), row_bytes, rows, slices};
  current_exec();  // no runtime: fail here, in the caller
  // Both sides in the host's memory or in sim memory (the process's own, for the emulated
  // devices) may be one range: a shift within an array copies as memmove would.
  d.overlapping = !cuda::involved(d) && spans_intersect(d);
  // A device's copy engine takes rows that do not overlap (cudaMemcpy2D/3D reject a pitch
  // below the row): the sim device refuses what a GPU would, so such copies fail in tests.
  if (!on_host(dst.space) || !on_host(src.space))
    for (auto const* side : {&dst, &src}) {
      char const* name = side == &dst ? "destination" : "source";
      if (rows > 1 && side->pitch < row_bytes)
        throw invalid_argument(fmt::format(
            "copy: the {} pitch of {} bytes is below the row of {} bytes; a device copy "
            "expects rows that do not overlap",
            name, side->pitch, row_bytes));
      if (slices > 1 && side->slice_pitch < (rows - 1) * side->pitch + row_bytes)
        throw invalid_argument(fmt::format(
            "copy: the {} slice pitch of {} bytes is below a slice of {} rows of {} bytes; a "
            "device copy expects slices that do not overlap",
            name, side->slice_pitch, rows, row_bytes));
    }
  if (deps.ready()) {
    if (auto err = deps.error()) return event::failed(err);
    return start_copy(d, issued);
  }
  // After GPU work, a copy on the GPU waits for it there (Phalanx §IV-A), not on the host.
  if (cuda::involved(d) && cuda::chainable(deps)) {
    if (auto err = deps.error()) return event::failed(err);
    return cuda::copy(d, &deps);
  }
  // Host copies run in the starting thread (inline under 1 MiB): a chain of them goes
  // through the pool. Copies that touch a sim device are queued on its copy engine.
  bool const host_only = d.dst.space != space_id::sim && d.src.space != space_id::sim;
  auto result = start_after(
      deps, host_only,
      [d] {
        sim_device::forget_wake_credit();  // it follows its dependency, not this thread
        return start_copy(d, sim_device::clock::now());
      },
      host_only && d.bytes() <= small_host_copy);
  // Until it is queued on a device, a freeing of that device's memory waits for it.
  if (!host_only && !result.ready()) {
    auto& exec = current_exec();
    for (auto const* side : {&d.dst, &d.src})
      if (side->space == space_id::sim)
        if (auto info = find_allocation(side->base); info && info->space == space_id::sim)
          if (int i = exec.sims.of_memory(info->place_id); i >= 0)
            exec.sims.device(i).track(result);
  }
  return result;
}

namespace {
std::string extent_text(index_t const* e, std::size_t rank) {
  std::string s = "[";
  for (std::size_t i = 0; i < rank; ++i) s += (i ? " x " : "") + std::to_string(e[i]);
  return s + "]";
}
}  // namespace

view_copy plan_copy(copy_plan_side dst, copy_plan_side src, std::size_t rank,
                    std::size_t elem_bytes) {
  bool same = true;
  std::size_t points = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    same = same && dst.extent[d] == src.extent[d];
    points *= static_cast<std::size_t>(dst.extent[d]);
  }
  if (!same)
    throw invalid_argument("copy: destination " + extent_text(dst.extent, rank) + " and source " +
                           extent_text(src.extent, rank) +
                           " differ; expected views of equal extents");
  view_copy p;
  if (points == 0) return p;
  if (!dst.desc.base || !src.desc.base)
    throw invalid_argument(std::string("copy: the ") + (dst.desc.base ? "source" : "destination") +
                           " is a null pointer");
  p.rows = rank >= 2 ? static_cast<std::size_t>(dst.extent[rank - 2]) : 1;
  p.slices = rank == 3 ? static_cast<std::size_t>(dst.extent[0]) : 1;
  p.row_bytes = static_cast<std::size_t>(dst.extent[rank - 1]) * elem_bytes;
  auto span = [&](copy_side_desc const& v) {
    return (p.slices - 1) * v.slice_pitch + (p.rows - 1) * v.pitch + p.row_bytes;
  };
  p.dst = dst.desc;
  p.src = src.desc;
  p.dst_span = span(dst.desc);
  p.src_span = span(src.desc);
  return p;
}

event memset_rows(after const& deps, copy_side_desc dst, std::size_t row_bytes, std::size_t rows,
                  std::size_t slices, unsigned char byte) {
  copy_desc d{to_side(dst), to_side(dst), row_bytes, rows, slices};
  current_exec();  // no runtime: fail here, in the caller
  if (!cuda::involved(d))
    throw invalid_argument(fmt::format("memset: {} is {} memory; memset_rows takes CUDA memory",
                                       static_cast<void*>(d.dst.base), to_string(dst.space)));
  if (deps.ready()) {
    if (auto err = deps.error()) return event::failed(err);
    return cuda::memset(d, byte, nullptr);
  }
  if (cuda::chainable(deps)) {
    if (auto err = deps.error()) return event::failed(err);
    return cuda::memset(d, byte, &deps);
  }
  // After host work: queued by whoever completes it (a stream call, not a blocking one).
  return start_after(deps, false, [d, byte] { return cuda::memset(d, byte, nullptr); });
}

void check_range(void const* p, std::size_t bytes, space_id space, char const* what) {
  auto info = find_allocation(p);
  bool const host = on_host(space);
  if (!info) {
    if (host) return;  // host memory Strata did not allocate (a vector, the stack)
    throw invalid_argument(
        fmt::format("{}: {} is not in any live {} allocation (freed, or never allocated by Strata)",
                    what, p, to_string(space)));
  }
  if (info->space != space && !(host && on_host(info->space)))
    throw invalid_argument(fmt::format("{}: {} is {} memory, but is used as {} memory", what, p,
                                       to_string(info->space), to_string(space)));
  auto offset =
      static_cast<std::size_t>(static_cast<char const*>(p) - static_cast<char const*>(info->base));
  if (offset + bytes > info->bytes)
    throw invalid_argument(
        fmt::format("{}: {} bytes from {} run {} bytes past the end of its allocation of {} bytes",
                    what, bytes, p, offset + bytes - info->bytes, info->bytes));
}

namespace {
// The memory a fill of `address` writes: the registry knows where Strata's allocations
// live; other memory is where its pointer says.
place fill_memory(void const* address, std::uint32_t memory_place) {
  if (auto info = find_allocation(address); info && info->machine == current_machine_key())
    memory_place = info->place_id;
  return place_of_id(memory_place);
}
target next_to(place const& memory) {
  // The group the memory is attached to holds the processors next to it.
  auto parent = memory.parent();
  return parent ? target(*parent) : target(memory.root());
}
}  // namespace

target fill_target(void const* address, std::uint32_t memory_place) {
  return next_to(fill_memory(address, memory_place));
}

target fill_target(void const* address, std::uint32_t memory_place, space_id space,
                   char const* what) {
  if (!address)
    throw invalid_argument(
        fmt::format("{}: the destination is a null pointer; expected a pointer to {} memory", what,
                    to_string(space)));
  auto memory = fill_memory(address, memory_place);
  // A view's space and the memory its pointer names must agree: the kernel runs next to
  // that memory, so a `cuda_space` pointer naming host memory would be written by host
  // threads (a segfault for device memory).
  strata::isa const wanted = space == space_id::cuda || space == space_id::managed ? isa::cuda
                             : space == space_id::sim                              ? isa::sim
                                                                                   : isa::host;
  if (memory.isa() != wanted && !(space == space_id::managed && memory.isa() == isa::host))
    throw invalid_argument(fmt::format(
        "{}: {} is used as {} memory, but its pointer names {} ({} memory) and no live {} "
        "allocation of this runtime holds it; expected a pointer Strata allocated, or one whose "
        "place is the {} memory it points to",
        what, address, to_string(space), memory.path(), to_string(memory.isa()), to_string(space),
        to_string(wanted)));
  return next_to(memory);
}

index_t sim_chunks_per_unit(int device) {
  return current_exec().sims.device(device).speed() < 1.0 ? 16 : 4;
}

}  // namespace strata::detail
