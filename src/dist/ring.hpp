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

// A record is an 8-byte head (the body's bytes and flags), the body, padding to 8 bytes.
// A record never wraps: where it does not fit before the ring's end a `skip` record fills
// the rest. A message is its records up to the one marked `last`.
struct ring_record {
  std::uint32_t bytes;
  std::uint32_t flags;
};
inline constexpr std::uint32_t ring_last = 1, ring_skip = 2;

inline constexpr std::size_t ring_padded(std::size_t n) noexcept {
  return (n + 7) & ~std::size_t{7};
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
    ctrl->tail.store(tail + need, std::memory_order_release);
    return true;
  }
  /// Where a record of `body` bytes goes from `tail` on: writes a skip record first where
  /// it would cross the ring's end, then the record's head with `flags`; returns where its
  /// body goes and the bytes the record takes from the tail (null, 0: no room now, nothing
  /// written). The tail is the caller's to advance.
  std::pair<char*, std::size_t> begin_record(std::uint64_t tail, std::size_t body,
                                             std::uint32_t flags) {
    std::size_t const record = sizeof(ring_record) + ring_padded(body);
    std::size_t const pos = static_cast<std::size_t>(tail % ring_capacity);
    std::size_t const skip = pos + record > ring_capacity ? ring_capacity - pos : 0;
    std::size_t const need = skip + record;
    if (tail + need - head_seen > ring_capacity) {
      head_seen = ctrl->head.load(std::memory_order_acquire);
      if (tail + need - head_seen > ring_capacity) return {nullptr, 0};
    }
    if (skip) {
      ring_record const s{static_cast<std::uint32_t>(skip - sizeof(ring_record)), ring_skip};
      std::memcpy(data + pos, &s, sizeof s);
    }
    char* to = data + (skip ? 0 : pos);
    ring_record const r{static_cast<std::uint32_t>(body), flags};
    std::memcpy(to, &r, sizeof r);
    return {to + sizeof r, need};
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
  std::uint64_t const tail = ctrl->tail.load(std::memory_order_acquire);
  while (got < limit) {
    std::uint64_t const head = ctrl->head.load(std::memory_order_relaxed);
    if (head == tail) break;
    char const* at = data + (head % ring_capacity);
    ring_record rec;
    std::memcpy(&rec, at, sizeof rec);
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
