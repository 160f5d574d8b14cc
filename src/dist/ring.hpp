// One byte ring in shared memory between two processes: the record format, the writing
// end and the reading end of the active-message rings (dist/am_ring.hpp; docs/dist.md
// "Active messages on one node"). Single producer, single consumer; no MPI here, so the
// format is tested on its own (tests/dist/ring_test.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace strata::dist::detail {

/// The control words of one ring, each on a cache line of its own.
struct ring_control {
  alignas(64) std::atomic<std::uint64_t> tail{0};  // bytes written (the producer)
  alignas(64) std::atomic<std::uint64_t> head{0};  // bytes consumed (the consumer)
};

/// Data bytes of one ring (per direction and pair; a power of two).
inline constexpr std::size_t ring_capacity = std::size_t{64} << 10;
/// A record's body at most (a quarter of the ring: a long message streams through it
/// while the reader takes its first records).
inline constexpr std::size_t ring_max_body = ring_capacity / 4;

// A record is a 16-byte head (its stamp, the body's bytes and flags), the body, padding to
// 16 bytes. A record never wraps: where it does not fit before the ring's end a `skip`
// record fills the rest. A message is its records up to the one marked `last`.
//
// The reader polls the stamp of the record at its head, not the tail: a record is there
// when its stamp is its position + 1, stored last (release) by the writer. Reading the
// tail and then the record cost the reader two cache lines the writer had just written,
// one after the other, on every message; the stamp is on the record's own line (about a
// fifth of a remote async's round trip on the development VM, issue 18, session 59). Old
// bytes at a head never pass for a record: before it publishes a record, the writer
// zeroes the stamp where the next record will start (inside space the reader has
// released), so the reader finds there either 0 or the next record's own stamp.
struct ring_record {
  std::uint64_t stamp;  // position in the ring's byte stream + 1, once the record is whole
  std::uint32_t bytes;
  std::uint32_t flags;
};
static_assert(sizeof(ring_record) == 16);
inline constexpr std::uint32_t ring_last = 1, ring_skip = 2;

inline constexpr std::size_t ring_padded(std::size_t n) noexcept {
  return (n + 15) & ~std::size_t{15};
}

/// The stamp word of the record head at `at` (16-byte aligned), shared with the other
/// process.
inline std::atomic_ref<std::uint64_t> ring_stamp(char* at) noexcept {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(at));
}
inline std::uint64_t ring_stamp_of(char const* at) noexcept {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(const_cast<char*>(at)))
      .load(std::memory_order_acquire);
}

/// The writing end (whoever holds the sender's progress token).
struct ring_writer {
  ring_control* ctrl = nullptr;
  char* data = nullptr;         // ring_capacity bytes
  std::uint64_t head_seen = 0;  // the reader's head as last read

  /// Whether a message of `total` bytes fits now, records and skip records included.
  bool fits(std::size_t total);
  /// Writes records of the message `a` (na bytes) then `b` (nb bytes) from `offset` on,
  /// as many as fit; returns the new offset (na + nb: all of it is in the ring). A message
  /// has at least one byte (an active message, at least its header).
  std::size_t write(char const* a, std::size_t na, char const* b, std::size_t nb,
                    std::size_t offset);
  /// Writes the message `a` then `b` as one record if it has at most ring_max_body bytes
  /// and there is room now; returns false, having written nothing, if not. The same
  /// record as write's, without its loop: most active messages are a few dozen bytes.
  bool write_whole(char const* a, std::size_t na, char const* b, std::size_t nb) {
    std::size_t const total = na + nb;
    if (total == 0 || total > ring_max_body) return false;
    std::uint64_t const tail = ctrl->tail.load(std::memory_order_relaxed);  // the only producer
    auto const [to, need] = begin_record(tail, total, ring_last);
    if (!to) return false;
    std::memcpy(to, a, na);
    if (nb) std::memcpy(to + na, b, nb);
    end_record(tail, need);
    return true;
  }
  /// Where a record of `body` bytes goes from `tail` on: writes a skip record first where
  /// it would cross the ring's end, then the record's head with `flags` (not its stamp);
  /// returns where its body goes and the bytes the record takes from the tail (null, 0: no
  /// room now, nothing written). end_record publishes it.
  std::pair<char*, std::size_t> begin_record(std::uint64_t tail, std::size_t body,
                                             std::uint32_t flags) {
    std::size_t const record = sizeof(ring_record) + ring_padded(body);
    std::size_t const pos = static_cast<std::size_t>(tail % ring_capacity);
    std::size_t const skip = pos + record > ring_capacity ? ring_capacity - pos : 0;
    std::size_t const need = skip + record;
    // Room for the record and for the zeroed stamp of the next one after it.
    std::size_t const room = need + sizeof(ring_record);
    if (tail + room - head_seen > ring_capacity) {
      head_seen = ctrl->head.load(std::memory_order_acquire);
      if (tail + room - head_seen > ring_capacity) return {nullptr, 0};
    }
    // Published with the record (end_record): the reader passes the skip only then.
    if (skip)
      write_head(data + pos, static_cast<std::uint32_t>(skip - sizeof(ring_record)), ring_skip);
    char* to = data + (skip ? 0 : pos);
    write_head(to, static_cast<std::uint32_t>(body), flags);
    return {to + sizeof(ring_record), need};
  }
  /// A record head at `at` without its stamp: the stamp word is the reader's to poll, so
  /// it is only ever stored atomically (0 here; the stamp in end_record).
  static void write_head(char* at, std::uint32_t body_bytes, std::uint32_t flags) {
    ring_stamp(at).store(0, std::memory_order_relaxed);
    std::memcpy(at + offsetof(ring_record, bytes), &body_bytes, sizeof body_bytes);
    std::memcpy(at + offsetof(ring_record, flags), &flags, sizeof flags);
  }
  /// Publishes the record begun at `tail` taking `need` bytes (a skip record before it
  /// included): zeroes the next record's stamp, sets the stamps (the record's last, so
  /// that a reader seeing the skip finds the record whole or not yet stamped), advances
  /// the tail.
  void end_record(std::uint64_t tail, std::size_t need) {
    std::uint64_t const end = tail + need;
    ring_stamp(data + end % ring_capacity).store(0, std::memory_order_relaxed);
    std::size_t const pos = static_cast<std::size_t>(tail % ring_capacity);
    std::size_t const record_at = pos + need > ring_capacity ? 0 : pos;
    std::uint64_t const record_pos = record_at == pos ? tail : tail + (ring_capacity - pos);
    ring_stamp(data + record_at).store(record_pos + 1, std::memory_order_release);
    if (record_at != pos) ring_stamp(data + pos).store(tail + 1, std::memory_order_release);
    ctrl->tail.store(end, std::memory_order_release);
  }
};

