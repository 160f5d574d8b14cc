#include <strata/config.hpp>
#include <strata/error.hpp>
#include <strata/machine/json.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>

namespace strata {
namespace {

using json = nlohmann::ordered_json;

json node_to_json(place const& p) {
  auto const& info = p.info();
  json j;
  j["type"] = to_string(info.type);
  j["kind"] = to_string(kind_of(info.type));
  j["isa"] = to_string(info.isa);
  j["name"] = info.name;
  if (info.os_index >= 0) j["os_index"] = info.os_index;
  if (info.capacity != 0) j["capacity"] = info.capacity;
  if (info.cache_level != 0) j["cache_level"] = info.cache_level;
  if (info.link != link_model{})
    j["link"] = {{"bandwidth", info.link.bandwidth}, {"latency", info.link.latency}};
  if (info.speed != 1.0) j["speed"] = info.speed;
  if (info.rank != 0) j["rank"] = info.rank;
  if (!info.attributes.empty()) {
    json attrs = json::object();
    for (auto const& [k, v] : info.attributes) attrs[k] = v;
    j["attributes"] = std::move(attrs);
  }
  json children = json::array();
  for (auto const& c : p.children()) children.push_back(node_to_json(c));
  j["children"] = std::move(children);
  return j;
}

// Counts of one machine tree (or a rank's copy of one).
json machine_summary(place const& root) {
  json s = json::object();
  auto all = root.descendants();
  auto count = [&](char const* key, auto&& match) {
    s[key] = std::count_if(all.begin(), all.end(), match);
  };
  auto of_type = [](place_type t) { return [t](place const& p) { return p.type() == t; }; };
  auto device_of = [](isa a) {
    return [a](place const& p) { return p.type() == place_type::device && p.isa() == a; };
  };
  count("packages", of_type(place_type::package));
  count("numa_nodes", of_type(place_type::host_memory));
  count("cores", of_type(place_type::core));
  count("pus", of_type(place_type::pu));
  count("cuda_devices", device_of(isa::cuda));
  count("sim_devices", device_of(isa::sim));
  std::uint64_t host_bytes = 0;
  for (auto const& m : root.descendants(place_type::host_memory)) host_bytes += m.capacity();
  s["host_memory_bytes"] = host_bytes;
  return s;
}

// Which hardware a place of a rank's machine copy is, so that ranks on one host that see
// it (each bound to its own slice, or all to the whole machine) count it once: its OS
// number, or its first PU's for places without one (cores, packages), or its path.
std::string hardware_key(place const& p) {
  auto const info = p.info();
  std::int32_t os = info.os_index;
  if (os < 0)
    for (auto const& pu : p.descendants(place_type::pu))
      if (pu.info().os_index >= 0) {
        os = pu.info().os_index;
        break;
      }
  return fmt::format("{}/{}/{}", static_cast<int>(info.type), static_cast<int>(info.isa),
                     os >= 0 ? std::to_string(os) : p.path());
}

// The summary of a machine, or of a cluster (dist::runtime::cluster(): one child per
// rank, each holding a copy of its process's machine, with the host it runs on). Ranks on
// one host share its hardware: a package, NUMA node, core, PU or CUDA device counts once
// per host however many ranks see it (summing every rank's copy counted 3 packages and
// 42 GiB for 3 ranks on a 1-package, 14 GiB machine); sim devices are each process's own
// and count per rank. Hosts add up.
json summary_of(place const& root) {
  if (root.type() != place_type::cluster) return machine_summary(root);
  std::set<std::pair<std::string, std::string>> seen;  // (host, hardware_key)
  std::map<std::string, std::uint64_t> counts;
  std::set<std::string> hosts;
  std::uint64_t host_bytes = 0;
  for (auto const& r : root.children()) {
    auto const info = r.info();
    auto const h = std::find_if(info.attributes.begin(), info.attributes.end(),
                                [](auto const& a) { return a.first == "host"; });
    std::string const host =
        h == info.attributes.end() ? "rank " + std::to_string(info.rank) : h->second;
    hosts.insert(host);
    for (auto const& p : r.descendants()) {
      char const* key = nullptr;
      switch (p.type()) {
        case place_type::package:
          key = "packages";
          break;
        case place_type::host_memory:
          key = "numa_nodes";
          break;
        case place_type::core:
          key = "cores";
          break;
        case place_type::pu:
          key = "pus";
          break;
        case place_type::device:
          if (p.isa() == isa::sim) ++counts["sim_devices"];
          if (p.isa() == isa::cuda) key = "cuda_devices";
          break;
        default:
          break;
      }
      if (!key || !seen.emplace(host, hardware_key(p)).second) continue;
      ++counts[key];
      if (p.type() == place_type::host_memory) host_bytes += p.capacity();
    }
  }
  json s = json::object();
  for (char const* key : {"packages", "numa_nodes", "cores", "pus", "cuda_devices", "sim_devices"})
    s[key] = counts[key];
  s["host_memory_bytes"] = host_bytes;
  s["ranks"] = root.children().size();
  s["hosts"] = hosts.size();
  return s;
}

struct reader {
  [[noreturn]] static void fail(std::string const& path, std::string const& what) {
    throw parse_error(fmt::format("machine JSON: at {}: {}", path, what));
  }

  template <class T>
  static T get(json const& j, char const* key, std::string const& path, T fallback) {
    auto it = j.find(key);
    if (it == j.end()) return fallback;
    try {
      return it->get<T>();
    } catch (nlohmann::json::exception const&) {
      fail(path + "." + key, fmt::format("expected a value of the right type, got {}", it->dump()));
    }
  }

