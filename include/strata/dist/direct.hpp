// Direct reads of another rank's memory on the same node (Linux cross-memory attach,
// process_vm_readv): what dist::copy uses instead of pack + message + unpack when every
// member of the team shares this node. PARRAY §4.13-4.16 makes a copy between two
// distributed types one operation whatever the memories; on one node the receiver can
// gather its elements straight from the senders' arrays, so the sender's pack pass and
// MPI's copy through shared memory both go (docs/dist.md "Copies on one node").
//
// Internal to strata::dist (used by the templates in dist/array.hpp), hence `detail`.
#pragma once

#include <strata/dist/runtime.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace strata::dist::detail {

/// A run of bytes in another process's address space.
struct remote_run {
  std::uintptr_t address = 0;
  std::size_t bytes = 0;
};

/// Whether this rank may read every member of `t` directly: they all run on this node,
/// cross-memory attach worked between the ranks when the runtime started, and
/// STRATA_DIST_DIRECT is not 0. Every member gets the same answer (the start-up probe's
/// outcome is agreed by all ranks), so members can choose a protocol by it alone.
bool direct_access(team const& t);

/// Reads `runs` of team rank q's memory, one after another, into `out` (which holds their
/// total bytes). Throws strata::error naming the rank and the system's reason on failure.
void read_direct(team const& t, int q, std::span<remote_run const> runs, void* out);

}  // namespace strata::dist::detail
