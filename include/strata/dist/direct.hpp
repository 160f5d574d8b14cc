// Direct reads of another rank's memory on the same node (Linux cross-memory attach,
// process_vm_readv): what dist::copy uses instead of pack + message + unpack when every
// member of the team shares this node. PARRAY §4.13-4.16 makes a copy between two
// distributed types one operation whatever the memories; on one node the receiver can
// gather its elements straight from the senders' arrays, so the sender's pack pass and
// MPI's copy through shared memory both go (docs/dist.md "Copies on one node").
//
// Internal to strata::dist (used by the templates in dist/copy_plan.hpp and dist/array.hpp),
// hence `detail`.
#pragma once

#include <strata/dist/runtime.hpp>
#include <strata/exec/event.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

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

/// What a rank tells its peers about one of its shared blocks (below) so they can map it.
struct block_handle {
  std::uint64_t address = 0;  // where the data starts in the owner's address space
  std::int64_t fd = -1;       // the owner's descriptor of the block's memory file; -1: none
  std::uint64_t serial = 0;   // unique among the owner's blocks, for the peers' cache
};

/// The counts in a shared block's header (below).
enum class block_count { started, pulls_done };

/// Host memory for the local part of a distributed array, zero-filled. When every member
/// of the team shares this node and direct access works it lives in an anonymous memory
/// file (memfd) that the peers can map into their own address space, so a copy on one
/// node reads the source in place, like a load from its own memory (docs/dist.md "Copies
/// on one node"); otherwise, or when the system refuses a memory file, it is private
/// anonymous memory and handle().fd is -1. Move-only; the memory is page-aligned.
class shared_block {
 public:
  shared_block() noexcept = default;
  shared_block(team const& t, std::size_t bytes);
  /// A block for other uses (dist::allocate's segments): in a memory file when `shared`
  /// (and the system allows one), else private; `what` names the caller in errors.
  shared_block(std::size_t bytes, bool shared, char const* what);
  ~shared_block();
  shared_block(shared_block&& o) noexcept;
  shared_block& operator=(shared_block&& o) noexcept;
  shared_block(shared_block const&) = delete;
  shared_block& operator=(shared_block const&) = delete;

  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  block_handle handle() const noexcept;
  /// Counts a copy from this block as its source: the n-th (returned) on every member,
  /// since copies are collective and called in the same order (the number its pulls are
  /// counted by: pulls_done, when_peers_pulled).
  std::uint64_t copy_started() const noexcept;
  /// Says, in the block's header, that this rank has finished taking its elements from
  /// the peers in one more copy from this block's array (it read their blocks, not this
  /// one: the count tells the peers that their blocks are free again).
  void pulls_done() const noexcept;

 private:
  void release() noexcept;
  void* map_ = nullptr;  // the whole mapping: a header page (when shared), then the data
  std::size_t map_bytes_ = 0;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  int fd_ = -1;
  std::uint64_t serial_ = 0;
};

/// Team rank q's block `h` mapped read-only into this process, or null when it has no
/// memory file or mapping it failed (the caller then reads with read_direct). Mappings
/// are cached per block and dropped once their owner frees the block; the pointer keeps
/// its mapping alive while held.
std::shared_ptr<void const> map_peer_block(team const& t, int q, block_handle const& h);

/// Completes (on the MPI thread, which polls it like a request) once every other member q
/// of `t` has counted `n` finished pulls in its block `peers[q]` (shared_block::pulls_done),
/// reading the count through `mapped[q]` (map_peer_block's pointer; null: with
/// process_vm_readv). How a direct copy learns that nobody reads its source any more
/// without a barrier: one word written by each reader, no message.
strata::event when_peers_pulled(team const& t, std::vector<block_handle> peers, std::uint64_t n,
                                std::vector<std::shared_ptr<void const>> mapped);

/// A dist::tensor face's block on one node (dist/tensor.hpp, docs/dist.md "Halo rows on
/// one node"): where the rows its owner sends in its latest exchange are in the owner's
/// memory (the tensor itself) and their bytes, written before the block's `started`
/// count says so. The peer reads them from there with process_vm_readv: one copy.
struct halo_slot {
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> address{0};
};
/// The bytes of a face's block (its halo_slot, a line).
inline constexpr std::size_t halo_block_bytes = 64;
/// halo_slot::bytes of an exchange whose rows could not be made ready (its start failed):
/// the peer fails its half too instead of waiting.
inline constexpr std::uint64_t halo_failed = ~std::uint64_t{0};
/// Exchange `n` of a dist::tensor face with team rank q on this node, after this rank
/// has said where its rows are in its block `mine` and counted the exchange started:
/// completes (polled by the MPI thread, like an MPI request) once q has done the same in
/// its block `peer` (`started` >= n), this rank has copied q's rows into `into` (`bytes`:
/// a different size fails the event) and counted that in `mine` (pulls_done), and q has
/// counted its copy of this rank's rows (they may then be written again, or freed).
/// `peer_mapped`: map_peer_block's pointer to q's block, or null (then read with
/// process_vm_readv). `keep` holds `mine` and `into` alive until the event completes.
strata::event pull_halo(team const& t, int q, shared_block const& mine, block_handle peer,
                        std::shared_ptr<void const> peer_mapped, void* into, std::size_t bytes,
                        std::uint64_t n, std::shared_ptr<void const> keep);
/// Whether arrays of `t` live in memory files the peers map: direct_access(t), and
/// STRATA_DIST_DIRECT is not `read` (which keeps process_vm_readv for every copy).
bool direct_mapping(team const& t);

/// Whether the block whose data a mapping of a peer's block shows at `mapped_data` is
/// still alive (its owner has not freed it: the header's word, seen through the mapping).
bool block_alive(void const* mapped_data) noexcept;

/// How many peers' blocks this process has mapped now (a diagnostic: mappings of freed
/// blocks go at the next copy or allocation).
std::size_t mapped_peer_blocks();

/// Reads `runs` of team rank q's memory, one after another, into `out` (which holds their
/// total bytes). Throws strata::error naming the rank and the system's reason on failure.
void read_direct(team const& t, int q, std::span<remote_run const> runs, void* out);

}  // namespace strata::dist::detail