  // Integers are checked, not cast: -1 is no capacity and 1e20 no OS index.
  template <class T>
  static T integer(json const& j, char const* key, std::string const& path, T fallback,
                   long double lo, long double hi) {
    auto it = j.find(key);
    if (it == j.end()) return fallback;
    if (!it->is_number_integer())
      fail(path + "." + key, fmt::format("expected an integer, got {}", it->dump()));
    long double v = it->is_number_unsigned() ? static_cast<long double>(it->get<std::uint64_t>())
                                             : static_cast<long double>(it->get<std::int64_t>());
    if (v < lo || v > hi)
      fail(path + "." + key, fmt::format("{} is out of range; expected {} to {}", it->dump(),
                                         static_cast<double>(lo), static_cast<double>(hi)));
    return static_cast<T>(v);
  }

  static double number(json const& j, char const* key, std::string const& path, double fallback,
                       bool positive) {
    auto it = j.find(key);
    if (it == j.end()) return fallback;
    if (!it->is_number())
      fail(path + "." + key, fmt::format("expected a number, got {}", it->dump()));
    double v = it->get<double>();
    if (!(positive ? v > 0 : v >= 0) || !std::isfinite(v))
      fail(path + "." + key, fmt::format("{} is invalid; expected a finite number {} 0", it->dump(),
                                         positive ? ">" : ">="));
    return v;
  }

  static place_info info(json const& j, std::string const& path) {
    if (!j.is_object()) fail(path, "expected an object describing a place");
    place_info info;
    auto type_name = get<std::string>(j, "type", path, "");
    auto type = parse_place_type(type_name);
    if (!type)
      fail(path + ".type", fmt::format("unknown place type \"{}\"; expected one of cluster, rank, "
                                       "machine, package, die, group, cache, core, pu, device, "
                                       "compute_unit, host_memory, device_memory",
                                       type_name));
    info.type = *type;
    if (auto kind = get<std::string>(j, "kind", path, std::string(to_string(kind_of(*type))));
        kind != to_string(kind_of(*type)))
      fail(path + ".kind", fmt::format("kind \"{}\" contradicts type \"{}\" (a {})", kind,
                                       type_name, to_string(kind_of(*type))));
    auto isa_name = get<std::string>(j, "isa", path, "host");
    auto arch = parse_isa(isa_name);
    if (!arch)
      fail(path + ".isa", fmt::format("unknown isa \"{}\"; expected host, cuda or sim", isa_name));
    info.isa = *arch;
    info.name = get<std::string>(j, "name", path, "");
    info.os_index = integer<std::int32_t>(j, "os_index", path, -1, -1, INT32_MAX);
    info.capacity = integer<std::uint64_t>(j, "capacity", path, 0, 0, 1.8e19L);
    info.cache_level = integer<std::uint8_t>(j, "cache_level", path, 0, 0, 16);
    if (auto it = j.find("link"); it != j.end()) {
      if (!it->is_object()) fail(path + ".link", "expected an object with bandwidth and latency");
      info.link.bandwidth = number(*it, "bandwidth", path + ".link", 0.0, false);
      info.link.latency = number(*it, "latency", path + ".link", 0.0, false);
    }
    info.speed = number(j, "speed", path, 1.0, true);
    info.rank = integer<std::int32_t>(j, "rank", path, 0, 0, INT32_MAX);
    if (auto it = j.find("attributes"); it != j.end()) {
      if (!it->is_object()) fail(path + ".attributes", "expected an object of strings");
      for (auto const& [k, v] : it->items()) {
        if (!v.is_string()) fail(path + ".attributes." + k, "expected a string");
        info.attributes.emplace_back(k, v.get<std::string>());
      }
    }
    return info;
  }

  // Real machines are a dozen levels deep (cluster, rank, machine, package, caches, core,
  // PU); a cap keeps a hostile document from exhausting the stack.
  static constexpr int max_depth = 64;

  static void children(machine_builder& b, machine_builder::node_id at, json const& j,
                       std::string const& path, int depth = 0) {
    if (depth >= max_depth)
      fail(path, fmt::format("the tree is deeper than {} levels; expected a machine description",
                             max_depth));
    auto it = j.find("children");
    if (it == j.end()) return;
    if (!it->is_array()) fail(path + ".children", "expected an array of places");
    for (std::size_t i = 0; i < it->size(); ++i) {
      auto child_path = fmt::format("{}.children[{}]", path, i);
      auto const& c = (*it)[i];
      machine_builder::node_id id = 0;
      try {
        id = b.add(at, info(c, child_path));
      } catch (invalid_argument const& e) {
        fail(child_path, e.what());
      }
      children(b, id, c, child_path, depth + 1);
    }
  }
};

}  // namespace

std::string to_json(place const& root, std::vector<std::string> const& notes, int indent) {
  json doc;
  doc["format"] = "strata-machine";
  doc["version"] = 1;
  doc["strata"] = version();
  doc["machine"] = node_to_json(root);
  doc["summary"] = summary_of(root);
  doc["notes"] = notes;
  // Text from the topology (a host name, an XML file's info) need not be UTF-8: replaced.
  return doc.dump(indent, ' ', false, json::error_handler_t::replace);
}

place machine_from_json(std::string_view text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (nlohmann::json::parse_error const& e) {
    throw parse_error(fmt::format("machine JSON: not valid JSON: {}", e.what()));
  }
  std::string path = "machine";
  json const* node = &doc;
  if (doc.is_object() && doc.contains("machine")) {
    if (auto v = reader::get<int>(doc, "version", "document", 1); v != 1)
      reader::fail("version", fmt::format("version {} is not supported; expected 1", v));
    node = &doc["machine"];
  }
  machine_builder b(reader::info(*node, path));
  reader::children(b, b.root(), *node, path);
  return b.build();
}

}  // namespace strata
