// The place tree as text, in the manner of hwloc's lstopo.
#pragma once

#include <strata/machine/place.hpp>

#include <cstdint>
#include <string>

namespace strata {

struct text_options {
  /// Fold chains of single children onto one line ("L2 0 + L1d 0 + Core 0 + PU 0").
  bool collapse = true;
};

/// One line per place, indented by depth, with capacities, OS indices and device details.
std::string to_text(place const& root, text_options const& options = {});

/// "23 GiB", "1.5 MiB", "512 B".
std::string format_bytes(std::uint64_t bytes);

}  // namespace strata
