#include "exec/sim/fleet.hpp"

#include "exec/sim/device.hpp"

#include <strata/error.hpp>

namespace strata::detail {

sim_fleet::sim_fleet(place const& machine) {
  for (auto const& dev : machine.descendants(place_type::device)) {
    if (dev.isa() != isa::sim) continue;
    auto mems = dev.memories();
    entries_.push_back(
        {dev, mems.empty() ? 0u : mems.front().id(), static_cast<int>(dev.processors().size())});
  }
  devices_.resize(entries_.size());
  ready_ = std::make_unique<std::atomic<sim_device*>[]>(entries_.size());
}

sim_fleet::~sim_fleet() {
  shut_down();
}

sim_device& sim_fleet::device(int index) {
  if (index >= 0 && static_cast<std::size_t>(index) < entries_.size())
    if (auto* d = ready_[static_cast<std::size_t>(index)].load(std::memory_order_acquire);
        d && open_.load(std::memory_order_acquire))
      return *d;
  std::lock_guard lock(mutex_);
  if (shut_down_)
    throw error("sim device " + at(index).device.name() +
                ": work arrived while the runtime shuts down");
  auto& d = devices_.at(static_cast<std::size_t>(index));
  if (!d) {
    auto const& e = at(index);
    auto const& info = e.device.info();
    d = std::make_unique<sim_device>(sim_params{e.device.name(), info.link.bandwidth,
                                                info.link.latency, info.speed,
                                                e.units > 0 ? e.units : 1});
    ready_[static_cast<std::size_t>(index)].store(d.get(), std::memory_order_release);
  }
  return *d;
}

sim_device* sim_fleet::started(int index) {
  std::lock_guard lock(mutex_);
  return shut_down_ ? nullptr : devices_.at(static_cast<std::size_t>(index)).get();
}

std::vector<sim_device*> sim_fleet::started() {
  std::vector<sim_device*> out;
  std::lock_guard lock(mutex_);
  for (auto& d : devices_)
    if (d) out.push_back(d.get());
  return out;
}

void sim_fleet::shut_down() {
  std::vector<std::unique_ptr<sim_device>> ending;
  {
    std::lock_guard lock(mutex_);
    shut_down_ = true;
    open_.store(false, std::memory_order_release);
    for (std::size_t i = 0; i < entries_.size(); ++i)
      ready_[i].store(nullptr, std::memory_order_release);
    ending.swap(devices_);
  }
  ending.clear();  // joins the devices' threads, outside the lock
}

int sim_fleet::of_memory(std::uint32_t memory) const noexcept {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].memory == memory) return static_cast<int>(i);
  return -1;
}

int sim_fleet::of_place(place const& p) const {
  for (std::size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].device.unsliced().contains(p.unsliced())) return static_cast<int>(i);
  return -1;
}

}  // namespace strata::detail
