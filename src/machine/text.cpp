// lstopo-style rendering of a place tree.
#include <strata/machine/text.hpp>

#include "machine/units.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace strata {
namespace {

std::string label(place const& p) {
  auto const& info = p.info();
  std::vector<std::string> details;
  switch (info.type) {
    case place_type::pu:
    case place_type::host_memory:
      if (info.os_index >= 0) details.push_back(fmt::format("P#{}", info.os_index));
      break;
    case place_type::device:
      details.emplace_back(to_string(info.isa));
      for (auto const& [k, v] : info.attributes)
        if (k == "model" || k == "compute_capability") details.push_back(v);
      if (info.link.bandwidth > 0)
        details.push_back("link " + detail::format_bandwidth(info.link.bandwidth) + ", " +
                          detail::format_duration(info.link.latency));
      if (info.speed != 1.0) details.push_back(fmt::format("speed {:g}", info.speed));
      break;
    default:
      break;
  }
  if (info.capacity != 0) details.push_back(detail::format_bytes(info.capacity));
  auto text = info.name;
  if (info.type == place_type::machine && p.unsliced().is_root() && p.is_root() &&
      !p.descendants(place_type::host_memory).empty()) {
    std::uint64_t total = 0;
    for (auto const& m : p.descendants(place_type::host_memory)) total += m.capacity();
    details.push_back(detail::format_bytes(total) + " host memory");
    for (auto const& [k, v] : info.attributes) {
      if (k == "hostname") text += " \"" + v + "\"";
      if (auto os_total = std::strtoull(v.c_str(), nullptr, 10);
          k == "os_memory_bytes" &&
          static_cast<double>(total) < 0.9 * static_cast<double>(os_total))
        details.push_back("OS reports " + detail::format_bytes(os_total));
    }
  }
  if (!details.empty()) text += fmt::format(" ({})", fmt::join(details, ", "));
  return text;
}

void render(place const& p, int indent, text_options const& options, std::string& out) {
  auto line = label(p);
  auto at = p;
  // Follow single-child chains onto this line, as lstopo does.
  // The root stays on a line of its own, as in lstopo.
  for (auto children = at.children(); options.collapse && indent > 0 && children.size() == 1;
       children = at.children()) {
    at = children.front();
    line += " + " + label(at);
  }
  out += std::string(static_cast<std::size_t>(indent) * 2, ' ') + line + '\n';
  for (auto const& c : at.children()) render(c, indent + 1, options, out);
}

}  // namespace

std::string to_text(place const& root, text_options const& options) {
  std::string out;
  render(root, 0, options, out);
  return out;
}

std::string format_bytes(std::uint64_t bytes) {
  return detail::format_bytes(bytes);
}

}  // namespace strata
