// Machine descriptions as JSON: what `strata info --json` prints, what a later MPI layer
// exchanges between ranks, and what tests load to describe machines that are not here.
#pragma once

#include <strata/machine/place.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace strata {

/// The tree rooted at `root` as a JSON document:
/// {"format": "strata-machine", "version": 1, "machine": {...}, "summary": {...},
///  "notes": [...]}. Every node has its type, kind, isa, name and children; the rest
/// (os_index, capacity, cache_level, link, speed, rank, attributes) only when set. Bytes
/// that are not UTF-8 (a host name from the topology) become U+FFFD.
std::string to_json(place const& root, std::vector<std::string> const& notes = {}, int indent = 2);

/// Rebuilds a machine from `to_json`'s document (or from the bare "machine" node). The
/// result is a new machine with the same places. Throws `strata::parse_error` naming the
/// JSON path of the first problem.
place machine_from_json(std::string_view text);

}  // namespace strata
