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
    : machine(std::move(m)), this_system(system), generation(++generations) {
  for (auto const& pu : machine.descendants(place_type::pu))
    if (pu.isa() == isa::host) slot_os_index.push_back(pu.os_index());
  for (auto const& dev : machine.descendants(place_type::device)) {
    if (dev.isa() != isa::sim) continue;
    auto mems = dev.memories();
    sims.push_back(
        {dev, mems.empty() ? 0u : mems.front().id(), static_cast<int>(dev.processors().size())});
  }
  sim_devices_.resize(sims.size());
  // Freeing sim memory waits for its device's queued work (see memory/registry.hpp).
  device_release_fence.store(&sim_release_fence, std::memory_order_release);
}

void exec_state::sim_release_fence(std::uint32_t memory, std::uint64_t machine_key) {
  if (!runtime::active() || machine_key != current_machine_key()) return;
  auto& exec = current_exec();
  int index = exec.sim_of_memory(memory);
  if (index < 0) return;
  sim_device* device = nullptr;
  {
    std::lock_guard lock(exec.sims_mutex_);
    if (!exec.shutting_down_) device = exec.sim_devices_[static_cast<std::size_t>(index)].get();
  }
  if (device && !device->is_own_thread()) device->release_fence();
}

sim_device& exec_state::sim(int index) {
  std::lock_guard lock(sims_mutex_);
  if (shutting_down_)
    throw error("sim device " + sims.at(static_cast<std::size_t>(index)).device.name() +
                ": work arrived while the runtime shuts down");
  auto& d = sim_devices_.at(static_cast<std::size_t>(index));
  if (!d) {
    auto const& e = sims[static_cast<std::size_t>(index)];
    auto const& info = e.device.info();
    d = std::make_unique<sim_device>(sim_params{e.device.name(), info.link.bandwidth,
                                                info.link.latency, info.speed,
                                                e.units > 0 ? e.units : 1});
  }
  return *d;
}

int exec_state::sim_of_memory(std::uint32_t memory) const noexcept {
  for (std::size_t i = 0; i < sims.size(); ++i)
    if (sims[i].memory == memory) return static_cast<int>(i);
  return -1;
}

int exec_state::sim_of_place(place const& p) const {
  for (std::size_t i = 0; i < sims.size(); ++i)
    if (sims[i].device.unsliced().contains(p.unsliced())) return static_cast<int>(i);
  return -1;
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
    std::vector<sim_device*> started;
    {
      std::lock_guard lock(sims_mutex_);
      for (auto& d : sim_devices_)
        if (d) started.push_back(d.get());
    }
    for (auto* d : started) busy = d->wait_idle() || busy;
    device_backend_state* gpu = nullptr;
    {
      std::lock_guard lock(cuda_mutex);
      gpu = cuda.get();
    }
    if (gpu) busy = gpu->wait_idle() || busy;
  }
  std::vector<std::unique_ptr<sim_device>> ending;
  {
    std::lock_guard lock(sims_mutex_);
    shutting_down_ = true;
    ending.swap(sim_devices_);
  }
  ending.clear();  // joins the devices' threads
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

std::pair<int, slot_set const*> exec_state::host_slots(place const& p) {
  std::pair key{place_access::tree(p), place_access::index(p)};
  std::lock_guard lock(mutex_);
  if (auto it = cache_.find(key); it != cache_.end()) return {it->second.threads, it->second.slots};
  std::vector<std::uint64_t> bits;
  int threads = 0;
  for (auto const& pu : p.descendants(place_type::pu)) {
    if (pu.isa() != isa::host) continue;
    auto slot = static_cast<std::size_t>(pu.logical_index());
    if (bits.size() <= slot / 64) bits.resize(slot / 64 + 1, 0);
    bits[slot / 64] |= std::uint64_t{1} << (slot % 64);
    ++threads;
  }
  // Distinct sets are few (one per group of PUs); places that name the same PUs share one.
  auto& stored = set_of_bits_[bits];
  if (!stored) stored = &sets_.emplace_back(bits);
  // A bounded cache: programs that make many slices re-resolve the rare old ones.
  if (cache_.size() > 256) cache_.clear();
  cache_.emplace(key, cached{p, threads, stored});
  return {threads, stored};
}

}  // namespace strata::detail
