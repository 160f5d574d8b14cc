// Active-message rings between ranks of one node (src/dist/am_ring.hpp; docs/dist.md
// "Active messages on one node").
#include "dist/am_ring.hpp"

#include "dist/engine.hpp"

#include <strata/error.hpp>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>

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

// A ring's slot in its owner's block: its control words on a page of their own, then
// the data; a page multiple, so that a peer maps its own slot only.
std::size_t slot_bytes() {
  return page_size() + am_rings::capacity;
}

}  // namespace

am_rings::am_rings(MPI_Comm comm, int rank, direct_peers const& peers) {
  // STRATA_DIST_RINGS=0 turns the rings off (on any rank: then on every rank). A bad
  // value on any rank is an error on every rank, agreed through the collectives below
  // (thrown before them, it would leave the others waiting in the first one).
  std::string bad_setting;
  bool wanted = true;
  if (char const* v = std::getenv("STRATA_DIST_RINGS")) {
    std::string const s(v);
    if (s == "0")
      wanted = false;
    else if (s != "1")
      bad_setting = s;
  }
  auto const size = peers.hosts.size();
  auto const mine = node_peers_of(peers.hosts, rank);
  auto const slot = slot_bytes();
  // Whether this rank can take part: 1 also for a rank alone on its node (it has no ring
  // and uses MPI), 0 when a block or a mapping fails; every rank then uses MPI. Failures
  // between the two collectives are caught: the other ranks wait in the second.
  int ok = peers.map && wanted && slot % page_size() == 0 ? 1 : 0;
  block_handle handle{};
  try {
    if (ok && !mine.empty()) {
      mine_ = shared_block(mine.size() * slot, true, "dist: active-message rings");
      if (mine_.handle().fd < 0) ok = 0;
      for (std::size_t i = 0; ok && i < mine.size(); ++i) {
        char* base = static_cast<char*>(mine_.data()) + i * slot;
        in_.push_back({mine[i], new (base) ring_control, base + page_size(), {}, false});
      }
      if (ok) handle = mine_.handle();
    }
  } catch (std::exception const&) {
    ok = 0;
  }
  std::vector<block_handle> all(size);
  check_mpi(
      MPI_Allgather(&handle, sizeof handle, MPI_BYTE, all.data(), sizeof handle, MPI_BYTE, comm),
      "MPI_Allgather");
  try {
    out_.resize(size);
    for (int w : mine) {
      if (!ok) break;
      // This rank's ring in w's block: the slot of its place among w's node peers.
      auto const theirs = node_peers_of(peers.hosts, w);
      auto const at =
          static_cast<std::size_t>(std::find(theirs.begin(), theirs.end(), rank) - theirs.begin());
      auto m = direct_map_range(peers.pids[static_cast<std::size_t>(w)], w,
                                all[static_cast<std::size_t>(w)], at * slot, slot);
      if (!m) {
        ok = 0;
        break;
      }
      char* base = static_cast<char*>(m.get());
      auto& o = out_[static_cast<std::size_t>(w)].ring;
      o.ctrl = reinterpret_cast<ring_control*>(base);
      o.data = base + page_size();
      maps_.push_back(std::move(m));
    }
  } catch (std::exception const&) {
    ok = 0;
  }
  if (!bad_setting.empty()) ok = -1;
  int agreed = 0;
  check_mpi(MPI_Allreduce(&ok, &agreed, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
  active_ = agreed == 1;
  if (!active_) {
    out_.clear();
    in_.clear();
    maps_.clear();
    mine_ = shared_block();
    if (agreed < 0)
      throw config_error(
          (bad_setting.empty() ? std::string("STRATA_DIST_RINGS on another rank")
                               : "STRATA_DIST_RINGS=\"" + bad_setting + "\"") +
          ": expected 1 (active messages between ranks of one node through shared-memory "
          "rings: the default) or 0 (through MPI)");
    return;
  }
  node_only_ = std::all_of(peers.hosts.begin(), peers.hosts.end(),
                           [&](std::string const& h) { return h == peers.hosts.front(); });
}

am_rings::~am_rings() = default;

bool am_rings::send(int to, void const* a, std::size_t na, void const* b, std::size_t nb) {
  auto& o = out_[static_cast<std::size_t>(to)];
  auto const* ca = static_cast<char const*>(a);
  auto const* cb = static_cast<char const*>(b);
  std::size_t const total = na + nb;
  // Into the ring only when all of it fits now: a message is never left half written
  // because its queue entry could not be allocated (the reader would join the next
  // message to it).
  if (o.waiting.empty()) {
    if (o.ring.write_whole(ca, na, cb, nb)) return true;
    if (total > ring_max_body && o.ring.fits(total)) {
      o.ring.write(ca, na, cb, nb, 0);
      return true;
    }
  }
  // Behind the queued ones (order), or too long for the room there is: all of it queued
  // (allocated first), then as much as fits written.
  bytes whole(total);
  if (na) std::memcpy(whole.data(), ca, na);
  if (nb) std::memcpy(whole.data() + na, cb, nb);
  o.waiting.push_back(std::move(whole));
  ++queued_;
  flush();
  return false;
}

bool am_rings::flush() {
  if (queued_ == 0) return false;
  bool moved = false;
  for (auto& o : out_) {
    while (!o.waiting.empty()) {
      auto& m = o.waiting.front();
      std::size_t const was = o.first_sent;
      o.first_sent =
          o.ring.write(reinterpret_cast<char const*>(m.data()), m.size(), nullptr, 0, o.first_sent);
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
