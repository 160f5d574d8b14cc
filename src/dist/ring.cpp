// The writing end of a shared-memory byte ring (src/dist/ring.hpp).
#include "dist/ring.hpp"

#include <algorithm>

namespace strata::dist::detail {

static_assert((ring_capacity & (ring_capacity - 1)) == 0,
              "ring positions are taken modulo the capacity");
static_assert(std::atomic<std::uint64_t>::is_always_lock_free &&
                  std::atomic_ref<std::uint64_t>::is_always_lock_free &&
                  std::atomic_ref<std::uint64_t>::required_alignment <= 16,
              "the ring's words are shared between processes (stamps at 16-byte steps)");

bool ring_writer::fits(std::size_t total) {
  // The bytes the message takes from the tail on: its records, and the skip records
  // before those that would cross the end.
  std::uint64_t const start = ctrl->tail.load(std::memory_order_relaxed);  // the only producer
  std::uint64_t tail = start;
  for (std::size_t offset = 0; offset < total;) {
    std::size_t const body = std::min(total - offset, ring_max_body);
    std::size_t const record = sizeof(ring_record) + ring_padded(body);
    std::size_t const pos = static_cast<std::size_t>(tail % ring_capacity);
    tail += (pos + record > ring_capacity ? ring_capacity - pos : 0) + record;
    offset += body;
  }
  // The next record's zeroed stamp after them (ring.hpp).
  tail += sizeof(ring_record);
  if (tail - head_seen > ring_capacity) head_seen = ctrl->head.load(std::memory_order_acquire);
  return tail - head_seen <= ring_capacity;
}

std::size_t ring_writer::write(char const* a, std::size_t na, char const* b, std::size_t nb,
                               std::size_t offset) {
  std::size_t const total = na + nb;
  std::uint64_t tail = ctrl->tail.load(std::memory_order_relaxed);  // the only producer
  while (offset < total) {
    std::size_t const body = std::min(total - offset, ring_max_body);
    auto [to, need] = begin_record(tail, body, offset + body == total ? ring_last : 0);
    if (!to) break;  // full: the rest waits
    std::size_t left = body, at = offset;
    if (at < na) {
      std::size_t const k = std::min(left, na - at);
      std::memcpy(to, a + at, k);
      to += k;
      at += k;
      left -= k;
    }
    if (left) std::memcpy(to, b + (at - na), left);
    // Each record as soon as it is written: the reader may start on a long message.
    end_record(tail, need);
    tail += need;
    offset += body;
  }
  return offset;
}

}  // namespace strata::dist::detail
