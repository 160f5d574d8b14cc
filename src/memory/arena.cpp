// Arenas and the multiarch allocator (Ripple §5.1): the out-of-line parts: error
// messages, and the per-thread and per-device arenas of a multiarch_allocator.
#include <strata/detail/features.hpp>
#include <strata/memory/arena.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace strata {

namespace detail {

namespace {

std::string arena_location(std::uint32_t place_id) {
  try {
    return "'" + place_of_id(place_id).path() + "'";
  } catch (error const&) {
    return "place id " + std::to_string(place_id);  // no runtime to name it
  }
}

}  // namespace

void arena_exhausted(std::uint32_t place_id, space_id space, std::size_t requested,
                     std::size_t alignment, std::size_t used, std::size_t capacity) {
  if (capacity == 0)
    throw invalid_argument(fmt::format(
        "arena::allocate: the {} arena is empty (default-constructed or moved from); expected an "
        "arena constructed with a place and a capacity",
        to_string(space)));
  throw out_of_memory(fmt::format(
      "arena::allocate: {} bytes (aligned to {}) do not fit in the {} arena at {}: {} of its {} "
      "bytes are used, {} are left; reset() the arena or give it a larger capacity",
      requested, alignment, to_string(space), arena_location(place_id), used, capacity,
      capacity - std::min(used, capacity)));
}

void arena_bad_alignment(std::size_t alignment, std::size_t minimum) {
  throw invalid_argument(fmt::format(
      "arena::allocate: alignment {} is invalid; expected a power of two of at least {} "
      "(the type's own alignment)",
      alignment, minimum));
}

void arena_empty_capacity(place const& where) {
  throw invalid_argument(
      fmt::format("arena: a capacity of 0 bytes at '{}' is invalid; expected at least 1 byte",
                  where.valid() ? where.path() : std::string("(empty place)")));
}

// What a multiarch_allocator owns. Shared (not embedded in the allocator) so that a
// thread's cache can hold a weak reference: at thread exit it hands its arena back only
// if the allocator still exists.
struct multiarch_state {
  place where;
  std::size_t cpu_bytes = 0;
  std::size_t device_bytes = 0;
  std::uint64_t id = 0;  // unique per allocator for the life of the process

  std::mutex mutex;
  std::vector<std::unique_ptr<arena<host_space>>> cpu;  // every thread's arena, ever
  // Arenas of threads that exited, handed to the next threads that ask. Its capacity is
  // kept at cpu.size(), so a thread's exit never allocates.
  std::vector<arena<host_space>*> idle;
  std::map<std::uint32_t, std::unique_ptr<arena<sim_space>>> sim;  // by memory id
  std::map<std::uint32_t, std::unique_ptr<arena<cuda_space>>> cuda;

  template <class Space>
  auto& devices() {
    if constexpr (Space::id == space_id::sim)
      return sim;
    else
      return cuda;
  }
};

}  // namespace detail

namespace {

// Numbers, not addresses, identify allocators in the thread caches: an address is
// reused by the next allocator built in the same place (a loop's stack slot), a number
// never is, so a stale entry can never be taken for a live allocator.
std::atomic<std::uint64_t> next_allocator_id{1};

struct cached_arena {
  std::uint64_t owner;
  std::weak_ptr<detail::multiarch_state> state;
  arena<host_space>* held;  // owned by *state; dereferenced only while it lives
};

struct thread_cache {
  std::vector<cached_arena> entries;

  thread_cache() = default;
  thread_cache(thread_cache const&) = delete;
  thread_cache& operator=(thread_cache const&) = delete;
  // At thread exit, each live allocator gets this thread's arena back for a later
  // thread (memory handed out from it stays valid: it is not reset).
  ~thread_cache() {
    for (auto& e : entries)
      if (auto s = e.state.lock()) {
        std::lock_guard lock(s->mutex);
        s->idle.push_back(e.held);  // capacity reserved: does not throw
      }
  }
};

thread_local thread_cache this_thread_cache;

// The device memory of `p` (a device, its memory or one of its compute units) for an
// arena of `space`, or an error saying what `p` is and what was expected.
place device_memory_of(place const& p, space_id space, place const& where) {
  constexpr char const* expected = "expected a device, its memory or one of its compute units";
  if (!p.valid())
    throw invalid_argument(
        fmt::format("multiarch_allocator::device: the place is empty; {}", expected));
  if (!p.same_machine(where))
    throw invalid_argument(
        fmt::format("multiarch_allocator::device: '{}' is not part of the machine of this "
                    "allocator's place '{}'; {} of that machine",
                    p.path(), where.path(), expected));
  place memory;
  if (p.kind() == place_kind::memory) {
    memory = p;
  } else if (p.type() == place_type::device || p.type() == place_type::compute_unit) {
    auto candidates = p.type() == place_type::device ? p.memories() : p.memories_above();
    for (auto const& m : candidates)
      if (m.type() == place_type::device_memory) {
        memory = m;
        break;
      }
  }
  if (!memory.valid() || memory.type() != place_type::device_memory)
    throw invalid_argument(
        fmt::format("multiarch_allocator::device: '{}' is a {} place of ISA {}; {}", p.path(),
                    to_string(p.type()), to_string(p.isa()), expected));
  if (memory.isa() == isa::cuda && !STRATA_ENABLE_CUDA)
    throw not_supported(fmt::format(
        "multiarch_allocator::device: '{}' is CUDA memory, and this libstrata was built without "
        "CUDA; rebuild with STRATA_ENABLE_CUDA=ON, or use a sim device",
        memory.path()));
  auto const wanted = space == space_id::sim ? isa::sim : isa::cuda;
  if (memory.isa() != wanted)
    throw invalid_argument(fmt::format(
        "multiarch_allocator::device<{}_space>: '{}' is {} memory; expected a {} device (the "
        "arena of this one is device<{}_space>)",
        to_string(space), memory.path(), to_string(memory.isa()), to_string(wanted),
        to_string(memory.isa())));
  return memory;
}

}  // namespace

