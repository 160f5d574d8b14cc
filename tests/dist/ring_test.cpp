// The shared-memory ring of the active messages on one node (src/dist/ring.hpp), in one
// process: messages of any length arrive whole and in order through a ring much shorter
// than some of them; a handler that throws takes its message once; a message whose
// assembly runs out of memory is dropped alone; bytes of earlier messages never pass for
// a record.
#include "dist/ring.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <new>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

// Allocations of at least `fail_from` bytes throw once while armed (the reader's
// assembly buffer running out of memory).
std::size_t fail_from = 0;

}  // namespace

void* operator new(std::size_t n) {
  if (fail_from && n >= fail_from) {
    fail_from = 0;
    throw std::bad_alloc();
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

namespace {

using namespace strata::dist::detail;
using message = std::vector<char>;

struct ring {
  ring_control ctrl;
  std::vector<char> data = std::vector<char>(ring_capacity);
  ring_writer writer{&ctrl, data.data()};
  ring_reader reader{7, &ctrl, data.data(), {}, false};
};

message make(std::mt19937_64& rng, std::size_t n) {
  message m(n);
  for (auto& c : m) c = static_cast<char>(rng());
  return m;
}

TEST(DistRing, MessagesOfAnyLengthArriveWholeAndInOrder) {
  ring r;
  std::mt19937_64 rng(11);
  std::deque<message> sent;   // written (wholly or partly), not yet received
  std::deque<message> queue;  // not yet wholly written; the first from `offset` on
  std::size_t offset = 0;
  int received = 0;
  auto handle = [&](int source, std::byte const* m, std::size_t n) {
    ASSERT_EQ(source, 7);
    ASSERT_FALSE(sent.empty());
    ASSERT_EQ(n, sent.front().size()) << "message " << received;
    ASSERT_EQ(std::memcmp(m, sent.front().data(), n), 0) << "message " << received;
    sent.pop_front();
    ++received;
  };
  for (int round = 0; round < 4000; ++round) {
    // Sizes from one byte to about four rings, most of them small.
    auto const kind = rng() % 8;
    std::size_t const n = kind < 5   ? 1 + rng() % 64
                          : kind < 7 ? 1 + rng() % ring_max_body
                                     : 1 + rng() % (4 * ring_capacity);
    auto m = make(rng, n);
    if (queue.empty() && r.writer.fits(n)) {
      // Split in two pieces at a random point, as a header and its payload; one record's
      // worth half the time through write_whole (the active messages' usual path), which
      // writes it where fits said there was room.
      std::size_t const cut = rng() % (n + 1);
      if (n <= ring_max_body && rng() % 2)
        EXPECT_TRUE(r.writer.write_whole(m.data(), cut, m.data() + cut, n - cut));
      else
        EXPECT_EQ(r.writer.write(m.data(), cut, m.data() + cut, n - cut, 0), n);
      sent.push_back(std::move(m));
    } else {
      queue.push_back(std::move(m));
    }
    // Flush what waits, as far as it fits; then read a few.
    while (!queue.empty()) {
      auto& q = queue.front();
      auto const was = offset;
      offset = r.writer.write(q.data(), q.size(), nullptr, 0, offset);
      if (was == 0 && offset > 0) sent.push_back(q);  // its first record is in the ring
      if (offset < q.size()) break;
      queue.pop_front();
      offset = 0;
    }
    r.reader.read(handle, 1 + static_cast<int>(rng() % 4));
    if (HasFatalFailure()) return;
  }
  // Drain.
  while (!queue.empty() || r.ctrl.head.load() != r.ctrl.tail.load()) {
    if (!queue.empty()) {
      auto& q = queue.front();
      auto const was = offset;
      offset = r.writer.write(q.data(), q.size(), nullptr, 0, offset);
      if (was == 0 && offset > 0) sent.push_back(q);
      if (offset == q.size()) {
        queue.pop_front();
        offset = 0;
      }
    }
    r.reader.read(handle, 64);
    if (HasFatalFailure()) return;
  }
  EXPECT_TRUE(sent.empty());
  EXPECT_GT(received, 3000);
}

TEST(DistRing, WriteWholeWritesNothingWhenTheMessageDoesNotFit) {
  ring r;
  std::mt19937_64 rng(5);
  // Over one record's worth: never through write_whole.
  auto big = make(rng, ring_max_body + 1);
  EXPECT_FALSE(r.writer.write_whole(big.data(), big.size(), nullptr, 0));
  EXPECT_EQ(r.ctrl.tail.load(), 0u);
  // Fill the ring with records of one size until write_whole refuses one: the tail stays,
  // and every record written is read back whole, in order, across the ring's end.
  auto m = make(rng, 1000);
  int written = 0;
  while (r.writer.write_whole(m.data(), 10, m.data() + 10, m.size() - 10)) ++written;
  auto const tail = r.ctrl.tail.load();
  EXPECT_FALSE(r.writer.write_whole(m.data(), m.size(), nullptr, 0));
  EXPECT_EQ(r.ctrl.tail.load(), tail);
  // Whole records of a 1000-byte body, and the next record's stamp after the last.
  EXPECT_EQ(written, static_cast<int>((ring_capacity - sizeof(ring_record)) /
                                      (sizeof(ring_record) + ring_padded(1000))));
  int got = 0;
  auto handle = [&](int, std::byte const* b, std::size_t n) {
    ASSERT_EQ(n, m.size());
    ASSERT_EQ(std::memcmp(b, m.data(), n), 0);
    ++got;
  };
  // Half read: the writer's next records wrap (a skip record at the end).
  r.reader.read(handle, written / 2);
  int more = 0;
  while (r.writer.write_whole(m.data(), m.size(), nullptr, 0)) ++more;
  EXPECT_GT(more, 0);
  while (r.reader.read(handle, 64) > 0) {
  }
  EXPECT_EQ(got, written + more);
  EXPECT_EQ(r.ctrl.head.load(), r.ctrl.tail.load());
}

TEST(DistRing, AHandlerThatThrowsTakesItsMessageOnce) {
  ring r;
  std::mt19937_64 rng(3);
  std::vector<message> ms{make(rng, 100), make(rng, 3 * ring_max_body + 5), make(rng, 40)};
  for (auto& m : ms) ASSERT_EQ(r.writer.write(m.data(), m.size(), nullptr, 0, 0), m.size());
  std::vector<std::size_t> seen;
  auto handle = [&](int, std::byte const*, std::size_t n) {
    seen.push_back(n);
    if (n == ms[1].size()) throw std::runtime_error("the handler failed");
  };
  EXPECT_THROW(r.reader.read(handle, 64), std::runtime_error);
  r.reader.read(handle, 64);
  EXPECT_EQ(seen, (std::vector<std::size_t>{100, ms[1].size(), 40}));
  EXPECT_EQ(r.ctrl.head.load(), r.ctrl.tail.load());
}

TEST(DistRing, AMessageWhoseAssemblyFailsIsDroppedAlone) {
  ring r;
  std::mt19937_64 rng(5);
  // A and B span several records (assembled); C is one record (handled in place).
  std::vector<message> ms{make(rng, ring_max_body + 100), make(rng, ring_max_body + 7),
                          make(rng, 24)};
  for (auto& m : ms) ASSERT_EQ(r.writer.write(m.data(), m.size(), nullptr, 0, 0), m.size());
  std::vector<message> got;
  auto handle = [&](int, std::byte const* m, std::size_t n) {
    auto const* c = reinterpret_cast<char const*>(m);
    got.emplace_back(c, c + n);
  };
  fail_from = ring_max_body / 2;  // A's first record's copy into the assembly
  EXPECT_THROW(r.reader.read(handle, 64), std::bad_alloc);
  EXPECT_TRUE(r.reader.dropping);
  while (r.ctrl.head.load() != r.ctrl.tail.load()) r.reader.read(handle, 64);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], ms[1]);
  EXPECT_EQ(got[1], ms[2]);
  EXPECT_FALSE(r.reader.dropping);
}

// The reader finds a record by its stamp at its head (ring.hpp). Every 8-byte word of the
// first lap's bodies holds the stamp a record at that word's place would carry in the
// next lap; the next lap's records, of other sizes, start inside those old bodies. The
// reader must take each of them once, and nothing between them: the writer zeroes the
// stamp where its next record starts before it publishes one.
TEST(DistRing, OldBodiesNeverPassForARecord) {
  ring r;
  std::uint64_t written = 0;  // bytes of the stream so far (the writer's tail)
  std::deque<message> sent;
  auto handle = [&](int, std::byte const* m, std::size_t n) {
    ASSERT_FALSE(sent.empty()) << "a record nobody wrote";
    ASSERT_EQ(n, sent.front().size());
    ASSERT_EQ(std::memcmp(m, sent.front().data(), n), 0);
    sent.pop_front();
  };
  auto send = [&](message m) {
    ASSERT_TRUE(r.writer.write_whole(m.data(), m.size(), nullptr, 0));
    sent.push_back(std::move(m));
    written = r.ctrl.tail.load();
    ASSERT_EQ(r.reader.read(handle, 64), 1);
    ASSERT_TRUE(sent.empty());
    // Nothing new: the head's slot holds no stamp that passes.
    ASSERT_EQ(r.reader.read(handle, 64), 0) << "a phantom record at " << written;
  };
  // First lap: 1008-byte bodies (1024-byte records) of forged stamps.
  while (written + 1024 + sizeof(ring_record) <= ring_capacity) {
    message m(1008);
    for (std::size_t w = 0; w < m.size() / 8; ++w) {
      std::uint64_t const at = written + sizeof(ring_record) + 8 * w;
      std::uint64_t const forged = at + ring_capacity + 1;  // a next-lap record's stamp here
      std::memcpy(m.data() + 8 * w, &forged, 8);
    }
    send(std::move(m));
    if (HasFatalFailure()) return;
  }
  // Next laps: records of 48, 80, 112 ... bytes, their heads inside the old bodies.
  std::mt19937_64 rng(9);
  for (int i = 0; written < 3 * ring_capacity; ++i) {
    send(make(rng, 32 + 16 * static_cast<std::size_t>(i % 7)));
    if (HasFatalFailure()) return;
  }
}

// A writer that keeps the ring full (here the handler itself, writing a message for each
// it is given) does not keep one read() call going: it returns after a ring's worth of
// bytes, so the reader's round can take the other rings (am_rings::receive).
TEST(DistRing, OneReadTakesAtMostARingsWorth) {
  ring r;
  std::mt19937_64 rng(13);
  auto const m = make(rng, 1000);
  ASSERT_TRUE(r.writer.write_whole(m.data(), m.size(), nullptr, 0));
  int handled = 0;
  auto handle = [&](int, std::byte const*, std::size_t n) {
    ASSERT_EQ(n, m.size());
    ++handled;
    r.writer.write_whole(m.data(), m.size(), nullptr, 0);  // room: this one is released after
  };
  int const got = r.reader.read(handle, 1000);
  EXPECT_EQ(got, handled);
  EXPECT_LE(static_cast<std::size_t>(got), ring_capacity / 1000 + 1) << "one read kept going";
  EXPECT_GT(got, 1);
}

}  // namespace