/// The reading end (whoever holds the receiver's progress token).
struct ring_reader {
  int source = -1;
  ring_control* ctrl = nullptr;
  char const* data = nullptr;
  std::vector<std::byte> assembly;  // the records so far of a message cut into several
  bool dropping = false;            // its assembly failed (no memory): skip to its last record

  /// Calls handle(source, data, bytes) for up to `limit` messages, each once complete (in
  /// place in the ring, or assembled from its records); returns how many. A record is
  /// released (the head moves on) once handled or copied, also when the handler throws:
  /// a message is taken once, as MPI's receive takes it. `handle` must not read this ring.
  template <class Handle>
  int read(Handle&& handle, int limit);
};

template <class Handle>
int ring_reader::read(Handle&& handle, int limit) {
  int got = 0;
  // At most a ring's worth of bytes per call, as much as was there when it began at most:
  // a peer streaming a long message must not keep this reader (and its progress round)
  // from the other rings (am_rings::receive takes them in turn).
  std::uint64_t const stop = ctrl->head.load(std::memory_order_relaxed) + ring_capacity;
  while (got < limit) {
    std::uint64_t const head = ctrl->head.load(std::memory_order_relaxed);
    if (head >= stop) break;
    char const* at = data + (head % ring_capacity);
    if (ring_stamp_of(at) != head + 1) break;  // not written yet
    ring_record rec{head + 1, 0, 0};
    std::memcpy(&rec.bytes, at + offsetof(ring_record, bytes), sizeof rec.bytes);
    std::memcpy(&rec.flags, at + offsetof(ring_record, flags), sizeof rec.flags);
    struct advance {
      ring_control* ctrl;
      std::uint64_t to;
      ~advance() { ctrl->head.store(to, std::memory_order_release); }
    } moved{ctrl, head + sizeof rec + ring_padded(rec.bytes)};
    if (rec.flags & ring_skip) continue;
    auto const* body = reinterpret_cast<std::byte const*>(at + sizeof rec);
    if (dropping) {  // the rest of a message whose assembly failed, up to its last record
      dropping = !(rec.flags & ring_last);
      continue;
    }
    if ((rec.flags & ring_last) && assembly.empty()) {
      ++got;
      handle(source, body, std::size_t{rec.bytes});  // in place, released after
      continue;
    }
    try {
      assembly.insert(assembly.end(), body, body + rec.bytes);
    } catch (...) {
      // The rest of this message goes unread; the next one starts clean.
      assembly = std::vector<std::byte>();
      dropping = !(rec.flags & ring_last);
      throw;
    }
    if (rec.flags & ring_last) {
      auto whole = std::move(assembly);
      assembly = std::vector<std::byte>();
      ++got;
      handle(source, whole.data(), whole.size());
    }
  }
  return got;
}

}  // namespace strata::dist::detail
