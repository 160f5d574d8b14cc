// Allocation-heavy code (Ripple §5.1: dynamic allocation during a computation costs
// time): rounds of 4 small objects (16-256 bytes, a fixed pseudo-random sequence), one
// byte of each touched. Strata takes them from the calling thread's arena of a
// multiarch_allocator and resets it every 1000 rounds (the reset is timed too); the peer
// mallocs and frees them. At 1 thread and at every host PU (each thread on its own).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "arena/peer.hpp"
#include "harness.hpp"

namespace strata::bench {
namespace {

constexpr std::size_t size_count = 1024;     // a power of two: indices are masked
constexpr long reset_every = 1000;           // rounds between arena resets
constexpr std::size_t block_alignment = 16;  // what malloc guarantees on x86-64

std::vector<std::uint16_t> block_sizes() {
  std::vector<std::uint16_t> sizes(size_count);
  std::uint32_t x = 2463534242u;  // xorshift32 (Marsaglia), fixed seed: the same every run
  for (auto& s : sizes) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    s = static_cast<std::uint16_t>(16 + x % 241);  // 16..256 bytes
  }
  return sizes;
}

// The checksum both sides must reach: the byte written to block j is j mod 256.
std::uint64_t expected_sum(long rounds, std::vector<std::uint16_t> const& sizes) {
  std::uint64_t sum = 0;
  for (std::size_t j = 0; j < static_cast<std::size_t>(rounds) * 4; ++j)
    sum += (j & 0xff) + sizes[j & (size_count - 1)];
  return sum;
}

std::uint64_t arena_rounds(arena<host_space>& a, long first, long rounds,
                           std::uint16_t const* sizes) {
  std::uint64_t sum = 0;
  for (long i = first; i < first + rounds; ++i) {
    if ((i - first) % reset_every == 0) a.reset();
    for (int k = 0; k < 4; ++k) {
      auto j = static_cast<std::size_t>(i) * 4 + static_cast<std::size_t>(k);
      std::size_t size = sizes[j & (size_count - 1)];
      auto p = a.allocate<unsigned char>(size, block_alignment);
      p[size - 1] = static_cast<unsigned char>(j);
      asm volatile("" : : "r"(p.get()) : "memory");  // as the peer: the block escapes
      sum += p[size - 1] + size;
    }
  }
  return sum;
}

// Runs body(t) on `threads` threads (on the calling thread when 1); returns the sum.
template <class Body>
std::uint64_t on_threads(int threads, Body const& body) {
  if (threads == 1) return body(0);
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(threads), 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { sums[static_cast<std::size_t>(t)] = body(t); });
  for (auto& th : pool) th.join();
  std::uint64_t sum = 0;
  for (auto s : sums) sum += s;
  return sum;
}

void run_arena(context& ctx) {
  long const rounds = ctx.opts().quick ? 100'000 : 1'000'000;  // per thread
  auto const sizes = block_sizes();
  // Room for reset_every rounds of the largest blocks and their alignment padding.
  std::size_t const per_thread = reset_every * 4 * (256 + block_alignment);
  multiarch_allocator alloc(ctx.rt().machine(), per_thread, 4096);
  for (int t : ctx.thread_counts()) {
    std::uint64_t strata_sum = 0, peer_sum = 0;
    auto [ts, tp] = compare(
        ctx.opts().repeats,
        [&] {
          strata_sum = on_threads(t, [&](int th) {
            return arena_rounds(alloc.cpu(), th * rounds, rounds, sizes.data());
          });
        },
        [&] {
          peer_sum = on_threads(t, [&](int th) {
            return heap::malloc_free(th * rounds, rounds, sizes.data(), size_count - 1);
          });
        });
    auto const expected = expected_sum(t * rounds, sizes);
    if (strata_sum != expected || peer_sum != expected)
      throw std::runtime_error("arena benchmark: wrong checksum at " + std::to_string(t) +
                               " threads: strata " + std::to_string(strata_sum) + ", peer " +
                               std::to_string(peer_sum) + ", expected " + std::to_string(expected));
    double const blocks = 4.0 * static_cast<double>(rounds);  // per thread
    result r{"arena", "host/" + std::to_string(t),        blocks * t,
             ts,      "malloc-free/" + std::to_string(t), tp};
    r.extra = {{"threads", t}, {"strata_ns", ts / blocks * 1e9}, {"peer_ns", tp / blocks * 1e9}};
    ctx.report(r);
  }
}

registrar arena_r("arena",
                  "4 small objects per round from a thread's arena (reset every 1000 rounds) vs "
                  "malloc/free",
                  run_arena);

}  // namespace
}  // namespace strata::bench
