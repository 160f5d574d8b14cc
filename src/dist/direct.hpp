// Start-up side of direct (cross-memory attach) reads: which ranks share this node, their
// process ids, and whether process_vm_readv works between them (include/strata/dist/
// direct.hpp has the users' side).
#pragma once

#include <strata/dist/direct.hpp>

#include <mpi.h>

#include <string>
#include <vector>

namespace strata::dist::detail {

struct direct_peers {
  std::vector<long> pids;          // per world rank
  std::vector<std::string> hosts;  // per world rank (MPI_Get_processor_name)
  bool usable = false;             // agreed by every rank
  bool map = false;                // usable, and arrays in memory files the peers map
};

/// Collective over `comm` (world order; called on the MPI thread at start-up): gathers
/// every rank's process id, has each rank read a word from another rank on its node,
/// and agrees (minimum over all ranks) whether direct reads work and are wanted.
direct_peers direct_setup(MPI_Comm comm, int rank, std::vector<std::string> hosts);

/// map_peer_block for world rank `rank`, process `pid` (`writable`: for puts into a
/// dist::allocate segment; the pointer is then writable through a const_cast).
std::shared_ptr<void const> direct_map(long pid, int rank, block_handle const& h,
                                       bool writable = false);

/// Bytes [offset, offset + n) of the data of world rank `rank`'s block `h` (process
/// `pid`), mapped here for reading and writing, outside the cache of peers' blocks and
/// without populating its pages (they are touched as used); null when the system refuses
/// or `h` is not that block. `offset` must be a multiple of the page size: the
/// active-message rings (dist/am_ring.cpp), where each rank maps its own ring only.
std::shared_ptr<void> direct_map_range(long pid, int rank, block_handle const& h,
                                       std::size_t offset, std::size_t n);
/// The system's page size.
std::size_t page_size();

/// Whether world rank `w` (not this one) shares this node and its dist::allocate
/// segments may be mapped here (direct mapping in use).
bool node_peer(int w);
/// Whether some other rank shares this node and direct mapping is in use: then this
/// rank's dist::allocate segments live in memory files.
bool node_has_peers();
/// World rank w's segment block `h`, mapped for reading and writing (null: refused).
std::shared_ptr<void const> map_segment(int w, block_handle const& h);

/// One of the counts in the header of block `h` of process `pid`, read through its mapping
/// here (`mapped_data`, the block's data) or with process_vm_readv.
std::uint64_t direct_count(long pid, block_handle const& h, void const* mapped_data,
                           block_count which);

/// process_vm_readv of `runs` of process `pid` into `out`, in batches of IOV_MAX runs;
/// throws strata::error naming `rank` on failure.
void direct_read(long pid, int rank, std::span<remote_run const> runs, void* out);

}  // namespace strata::dist::detail
