// Memory other ranks reach (Phalanx §IV-C: the global address space): the registry of
// dist::allocate and make_global segments (host memory, memory files the peers on this
// node map, device memory), and the initiator's side of puts, gets and atomics on one
// node: windows onto peers' mapped segments (docs/dist.md "Put and get on one node"),
// and the memory layer's copies for device segments. The progress engine itself is
// dist/engine.cpp.
#include "dist/direct.hpp"
#include "dist/engine.hpp"

#include <strata/error.hpp>
#include <strata/exec/copy.hpp>
#include <strata/memory/allocate.hpp>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>

namespace strata::dist::detail {

namespace {

// --- registered memory ----------------------------------------------------------------

struct segment {
  std::size_t bytes;
  bool owned;  // from allocate_segment (freed by free_segment)
  // Owned memory in a memory file the peers on this node map (null: aligned_alloc).
  std::unique_ptr<shared_block> block;
  // Device memory (allocate_device_segment): reached through the memory layer's copies.
  space_id space = space_id::host;
  std::uint32_t place_id = 0;
};
// At most this many segments live in memory files at once (each holds a descriptor and
// two pages at least); later ones are private memory, reached by messages.
constexpr std::size_t max_shared_segments = 512;
std::size_t shared_segments = 0;  // under segments_mutex()
std::mutex& segments_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::uintptr_t, segment>& segments() {
  static std::map<std::uintptr_t, segment> s;
  return s;
}

}  // namespace

// --- segments ---------------------------------------------------------------------------

void register_segment(void const* base, std::size_t size) {
  auto const a = reinterpret_cast<std::uintptr_t>(base);
  std::lock_guard lock(segments_mutex());
  auto& s = segments();
  auto next = s.lower_bound(a);
  bool overlap = (next != s.end() && next->first < a + std::max<std::size_t>(size, 1));
  if (next != s.begin()) {
    auto prev = std::prev(next);
    overlap = overlap || prev->first + prev->second.bytes > a;
  }
  if (overlap)
    throw invalid_argument(
        "dist::make_global: the memory overlaps memory already registered "
        "or allocated by dist::allocate; expected disjoint ranges");
  s.emplace(a, segment{size, false, nullptr});
}

void unregister_segment(void const* base) {
  auto const a = reinterpret_cast<std::uintptr_t>(base);
  std::lock_guard lock(segments_mutex());
  auto it = segments().find(a);
  if (it == segments().end() || it->second.owned)
    throw invalid_argument(
        "dist::release_global: the pointer is not the start of memory "
        "registered with dist::make_global");
  segments().erase(it);
}

std::uintptr_t allocate_segment(std::size_t size, std::size_t align) {
  // A size near SIZE_MAX would wrap when it is rounded up to the alignment below (or a
  // memory file's header page is added), allocating a few bytes while the registry holds
  // the whole size. No object is larger than PTRDIFF_MAX bytes, so that is the bound.
  if (size > static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max()))
    throw out_of_memory("dist::allocate: " + std::to_string(size) + " bytes on rank " +
                        std::to_string(my_rank()) +
                        " cannot be allocated; expected at most PTRDIFF_MAX bytes");
  current_engine().sweep_windows();
  // With peers on this node: a memory file they map, so their puts and gets are memory
  // copies (docs/dist.md "Put and get on one node"). Page-aligned, so any align up to a
  // page is kept.
  bool shared = align <= 4096 && node_has_peers();
  if (shared) {
    std::lock_guard lock(segments_mutex());
    shared = shared_segments < max_shared_segments;
    if (shared) ++shared_segments;  // reserved; given back below if no file came
  }
  if (shared) {
    std::unique_ptr<shared_block> block;
    try {
      block = std::make_unique<shared_block>(size, true, "dist::allocate");
    } catch (...) {
      std::lock_guard lock(segments_mutex());
      --shared_segments;
      throw;
    }
    std::lock_guard lock(segments_mutex());
    if (block->handle().fd >= 0) {
      auto const a = reinterpret_cast<std::uintptr_t>(block->data());
      segments().emplace(a, segment{size, true, std::move(block)});
      return a;
    }
    --shared_segments;  // the system refused a memory file: private memory below
  }
  auto const rounded = (std::max<std::size_t>(size, 1) + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (!p)
    throw out_of_memory("dist::allocate: " + std::to_string(size) + " bytes on rank " +
                        std::to_string(my_rank()) + " could not be allocated");
  std::lock_guard lock(segments_mutex());
  segments().emplace(reinterpret_cast<std::uintptr_t>(p), segment{size, true, nullptr});
  return reinterpret_cast<std::uintptr_t>(p);
}

void free_segment(std::uintptr_t address) {
  current_engine().sweep_windows();
  std::unique_ptr<shared_block> block;
  {
    std::lock_guard lock(segments_mutex());
    auto it = segments().find(address);
    if (it == segments().end() || !it->second.owned)
      throw invalid_argument("dist::deallocate: address 0x" + fmt_hex(address) +
                             " is not the start of live memory from dist::allocate (freed "
                             "twice, or never allocated?)");
    block = std::move(it->second.block);
    if (block) --shared_segments;
    auto const space = it->second.space;
    segments().erase(it);
    if (space != space_id::host) {
      strata::detail::deallocate_bytes(reinterpret_cast<void const*>(address), space);
      return;
    }
  }
  // A block's header now says it is freed (peers' later accesses ask again and fail);
  // its pages go once the last peer's mapping does.
  if (!block) std::free(reinterpret_cast<void*>(address));
}

std::uintptr_t allocate_device_segment(place const& where, std::size_t size, space_id space,
                                       std::uint32_t* place_id) {
  auto raw = strata::detail::allocate_bytes(where, std::max<std::size_t>(size, 1), 64, space);
  auto const a = reinterpret_cast<std::uintptr_t>(raw.address);
  *place_id = raw.place_id;
  std::lock_guard lock(segments_mutex());
  segments().emplace(a, segment{size, true, nullptr, space, raw.place_id});
  return a;
}

std::optional<device_range> device_segment(std::uintptr_t address, std::size_t n) {
  std::lock_guard lock(segments_mutex());
  auto& s = segments();
  auto it = s.upper_bound(address);
  if (it == s.begin()) return std::nullopt;
  --it;
  if (it->second.space == space_id::host || address < it->first ||
      address - it->first >= std::max<std::size_t>(it->second.bytes, 1) ||
      n > it->second.bytes - (address - it->first))
    return std::nullopt;
  return device_range{it->second.space, it->second.place_id};
}

segment_info find_segment(std::uintptr_t address) {
  std::lock_guard lock(segments_mutex());
  auto& s = segments();
  auto it = s.upper_bound(address);
  if (it == s.begin()) return {};
  --it;
  if (address - it->first >= std::max<std::size_t>(it->second.bytes, 1)) return {};
  segment_info info{it->first, it->second.bytes, -1, 0};
  if (it->second.block) {
    auto const h = it->second.block->handle();
    info.fd = h.fd;
    info.serial = h.serial;
  }
  return info;
}

bool segment_contains(std::uintptr_t address, std::size_t n) {
  if (n == 0) return true;
  std::lock_guard lock(segments_mutex());
  auto& s = segments();
  auto it = s.upper_bound(address);
  if (it == s.begin()) return false;
  --it;
  return it->second.space == space_id::host && address >= it->first &&
         address - it->first <= it->second.bytes && n <= it->second.bytes - (address - it->first);
}

std::string segment_problem(int rank, std::uintptr_t address, std::size_t n) {
  if (auto dev = device_segment(address, n))
    return std::to_string(n) + " bytes at address 0x" + fmt_hex(address) + " on rank " +
           std::to_string(rank) + " are device memory (" +
           std::string(strata::to_string(dev->space)) +
           "); expected host memory (atomics work on host memory only)";
  return std::to_string(n) + " bytes at address 0x" + fmt_hex(address) + " on rank " +
         std::to_string(rank) +
         " are not inside memory from dist::allocate or dist::make_global (freed, out of "
         "bounds, or never registered)";
}

namespace {
// Large puts and gets into mapped windows. On x86-64 with ERMS (enhanced rep movsb),
// `rep movsb` copies from half a MiB up faster than glibc's memcpy on the machines
// measured (2-core AMD EPYC VM: 1 MiB 14.9 against 19.7 us, 16 MiB 416 against 618 us,
// 64 MiB 2.5 against 3.3 ms; the kernel's copy behind MPI's shared-memory transfers is
// the same instruction). Elsewhere, or below that size, memcpy.
// (Not under the sanitizers, which do not see the instruction's accesses: the presets'
// STRATA_ASAN/STRATA_TSAN, or GCC's own macros when the flags came from elsewhere.)
#if defined(__x86_64__) && !defined(STRATA_ASAN) && !defined(STRATA_TSAN) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define STRATA_DIST_REP_MOVSB 1
#else
#define STRATA_DIST_REP_MOVSB 0
#endif

[[maybe_unused]] bool has_erms() {
#if STRATA_DIST_REP_MOVSB
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((b >> 9) & 1u);
#else
  return false;
#endif
}

}  // namespace

void copy_bytes(void* dst, void const* src, std::size_t n) {
#if STRATA_DIST_REP_MOVSB
  static bool const erms = has_erms();
  if (erms && n >= (std::size_t{512} << 10)) {
    asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

namespace {

// The window this thread used last (most programs put into one segment again and
// again): checked without the engine's lock. Tagged with the engine's serial, since
// runtimes come and go.
struct last_window {
  std::uint64_t engine = 0;
  int rank = -1;
  std::shared_ptr<void const> window;  // an engine::window
};
thread_local last_window last;
}  // namespace

engine::window const* engine::window_for(int rank, std::uintptr_t address, std::size_t n) {
  if (n == 0) return nullptr;
  if (last.engine == serial_ && last.rank == rank) {
    auto const* w = static_cast<window const*>(last.window.get());
    if (w->holds(address, n) && block_alive(w->mapped.get())) return w;
  }
  auto w = window_ref(rank, address, n);
  if (!w) return nullptr;
  last = {serial_, rank, w};
  return w.get();
}

std::shared_ptr<engine::window const> engine::window_ref(int rank, std::uintptr_t address,
                                                         std::size_t n) {
  if (n == 0 || !node_peer(rank)) return nullptr;
  {
    std::lock_guard lock(windows_mutex_);
    if (windows_.empty()) windows_.resize(static_cast<std::size_t>(size_));
    auto& seen = windows_[static_cast<std::size_t>(rank)];
    auto it = seen.upper_bound(address);
    if (it != seen.begin()) {
      auto const& w = std::prev(it)->second;
      if (address - w->base < std::max<std::size_t>(w->bytes, 1)) {
        // Freed since (its header says so, through our mapping): ask again below.
        if (w->mapped && !block_alive(w->mapped.get())) {
          seen.erase(std::prev(it));
        } else {
          // Out of its bounds, or private memory: messages, which check and report.
          return w->mapped && w->holds(address, n) ? w : nullptr;
        }
      }
    }
  }
  // First access to this segment: ask its owner which it is (never on the MPI thread,
  // which must not wait for a reply it would itself receive).
  auto& thread = mpi_thread::get();
  if (thread.on_thread()) return nullptr;
  sweep_windows();
  auto reply = std::make_shared<bytes>();
  auto ev = event::pending();
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  thread.post([this, rank, address, ev, reply] {
    auto req = begin({.ev = ev,
                      .rank = rank,
                      .what = "segment lookup on rank " + std::to_string(rank),
                      .result = reply});
    send(rank, {.kind = am::segment, .id = req, .a = address}, nullptr, 0);
  });
  try {
    ev.wait();
  } catch (...) {
    return nullptr;  // the operation itself goes by message and reports the problem
  }
  segment_info info;
  if (reply->size() != sizeof info) return nullptr;
  std::memcpy(&info, reply->data(), sizeof info);
  if (info.bytes == 0) return nullptr;  // in no segment: the message path reports it
  auto w = std::make_shared<window>();
  w->base = info.base;
  w->bytes = info.bytes;
  if (info.fd >= 0) w->mapped = map_segment(rank, block_handle{info.base, info.fd, info.serial});
  {
    std::lock_guard lock(windows_mutex_);
    auto& seen = windows_[static_cast<std::size_t>(rank)];
    // Replaces what overlapped it (segments freed since, whose addresses it reuses).
    auto first = seen.lower_bound(info.base);
    if (first != seen.begin() &&
        std::prev(first)->second->base + std::max<std::size_t>(std::prev(first)->second->bytes, 1) >
            info.base)
      --first;
    auto past = seen.lower_bound(info.base + std::max<std::size_t>(info.bytes, 1));
    seen.erase(first, past);
    seen.emplace(info.base, w);
  }
  return w->mapped && w->holds(address, n) ? w : nullptr;
}

void engine::sweep_windows() {
  // A mapping keeps a freed segment's pages: let go of the segments their owners freed.
  std::lock_guard lock(windows_mutex_);
  for (auto& seen : windows_)
    for (auto it = seen.begin(); it != seen.end();)
      if (it->second->mapped && !block_alive(it->second->mapped.get()))
        it = seen.erase(it);
      else
        ++it;
}

std::size_t engine::mapped_windows() {
  std::lock_guard lock(windows_mutex_);
  std::size_t n = 0;
  for (auto const& seen : windows_)
    for (auto const& [base, w] : seen) n += w->mapped ? 1 : 0;
  return n;
}

event engine::device_copy(bool to_device, void* host, std::uintptr_t device, std::size_t n,
                          device_range where) {
  strata::detail::copy_side_desc h{host, n, n, space_id::host, 0};
  strata::detail::copy_side_desc d{reinterpret_cast<void*>(device), n, n, where.space,
                                   where.place_id};
  try {
    return strata::detail::copy_rows(after{}, to_device ? d : h, to_device ? h : d, n, 1, 1);
  } catch (...) {
    return event::failed(std::current_exception());
  }
}

void engine::after_device_copy(event const& copied, std::function<void(std::string)> then) {
  // The memory layer completes the copy on its own thread: the reply goes from the MPI
  // thread, like every message of this engine.
  copied.then([this, copied, then = std::move(then)]() mutable {
    std::string problem;
    if (auto err = copied.error()) {
      try {
        std::rethrow_exception(err);
      } catch (std::exception const& e) {
        problem = std::string("the device copy failed on rank ") + std::to_string(rank_) + ": " +
                  e.what();
      } catch (...) {
        problem = "the device copy failed on rank " + std::to_string(rank_);
      }
    }
    mpi_thread::get().post([then = std::move(then), problem] { then(problem); });
  });
}

void engine::reply_ack(int to, std::uint64_t id, std::string const& problem) {
  if (problem.empty()) return send(to, {.kind = am::ack_ok, .id = id}, nullptr, 0);
  send(to, {.kind = am::ack_err, .id = id}, problem.data(), problem.size());
}

event engine::direct(after const& deps, std::function<void()> op) {
  auto ready = when_all(deps);
  auto* rs = ready.state();
  auto run = [rs, op = std::move(op)]() -> std::exception_ptr {
    if (auto err = rs ? rs->error() : nullptr) return err;
    try {
      op();
    } catch (...) {
      return std::current_exception();
    }
    return nullptr;
  };
  if (ready.ready()) {
    auto err = run();
    return err ? event::failed(err) : event::completed();
  }
  // Outstanding until it has run: ~runtime waits for it, so the engine outlives it.
  outstanding_.fetch_add(1, std::memory_order_acq_rel);
  auto ev = event::pending();
  ready.then([this, ev, run = std::move(run)]() mutable {
    auto err = run();
    outstanding_.fetch_sub(1, std::memory_order_acq_rel);
    ev.complete(err);
  });
  return ev;
}

}  // namespace strata::dist::detail
