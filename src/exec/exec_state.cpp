#include "exec/exec_state.hpp"

#include "exec/sim/device.hpp"
#include "exec/threads/pool.hpp"
#include "machine/place_tree.hpp"
#include "memory/registry.hpp"

#include <strata/runtime.hpp>

#include <strata/error.hpp>

#include <atomic>

namespace strata::detail {

namespace {
std::atomic<std::uint64_t> generations{0};
}

exec_state::exec_state(place m, bool system)
    : machine(std::move(m)),
      machine_key(std::hash<place>{}(machine)),
      this_system(system),
      generation(++generations),
      sims(machine) {
  for (auto const& pu : machine.descendants(place_type::pu))
    if (pu.isa() == isa::host) slot_os_index.push_back(pu.os_index());
  device_release_fence.store(&sim_release_fence, std::memory_order_release);
}

void exec_state::sim_release_fence(std::uint32_t memory, std::uint64_t machine_key) {
  if (!runtime::active() || machine_key != current_machine_key()) return;
  auto& exec = current_exec();
  int const index = exec.sims.of_memory(memory);
  if (index < 0) return;
  auto* device = exec.sims.started(index);
  if (device && !device->is_own_thread()) device->release_fence();
}

exec_state::~exec_state() {
  device_release_fence.store(nullptr, std::memory_order_release);
  // Joins the CUDA completion workers, whose continuations may use the pool. Taken out
  // under cuda_mutex: a late continuation's device_of reads `cuda` under it, and
  // unique_ptr::reset would write it unlocked.
  std::unique_ptr<device_backend_state> gpu;
  {
    std::lock_guard lock(cuda_mutex);
    gpu = std::move(cuda);
  }
  gpu.reset();
  pool_.reset();
}

void exec_state::drain() {
  // Work anywhere may submit work elsewhere (a completed sim copy starts a pool launch,
  // which queues a sim kernel...): wait until a whole round finds everything idle.
  for (bool busy = true; busy;) {
    if (auto* p = started_pool_.load(std::memory_order_acquire)) p->drain();
    busy = false;
    for (auto* d : sims.started()) busy = d->wait_idle() || busy;
    device_backend_state* gpu = nullptr;
    {
      std::lock_guard lock(cuda_mutex);
      gpu = cuda.get();
    }
    if (gpu) busy = gpu->wait_idle() || busy;
  }
  sims.shut_down();
}

pool& exec_state::get_pool() {
  std::call_once(pool_once_, [this] {
    int devices = 0;
    for (auto const& d : machine.descendants(place_type::device))
      devices += d.isa() != isa::host ? 1 : 0;
    pool_ = std::make_unique<pool>(slot_os_index, this_system, devices);
    started_pool_.store(pool_.get(), std::memory_order_release);
  });
  return *pool_;
}

}  // namespace strata::detail
