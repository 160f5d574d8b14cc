#include "places.hpp"

#include <algorithm>
#include <charconv>

namespace apps {

std::vector<strata::target> places_named(strata::place const& machine, std::string const& name) {
  std::string what = name;
  std::optional<strata::backend_id> backend;
  if (auto at = name.find('@'); at != std::string::npos) {
    what = name.substr(0, at);
    backend = strata::parse_backend(name.substr(at + 1));
    if (!backend || *backend == strata::backend_id::sim || *backend == strata::backend_id::cuda)
      throw strata::invalid_argument("places '" + name + "': '" + name.substr(at + 1) +
                                     "' is no host backend; expected serial, threads or openmp");
  }
  auto with = [&](strata::place p) {
    return backend ? strata::target(std::move(p), *backend) : strata::target(std::move(p));
  };
  std::vector<strata::target> out;
  auto add_host = [&](int k) {
    auto host = machine.slice(strata::isa::host);
    auto pus = host.processors();
    if (k < 1 || k > static_cast<int>(pus.size()))
      throw strata::invalid_argument(
          "places '" + name + "': " + std::to_string(k) + " host places need " + std::to_string(k) +
          " PUs and this process has " + std::to_string(pus.size()) +
          " (under mpiexec each rank may be bound to one core: mpiexec --bind-to none "
          "lifts that); expected 1 to " +
          std::to_string(pus.size()) + " host places");
    if (k == 1) {
      out.push_back(with(host));
      return;
    }
    for (int g = 0; g < k; ++g) {
      auto lo = pus.size() * static_cast<std::size_t>(g) / static_cast<std::size_t>(k);
      auto hi = pus.size() * static_cast<std::size_t>(g + 1) / static_cast<std::size_t>(k);
      std::vector<strata::place> keep(pus.begin() + static_cast<std::ptrdiff_t>(lo),
                                      pus.begin() + static_cast<std::ptrdiff_t>(hi));
      // With the host's memories (NUMA nodes), so that tensor blocks and arrays on the
      // slice find memory near it (an outside probe: force --places host:2 failed with
      // "no host memory at or near 'Machine'").
      out.push_back(with(machine.slice([keep](strata::place const& p) {
        return (p.kind() == strata::place_kind::memory && p.isa() == strata::isa::host) ||
               std::find(keep.begin(), keep.end(), p) != keep.end();
      })));
    }
  };
  auto add_sim = [&] {
    auto devices = machine.slice(strata::isa::sim).descendants(strata::place_type::device);
    if (devices.empty())
      throw strata::invalid_argument("places '" + name +
                                     "': this machine has no sim devices; add some with "
                                     "--strata-sim-devices=2 (or STRATA_SIM_DEVICES=2)");
    for (auto& d : devices) out.emplace_back(d);
  };
  if (what == "host") {
    add_host(1);
  } else if (what.rfind("host:", 0) == 0) {
    int k = 0;
    auto digits = std::string_view(what).substr(5);
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
    if (ec != std::errc{} || p != digits.data() + digits.size())
      throw strata::invalid_argument("places '" + name + "': '" + std::string(digits) +
                                     "' is not a number of host places");
    add_host(k);
  } else if (what == "sim") {
    add_sim();
  } else if (what == "host+sim") {
    add_host(1);
    add_sim();
  } else {
    throw strata::invalid_argument("places '" + name +
                                   "' is unknown; expected host, host:K, sim or host+sim");
  }
  return out;
}

bool is_device(strata::place const& p) {
  return p.isa() != strata::isa::host || p.type() == strata::place_type::device;
}

int place_threads(strata::target const& t) {
  if (t.backend == strata::backend_id::serial) return 1;
  return std::max<int>(1, static_cast<int>(t.where.processors().size()));
}

double place_share(strata::place const& p) {
  double speed = p.type() == strata::place_type::device ? p.info().speed : 1.0;
  return std::max<double>(1.0, static_cast<double>(p.processors().size())) * speed;
}

std::uint64_t place_l2_bytes(strata::place const& p) {
  if (is_device(p)) return 0;
  std::uint64_t smallest = 0;
  for (auto const& pu : p.processors())
    for (auto up = pu.unsliced().parent(); up; up = up->parent())
      if (up->type() == strata::place_type::cache && up->info().cache_level == 2) {
        if (up->capacity() > 0 && (smallest == 0 || up->capacity() < smallest))
          smallest = up->capacity();
        break;
      }
  return smallest;
}

std::uint32_t host_memory_id(strata::place const& p) {
  auto memories = p.unsliced().root().descendants(strata::place_type::host_memory);
  if (memories.empty())
    throw strata::invalid_argument("host_memory_id: the machine of " + p.name() +
                                   " has no host memory");
  return memories.front().id();
}

std::string describe(strata::target const& t) {
  std::string s;
  if (is_device(t.where)) {
    s = t.where.name();
  } else {
    s = "host[";
    s += std::to_string(t.where.processors().size());
    s += " PU]";
  }
  if (t.backend) {
    s += "@";
    s += strata::to_string(*t.backend);
  }
  return s;
}

}  // namespace apps
