// Active-message rings between ranks of one node (src/dist/am_ring.hpp; docs/dist.md
// "Active messages on one node").
#include "dist/am_ring.hpp"

#include "dist/engine.hpp"

#include <algorithm>
#include <new>

namespace strata::dist::detail {

namespace {

// The world ranks other than `r` on r's node, ascending: ring i of r's block is written
// by the i-th of them (both sides compute the same list from the agreed host names).
std::vector<int> node_peers_of(std::vector<std::string> const& hosts, int r) {
  std::vector<int> v;
  for (std::size_t w = 0; w < hosts.size(); ++w)
    if (static_cast<int>(w) != r && hosts[w] == hosts[static_cast<std::size_t>(r)])
      v.push_back(static_cast<int>(w));
  return v;
}

constexpr std::size_t slot_bytes = sizeof(ring_control) + am_rings::capacity;
static_assert((am_rings::capacity & (am_rings::capacity - 1)) == 0,
              "ring positions are taken modulo the capacity");
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the ring's words are shared between processes");

}  // namespace

am_rings::am_rings(MPI_Comm comm, int rank, direct_peers const& peers) {
  auto const size = peers.hosts.size();
  auto const mine = node_peers_of(peers.hosts, rank);
  // Whether this rank can take part: 1 also for a rank alone on its node (it has no ring
  // and uses MPI), 0 when a block or a mapping fails; every rank then uses MPI.
  int ok = peers.map ? 1 : 0;
  block_handle handle{};
  if (ok && !mine.empty()) {
    try {
      mine_ = shared_block(mine.size() * slot_bytes, true, "dist: active-message rings");
      if (mine_.handle().fd < 0) ok = 0;
    } catch (std::exception const&) {
      ok = 0;
    }
    if (ok) {
      for (std::size_t i = 0; i < mine.size(); ++i) {
        char* base = static_cast<char*>(mine_.data()) + i * slot_bytes;
        auto* ctrl = new (base) ring_control;
        in_.push_back({mine[i], ctrl, base + sizeof(ring_control), {}});
      }
      handle = mine_.handle();
    }
  }
  std::vector<block_handle> all(size);
  check_mpi(
      MPI_Allgather(&handle, sizeof handle, MPI_BYTE, all.data(), sizeof handle, MPI_BYTE, comm),
      "MPI_Allgather");
  out_.resize(size);
  for (int w : mine) {
    if (!ok) break;
    auto const& h = all[static_cast<std::size_t>(w)];
    auto m =
        h.fd < 0 ? nullptr : direct_map(peers.pids[static_cast<std::size_t>(w)], w, h, true, false);
    if (!m) {
      ok = 0;
      break;
    }
    auto const theirs = node_peers_of(peers.hosts, w);
    auto const slot =
        static_cast<std::size_t>(std::find(theirs.begin(), theirs.end(), rank) - theirs.begin());
    // Mapped for writing (direct_map's `writable`), handed out as const like every block.
    char* base = const_cast<char*>(static_cast<char const*>(m.get())) + slot * slot_bytes;
    auto& o = out_[static_cast<std::size_t>(w)];
    o.ctrl = reinterpret_cast<ring_control*>(base);
    o.data = base + sizeof(ring_control);
    maps_.push_back(std::move(m));
  }
  int agreed = 0;
  check_mpi(MPI_Allreduce(&ok, &agreed, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  active_ = agreed == 1;
  if (!active_) {
    out_.clear();
    in_.clear();
    maps_.clear();
    mine_ = shared_block();
    return;
  }
  node_only_ = std::all_of(peers.hosts.begin(), peers.hosts.end(),
                           [&](std::string const& h) { return h == peers.hosts.front(); });
}

am_rings::~am_rings() = default;

std::size_t am_rings::write(outgoing& o, char const* a, std::size_t na, char const* b,
                            std::size_t nb, std::size_t offset) {
  // A quarter of the ring at most per record, so a long message streams through it while
  // the receiver takes the first records.
  constexpr std::size_t max_body = capacity / 4;
  std::size_t const total = na + nb;
  std::uint64_t tail = o.ctrl->tail.load(std::memory_order_relaxed);  // the only producer
  while (offset < total) {
    std::size_t const body = std::min(total - offset, max_body);
    std::size_t const record = sizeof(ring_record) + ring_padded(body);
    std::size_t const pos = static_cast<std::size_t>(tail % capacity);
    std::size_t const skip = pos + record > capacity ? capacity - pos : 0;
    std::size_t const need = skip + record;
    if (tail + need - o.head_seen > capacity) {
      o.head_seen = o.ctrl->head.load(std::memory_order_acquire);
      if (tail + need - o.head_seen > capacity) break;  // full: the rest waits
    }
    if (skip) {
      ring_record const s{static_cast<std::uint32_t>(skip - sizeof(ring_record)), ring_skip};
      std::memcpy(o.data + pos, &s, sizeof s);
    }
    char* to = o.data + (skip ? 0 : pos);
    ring_record const r{static_cast<std::uint32_t>(body), offset + body == total ? ring_last : 0};
    std::memcpy(to, &r, sizeof r);
    to += sizeof r;
    std::size_t left = body, at = offset;
    if (at < na) {
      std::size_t const k = std::min(left, na - at);
      std::memcpy(to, a + at, k);
      to += k;
      at += k;
      left -= k;
    }
    if (left) std::memcpy(to, b + (at - na), left);
    tail += need;
    offset += body;
    // Each record as soon as it is written: the receiver may start on a long message.
    o.ctrl->tail.store(tail, std::memory_order_release);
  }
  return offset;
}

void am_rings::send(int to, void const* a, std::size_t na, void const* b, std::size_t nb) {
  auto& o = out_[static_cast<std::size_t>(to)];
  auto const* ca = static_cast<char const*>(a);
  auto const* cb = static_cast<char const*>(b);
  std::size_t sent = 0;
  if (o.waiting.empty()) {
    sent = write(o, ca, na, cb, nb, 0);
    if (sent == na + nb) return;
  }
  // Behind the queued ones (order), or what did not fit.
  bytes rest(na + nb - sent);
  auto* p = reinterpret_cast<char*>(rest.data());
  if (sent < na) {
    std::memcpy(p, ca + sent, na - sent);
    p += na - sent;
    if (nb) std::memcpy(p, cb, nb);
  } else if (nb) {
    std::memcpy(p, cb + (sent - na), na + nb - sent);
  }
  o.waiting.push_back(std::move(rest));
  ++queued_;
}

bool am_rings::flush() {
  if (queued_ == 0) return false;
  bool moved = false;
  for (auto& o : out_) {
    while (!o.waiting.empty()) {
      auto& m = o.waiting.front();
      std::size_t const was = o.first_sent;
      o.first_sent =
          write(o, reinterpret_cast<char const*>(m.data()), m.size(), nullptr, 0, o.first_sent);
      moved = moved || o.first_sent != was;
      if (o.first_sent < m.size()) break;
      o.waiting.pop_front();
      o.first_sent = 0;
      --queued_;
    }
  }
  return moved;
}

}  // namespace strata::dist::detail
