// Active messages between ranks of one node through shared-memory rings (docs/dist.md
// "Active messages on one node"). Phalanx §IV-C sends a remote task as an active message;
// between two processes of one node, MPI's own path for such a message (MPI_Isend, the
// receiver's MPI_Improbe and MPI_Mrecv, MPI_Testsome for the send) was a third of a
// remote call's round trip. Here each rank owns one memory file holding a byte ring per
// peer of its node, written by that peer (the only producer: whoever holds the peer's
// progress token) and read by this rank (whoever holds this rank's token). A message is a
// sequence of records; the receiver handles it in place when it is one record.
//
// Every active message from a rank to a peer of its node goes through the ring, so their
// order is kept; the bulk data of large puts and gets still travels as MPI messages
// matched by tag, which needs no order. A message that does not fit waits in a queue of
// its sender (never a blocking send: two ranks both full would otherwise wait for each
// other) and goes out in the following progress rounds.
#pragma once

#include <strata/dist/async.hpp>
#include <strata/dist/direct.hpp>

#include "dist/direct.hpp"
#include "dist/ring.hpp"

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace strata::dist::detail {

class am_rings {
 public:
  /// Data bytes of one ring (per direction and pair; the pages are touched as used, and
  /// a rank maps only its own ring of each peer's block: k ranks on a node hold
  /// k (k - 1) rings, 3.8 MiB at 8 ranks, 1 GiB at 128, once every pair has talked).
  static constexpr std::size_t capacity = ring_capacity;

  /// Collective over `comm` (world order, on the MPI thread at start-up): makes this
  /// rank's rings, exchanges their handles, maps the peers' rings. Rings are used by
  /// every rank or by none (the outcome is agreed): when `peers.map` is off, a rank is
  /// alone on its node or a mapping fails, active() is false and messages use MPI.
  am_rings(MPI_Comm comm, int rank, direct_peers const& peers);
  ~am_rings();
  am_rings(am_rings const&) = delete;
  am_rings& operator=(am_rings const&) = delete;

  bool active() const noexcept { return active_; }
  /// Whether this rank has rings (active, and other ranks share its node).
  bool any() const noexcept { return active_ && !in_.empty(); }
  /// Every rank of the job shares this node and rings are active: no active message
  /// arrives through MPI.
  bool node_only() const noexcept { return node_only_; }
  /// Whether messages to world rank `to` go through a ring.
  bool reaches(int to) const noexcept {
    return active_ && to >= 0 && static_cast<std::size_t>(to) < out_.size() &&
           out_[static_cast<std::size_t>(to)].ring.ctrl != nullptr;
  }

  // --- the progress token's holder only --------------------------------------------
  /// Sends the message `a` (na bytes) followed by `b` (nb bytes) to `to` (reaches(to)):
  /// into the ring now (true), or, what does not fit, into the queue (flush sends it).
  bool send(int to, void const* a, std::size_t na, void const* b, std::size_t nb);
  /// Moves queued messages into their rings as space allows; whether any moved.
  bool flush();
  /// Whether messages wait in a queue.
  bool queued() const noexcept { return queued_ > 0; }
  /// Messages received so far (any thread may read it: a diagnostic).
  std::uint64_t received() const noexcept { return received_.load(std::memory_order_relaxed); }
  /// Calls handle(source, data, bytes) for up to `limit` incoming messages, each once it
  /// is complete (in place in the ring, or assembled from its records). Returns how
  /// many. `handle` must not call receive (it may send).
  template <class Handle>
  int receive(Handle&& handle, int limit);

 private:
  struct outgoing {
    ring_writer ring;            // ring.ctrl null: no ring to this rank
    std::deque<bytes> waiting;   // queued messages (the first may be partly sent)
    std::size_t first_sent = 0;  // bytes of waiting.front() already in the ring
  };

  bool active_ = false;
  bool node_only_ = false;
  std::vector<outgoing> out_;    // by world rank; ctrl null: no ring
  std::vector<ring_reader> in_;  // one per peer of this node
  std::size_t first_in_ = 0;     // where receive starts: each ring in turn goes first
  long queued_ = 0;
  std::atomic<std::uint64_t> received_{0};
  shared_block mine_;                        // the rings others write to this rank
  std::vector<std::shared_ptr<void>> maps_;  // this rank's ring in each peer's block
};

template <class Handle>
int am_rings::receive(Handle&& handle, int limit) {
  // Each round starts at the next ring, so one busy peer cannot hold the others back.
  // (Wrapped by comparison: a division per ring was a fifth of an empty round.)
  std::size_t const n = in_.size();
  if (n == 0) return 0;
  if (++first_in_ >= n) first_in_ = 0;
  // Counted when the round ends, also by a handler's exception (the messages handled
  // before it were taken); only the token's holder writes the count: no read-modify-write.
  struct count {
    std::atomic<std::uint64_t>& total;
    int got = 0;
    ~count() {
      if (got)
        total.store(total.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(got),
                    std::memory_order_relaxed);
    }
  } c{received_};
  for (std::size_t k = 0, i = first_in_; k < n && c.got < limit; ++k) {
    c.got += in_[i].read(handle, limit - c.got);
    if (++i == n) i = 0;
  }
  return c.got;
}

}  // namespace strata::dist::detail