multiarch_allocator::multiarch_allocator(place const& where, std::size_t cpu_bytes,
                                         std::size_t device_bytes)
    : state_(std::make_shared<detail::multiarch_state>()) {
  if (!where.valid())
    throw invalid_argument(
        "multiarch_allocator: the place is empty; expected a place of runtime::machine() for "
        "the CPU arenas");
  if (cpu_bytes == 0 || device_bytes == 0)
    throw invalid_argument(
        fmt::format("multiarch_allocator: {} bytes per thread and {} bytes per device are "
                    "invalid; expected at least 1 byte each",
                    cpu_bytes, device_bytes));
  state_->where = where;
  state_->cpu_bytes = cpu_bytes;
  state_->device_bytes = device_bytes;
  state_->id = next_allocator_id.fetch_add(1, std::memory_order_relaxed);
}

multiarch_allocator::~multiarch_allocator() = default;
multiarch_allocator::multiarch_allocator(multiarch_allocator&&) noexcept = default;
multiarch_allocator& multiarch_allocator::operator=(multiarch_allocator&&) noexcept = default;

detail::multiarch_state& multiarch_allocator::state() const {
  if (!state_)
    throw invalid_argument(
        "multiarch_allocator: this allocator was moved from; expected one that owns its arenas");
  return *state_;
}

arena<host_space>& multiarch_allocator::cpu() {
  auto& st = state();
  auto& cache = this_thread_cache;
  for (auto const& e : cache.entries)
    if (e.owner == st.id) return *e.held;

  // First use on this thread: forget allocators that are gone, then take an idle arena
  // or make one (outside the lock: it may be a large allocation).
  std::erase_if(cache.entries, [](cached_arena const& e) { return e.state.expired(); });
  cache.entries.reserve(cache.entries.size() + 1);  // so that the push_back below cannot fail
  arena<host_space>* taken = nullptr;
  {
    std::lock_guard lock(st.mutex);
    if (!st.idle.empty()) {
      taken = st.idle.back();
      st.idle.pop_back();
    }
  }
  if (!taken) {
    auto made = std::make_unique<arena<host_space>>(st.where, st.cpu_bytes);
    std::lock_guard lock(st.mutex);
    st.cpu.push_back(std::move(made));
    st.idle.reserve(st.cpu.size());
    taken = st.cpu.back().get();
  }
  cache.entries.push_back({st.id, state_, taken});
  return *taken;
}

template <device_arena_space Space>
arena<Space>& multiarch_allocator::device(place const& device_or_memory) {
  auto& st = state();
  auto memory = device_memory_of(device_or_memory, Space::id, st.where);
  auto& arenas = st.devices<Space>();
  std::lock_guard lock(st.mutex);
  if (auto it = arenas.find(memory.id()); it != arenas.end()) return *it->second;
  auto made = std::make_unique<arena<Space>>(memory, st.device_bytes);
  return *arenas.emplace(memory.id(), std::move(made)).first->second;
}

template arena<sim_space>& multiarch_allocator::device<sim_space>(place const&);
template arena<cuda_space>& multiarch_allocator::device<cuda_space>(place const&);

void multiarch_allocator::reset_all() {
  auto& st = state();
  std::lock_guard lock(st.mutex);
  for (auto& a : st.cpu) a->reset();
  for (auto& [id, a] : st.sim) a->reset();
  for (auto& [id, a] : st.cuda) a->reset();
}

std::size_t multiarch_allocator::cpu_bytes() const noexcept {
  return state_ ? state_->cpu_bytes : 0;
}
std::size_t multiarch_allocator::device_bytes() const noexcept {
  return state_ ? state_->device_bytes : 0;
}

}  // namespace strata
