// The same kernels on every CPU backend: index coverage, element ranges, barriers and
// scratchpads (fibers and phases), atomics (also on a sim device), exceptions, nested
// launches.
#include <gtest/gtest.h>

#include <array>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "exec/atomic_kernels.hpp"
#include "exec/backends.hpp"
#include "exec/barrier_kernels.hpp"

namespace strata {
namespace {

using test::on_every_backend;

class KernelSuite : public on_every_backend {};

// Every element of random 1-3D shapes is visited exactly once, and each thread's view of
// the hierarchy is consistent.
template <std::size_t D>
void check_coverage(target const& where, shape<D> const& s) {
  auto ext = s.global_element_extent();
  std::vector<int> hits(static_cast<std::size_t>(ext.product()), 0);
  std::atomic<int> bad{0};
  launch(
      where, s,
      [ext](auto const& self, int* h, std::atomic<int>* errors) {
        for (std::size_t d = 0; d < D; ++d) {
          if (self.thread_index()[d] >= self.block_extent()[d] ||
              self.block_index()[d] >= self.grid_extent()[d])
            errors->fetch_add(1);
        }
        if (self.index() != self.block_index() || self.subdomain().index() != self.thread_index())
          errors->fetch_add(1);
        for (auto e : self.elements()) {
          vec<D> p{};
          if constexpr (D == 1)
            p = vec<1>{e};
          else
            p = e;
          atomic_add(h + linearize(p, ext), 1);
        }
      },
      hits.data(), &bad)
      .wait();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_TRUE(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }))
      << "some element visited " << *std::max_element(hits.begin(), hits.end()) << " times";
}

TEST_P(KernelSuite, EveryIndexVisitedOnceInRandomShapes) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> ext(1, 5);
  for (int i = 0; i < 12; ++i) {
    check_coverage(here(), grid(ext(rng) * 3).block(ext(rng)).elements(ext(rng)));
    check_coverage(here(),
                   grid(ext(rng), ext(rng)).block(ext(rng), ext(rng)).elements(1, ext(rng)));
    check_coverage(
        here(),
        grid(ext(rng), 2, ext(rng)).block(ext(rng), 1, ext(rng)).elements(ext(rng), ext(rng), 1));
  }
  check_coverage(here(), grid(100000).elements(7));
}

TEST_P(KernelSuite, ElementRangesClipToTheProblem) {
  int const n = 1003;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  auto s = divide_work(here(), n);
  ASSERT_GE(s.global_element_extent()[0], n);
  launch(
      here(), s,
      [](auto const& self, float a, int n, float const* x, float* y) {
        for (auto i : self.elements(n)) y[i] = a * x[i] + y[i];
      },
      3.0f, n, x.data(), y.data())
      .wait();
  EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](float v) { return v == 5.0f; }));

  // 2-D: a 37 x 29 problem on 8 x 8 tiles of elements.
  std::vector<int> m(37 * 29, 0);
  launch(
      here(), grid(5, 4).elements(8, 8),
      [](auto const& self, int* m) {
        for (auto p : self.elements(vec<2>{37, 29})) m[p[0] * 29 + p[1]] += 1;
      },
      m.data())
      .wait();
  EXPECT_TRUE(std::all_of(m.begin(), m.end(), [](int v) { return v == 1; }));
}

// Block reduction with barrier() and a scratchpad: a tree in the scratchpad.
struct block_sum_fibers {
  template <class Self>
  void operator()(Self const& self, int const* in, long* out) const {
    auto block = self.block();
    auto n = block.linear_size();
    auto t = block.linear_index();
    long* partial = block.template scratchpad<long>(static_cast<std::size_t>(n));
    partial[t] = in[self.global_linear_index()];
    block.barrier();
    for (index_t stride = 1; stride < n; stride *= 2) {
      if (t % (2 * stride) == 0 && t + stride < n) partial[t] += partial[t + stride];
      block.barrier();
    }
    if (t == 0) out[self.block_index()[0]] = partial[0];
  }
};

// The same reduction as phases: load, then let thread 0 add the partials.
struct block_sum_state {
  long value = 0;
};

auto block_sum_phases() {
  return phases<block_sum_state>(
      [](auto const& self, block_sum_state& st, int const* in, long*) {
        st.value = in[self.global_linear_index()];
        self.block().template scratchpad<long>(static_cast<std::size_t>(
            self.block().linear_size()))[self.block().linear_index()] = st.value;
      },
      [](auto const& self, block_sum_state& st, int const*, long* out) {
        auto n = self.block().linear_size();
        long* partial = self.block().template scratchpad<long>(static_cast<std::size_t>(n));
        if (self.block().linear_index() == 0) {
          for (index_t i = 1; i < n; ++i) st.value += partial[i];
          out[self.block_index()[0]] = st.value;
        }
      });
}

TEST_P(KernelSuite, BarrierAndScratchpadReductionsAgreeWithPhases) {
  int const blocks = 37, threads = 48;
  std::vector<int> in(blocks * threads);
  std::iota(in.begin(), in.end(), 1);
  auto s = grid(blocks).block(parallel, threads).scratchpad(threads * sizeof(long));
  std::vector<long> fib(blocks, -1), ph(blocks, -1);
  launch(here(), s, block_sum_fibers{}, in.data(), fib.data()).wait();
  launch(here(), s, block_sum_phases(), in.data(), ph.data()).wait();
  for (int b = 0; b < blocks; ++b) {
    long expect = 0;
    for (int t = 0; t < threads; ++t) expect += in[b * threads + t];
    EXPECT_EQ(fib[b], expect) << "block " << b;
    EXPECT_EQ(ph[b], expect) << "block " << b;
  }
}

TEST_P(KernelSuite, BarriersWithAPredicateCountAllAndAny) {
  std::vector<int> out(static_cast<std::size_t>(test::predicate_blocks * test::predicate_threads *
                                                test::predicate_results),
                       -1);
  launch(here(), test::predicate_shape(), test::block_predicates_k{}, out.data()).wait();
  test::check_predicates(out);
}

TEST(KernelSuiteSim, BarriersWithAPredicateCountAllAndAny) {
  runtime rt{runtime_options{.sim_devices = "1:units=2"}};
  place sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  auto const n = static_cast<std::size_t>(test::predicate_blocks * test::predicate_threads *
                                          test::predicate_results);
  auto d = allocate<int, sim_space>(sim0, n);
  launch(sim0, test::predicate_shape(), test::block_predicates_k{}, d).wait();
  std::vector<int> out(n, -1);
  copy(ptr<int, host_space>(out.data(), 0), d, n).wait();
  deallocate(d);
  test::check_predicates(out);
}

TEST_P(KernelSuite, StaticBlockSharedVariables) {
  std::vector<long> out(static_cast<std::size_t>(test::predicate_blocks * test::predicate_threads *
                                                 test::shared_var_results),
                        -1);
  launch(here(), test::predicate_shape(), test::block_shared_vars_k{}, out.data()).wait();
  test::check_shared_vars(out);
}

TEST(KernelSuiteSim, StaticBlockSharedVariables) {
  runtime rt{runtime_options{.sim_devices = "1:units=2"}};
  place sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  auto const n = static_cast<std::size_t>(test::predicate_blocks * test::predicate_threads *
                                          test::shared_var_results);
  auto d = allocate<long, sim_space>(sim0, n);
  launch(sim0, test::predicate_shape(), test::block_shared_vars_k{}, d).wait();
  std::vector<long> out(n, -1);
  copy(ptr<long, host_space>(out.data(), 0), d, n).wait();
  deallocate(d);
  test::check_shared_vars(out);
}

TEST_P(KernelSuite, GroupsInsideABlockHaveTheirOwnBarriers) {
  // Warp-friendly sizes (as on CUDA), odd ones, and groups as large as the block.
  struct sizes {
    index_t threads, g1, g2;
  };
  for (auto [threads, g1, g2] : {sizes{64, 32, 4}, sizes{60, 12, 3}, sizes{40, 40, 5}}) {
    SCOPED_TRACE(std::to_string(threads) + " threads, groups " + std::to_string(g1) + " / " +
                 std::to_string(g2));
    index_t const blocks = 5;
    std::vector<long> out(static_cast<std::size_t>(blocks * threads * test::group_results), -1);
    launch(here(),
           grid(blocks)
               .block(parallel, threads)
               .scratchpad(static_cast<std::size_t>(threads) * sizeof(long)),
           test::block_groups_k{}, out.data(), g1, g2)
        .wait();
    test::check_groups(out, blocks, threads, g1, g2);
  }
}

TEST(KernelSuiteSim, GroupsInsideABlockHaveTheirOwnBarriers) {
  runtime rt{runtime_options{.sim_devices = "1:units=2"}};
  place sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  index_t const blocks = 3, threads = 64, g1 = 32, g2 = 4;
  auto const n = static_cast<std::size_t>(blocks * threads * test::group_results);
  auto d = allocate<long, sim_space>(sim0, n);
  launch(sim0, grid(blocks).block(parallel, threads).scratchpad(threads * sizeof(long)),
         test::block_groups_k{}, d, g1, g2)
      .wait();
  std::vector<long> out(n, -1);
  copy(ptr<long, host_space>(out.data(), 0), d, n).wait();
  deallocate(d);
  test::check_groups(out, blocks, threads, g1, g2);
}

// Group sizes that do not divide the block are errors at wait(); a thread that skips its
// group's barrier while the group waits is an error, not a hang; a group that returns
// early while another goes on through barriers of its own is fine.
TEST_P(KernelSuite, GroupMistakesAreErrorsNotHangs) {
  auto bad_size = launch(here(), grid(2).block(parallel, 8),
                         [](auto const& self) { self.block().group(3).barrier(); });
  EXPECT_THROW(bad_size.wait(), invalid_argument);
  auto skipped = launch(here(), grid(2).block(parallel, 8), [](auto const& self) {
    auto g = self.block().group(4);
    if (g.index() != 1) g.barrier();
  });
  EXPECT_THROW(skipped.wait(), error);
  std::vector<int> hits(8, 0);
  launch(
      here(), grid(1).block(parallel, 8),
      [](auto const& self, int* hits) {
        auto g = self.block().group(4);
        if (g.group_index() == 0) return;
        for (int k = 0; k < 5; ++k) {
          hits[self.block().linear_index()] += 1;
          g.barrier();
        }
      },
      hits.data())
      .wait();
  EXPECT_EQ(hits, (std::vector<int>{0, 0, 0, 0, 5, 5, 5, 5}));
}

// On the CPU a block's shared variables are made as its threads ask for them, in chunks
// that never move: many of them, one larger than a chunk, keep their places (the first
// ones are read back after the later ones were made); a one-thread block and a
// phase-split kernel (the variable lives across the phases) have them too.
TEST_P(KernelSuite, ManyBlockSharedVariablesKeepTheirPlaces) {
  index_t const blocks = 5, threads = 16;
  std::vector<double> out(static_cast<std::size_t>(blocks * threads), -1);
  launch(
      here(), grid(blocks).block(parallel, threads),
      [](auto const& self, double* out) {
        auto b = self.block();
        auto const t = b.linear_index();
        auto& first = b.template shared_var<double, 0>();
        auto& big = b.template shared_var<std::array<double, 700>, 1>();  // > 4 KiB
        auto& c2 = b.template shared_var<char, 2>();
        auto& d3 = b.template shared_var<std::array<double, 300>, 3>();
        auto& l4 = b.template shared_var<long, 4>();
        if (t == 0) {
          first = 1.5;
          c2 = 'x';
          l4 = 7;
        }
        big[static_cast<std::size_t>(t)] = static_cast<double>(t);
        d3[static_cast<std::size_t>(t)] = 2.0 * static_cast<double>(t);
        b.barrier();
        double s = first + (c2 == 'x' ? 1 : 0) + static_cast<double>(l4);
        for (index_t i = 0; i < b.linear_size(); ++i)
          s += big[static_cast<std::size_t>(i)] + d3[static_cast<std::size_t>(i)];
        out[self.global_linear_index()] = s;
      },
      out.data())
      .wait();
  double const expect = 1.5 + 1 + 7 + 3.0 * (threads * (threads - 1) / 2);
  for (double v : out) EXPECT_EQ(v, expect);

  std::vector<long> one(9, -1);
  launch(
      here(), grid(9).block(parallel, 1),
      [](auto const& self, long* out) {
        auto& v = self.block().template shared_var<long, 9>();
        v = self.block_index()[0] * 3;
        out[self.block_index()[0]] = self.block().template shared_var<long, 9>();
      },
      one.data())
      .wait();
  for (long k = 0; k < 9; ++k) EXPECT_EQ(one[static_cast<std::size_t>(k)], 3 * k);

  std::vector<long> ph(static_cast<std::size_t>(blocks), -1);
  launch(here(), grid(blocks).block(parallel, threads),
         phases<int>(
             [](auto const& self, int&, long*) {
               if (self.block().linear_index() == 0)
                 self.block().template shared_var<long>() = self.block_index()[0] + 100;
             },
             [](auto const& self, int&, long* out) {
               if (self.block().linear_index() == threads - 1)
                 out[self.block_index()[0]] = self.block().template shared_var<long>();
             }),
         ph.data())
      .wait();
  for (long k = 0; k < blocks; ++k) EXPECT_EQ(ph[static_cast<std::size_t>(k)], k + 100);
}

TEST_P(KernelSuite, TwoDimensionalParallelBlocks) {
  std::vector<long> out(6, 0);
  std::vector<int> in(6 * 4 * 8, 1);
  launch(
      here(), grid(2, 3).block(parallel, 4, 8).scratchpad(32 * sizeof(long)),
      [](auto const& self, int const* in, long* out) {
        auto b = self.block();
        long* p = b.template scratchpad<long>(32);
        p[b.linear_index()] = in[self.global_linear_index()] * (b.index()[0] + 1);
        b.barrier();
        if (b.linear_index() == 0) {
          long sum = 0;
          for (int i = 0; i < 32; ++i) sum += p[i];
          out[linearize(self.block_index(), self.grid_extent())] = sum;
        }
      },
      in.data(), out.data())
      .wait();
  for (long v : out) EXPECT_EQ(v, 8 * (1 + 2 + 3 + 4));
}

TEST_P(KernelSuite, Atomics) {
  int const n = 20000;
  struct totals {
    long sum = 0;
    double fsum = 0;
    int min = 1 << 30, max = -1;
    int exchanged = -1;
    int cas_count = 0;
    long sub = 0;
    unsigned and_bits = ~0u, or_bits = 0, xor_bits = 0, inc = 0, dec = 0;
  } t;
  launch(
      here(), grid(n / 10).elements(10),
      [](auto const& self, totals* t) {
        for (auto i : self.elements()) {
          atomic_add(&t->sum, static_cast<long>(i));
          atomic_add(&t->fsum, 1.0);
          atomic_min(&t->min, static_cast<int>(i));
          atomic_max(&t->max, static_cast<int>(i));
          atomic_exchange(&t->exchanged, static_cast<int>(i));
          // A counter made of compare-and-swap retries.
          int old = atomic_load(&t->cas_count), seen;
          while ((seen = atomic_cas(&t->cas_count, old, old + 1)) != old) old = seen;
          // The operations added for issue 21, without a scope (device scope).
          atomic_sub(&t->sub, i);
          atomic_and(&t->and_bits, ~(1u << (i % 32)));
          atomic_or(&t->or_bits, 1u << (i % 32));
          atomic_xor(&t->xor_bits, static_cast<unsigned>(i));
          atomic_inc(&t->inc, 6u);
          atomic_dec(&t->dec, 6u);
        }
        fence(scope::device);
      },
      &t)
      .wait();
  EXPECT_EQ(t.sum, long(n) * (n - 1) / 2);
  EXPECT_EQ(t.fsum, double(n));
  EXPECT_EQ(t.min, 0);
  EXPECT_EQ(t.max, n - 1);
  EXPECT_TRUE(t.exchanged >= 0 && t.exchanged < n);
  EXPECT_EQ(t.cas_count, n);
  EXPECT_EQ(t.sub, -long(n) * (n - 1) / 2);
  EXPECT_EQ(t.and_bits, 0u);
  EXPECT_EQ(t.or_bits, ~0u);
  unsigned x = 0;
  for (unsigned i = 0; i < unsigned(n); ++i) x ^= i;
  EXPECT_EQ(t.xor_bits, x);
  EXPECT_EQ(t.inc, unsigned(n % 7));
  EXPECT_EQ(t.dec, unsigned((7 - n % 7) % 7));
}

// Every atomic operation and type, contended by every thread of 40 blocks, in the device
// and the system scope, and in the block scope on per-block counters
// (tests/exec/atomic_kernels.hpp; the CUDA suite runs the same kernel).
template <class Space>
void run_contended_atomics(place const& memory, target const& where, scope s) {
  using test::atomic_n;
  auto n = static_cast<std::size_t>(atomic_n);
  auto nb = static_cast<std::size_t>(test::atomic_blocks);
  auto to_space = [&]<class T>(std::vector<T> const& h) {
    auto d = allocate<T, Space>(memory, h.size());
    copy(d, ptr<T const>(h.data(), 0), h.size()).wait();
    return d;
  };
  auto back = [&]<class T>(ptr<T, Space> d, std::size_t count) {
    std::vector<T> h(count);
    copy(ptr<T>(h.data(), 0), d, count).wait();
    deallocate(d);
    return h;
  };
  auto t = to_space(std::vector<test::atomic_totals>{test::atomic_totals_initial()});
  auto b =
      to_space(std::vector<test::atomic_block_totals>(nb, test::atomic_block_totals_initial()));
  auto add_olds = to_space(std::vector<int>(n, -1));
  auto sub_olds = to_space(std::vector<unsigned long long>(n, 0));
  auto inc_olds = to_space(std::vector<unsigned>(n, 0));
  auto exchange_olds = to_space(std::vector<int>(n, 0));
  launch(where, test::atomic_shape(), test::atomics_k{}, s, t, b, add_olds, sub_olds, inc_olds,
         exchange_olds)
      .wait();
  auto totals = back(t, 1)[0];
  auto blocks = back(b, nb);
  test::check_atomics(totals, blocks, back(add_olds, n), back(sub_olds, n), back(inc_olds, n),
                      back(exchange_olds, n));
}

TEST_P(KernelSuite, ContendedAtomicsOfEveryOperationAndScope) {
  for (scope s : {scope::device, scope::system}) {
    SCOPED_TRACE(s == scope::device ? "device scope" : "system scope");
    run_contended_atomics<host_space>(machine, here(), s);
  }
}

TEST(KernelSuiteSim, ContendedAtomicsOfEveryOperationAndScope) {
  runtime rt{runtime_options{.sim_devices = "1:units=2"}};
  place sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  for (scope s : {scope::device, scope::system}) {
    SCOPED_TRACE(s == scope::device ? "device scope" : "system scope");
    run_contended_atomics<sim_space>(sim0, sim0, s);
  }
}

// Inc/dec at their limits, one thread: CUDA's definitions, including an old value above
// the limit.
TEST(AtomicSemantics, IncAndDecWrapAsCudaDefinesThem) {
  unsigned u = 0;
  EXPECT_EQ(atomic_inc(&u, 2u), 0u);
  EXPECT_EQ(atomic_inc(&u, 2u), 1u);
  EXPECT_EQ(atomic_inc(&u, 2u), 2u);
  EXPECT_EQ(u, 0u);  // old >= limit: back to 0
  u = 7;
  EXPECT_EQ(atomic_inc(scope::block, &u, 2u), 7u);
  EXPECT_EQ(u, 0u);
  EXPECT_EQ(atomic_dec(&u, 2u), 0u);
  EXPECT_EQ(u, 2u);  // 0: to the limit
  EXPECT_EQ(atomic_dec(&u, 2u), 2u);
  EXPECT_EQ(u, 1u);
  u = 9;
  EXPECT_EQ(atomic_dec(scope::system, &u, 2u), 9u);
  EXPECT_EQ(u, 2u);  // old > limit: to the limit
  unsigned long long w = ~0ull;
  EXPECT_EQ(atomic_inc(&w, ~0ull), ~0ull);
  EXPECT_EQ(w, 0u);
  EXPECT_EQ(atomic_dec(&w, 1ull << 40), 0u);
  EXPECT_EQ(w, 1ull << 40);
}

TEST(AtomicSemantics, EveryOperationReturnsTheOldValue) {
  int i = 5;
  EXPECT_EQ(atomic_sub(&i, 2), 5);
  EXPECT_EQ(atomic_and(&i, 6), 3);
  EXPECT_EQ(atomic_or(&i, 8), 2);
  EXPECT_EQ(atomic_xor(scope::block, &i, 3), 10);
  EXPECT_EQ(i, 9);
  double d = 1.5;
  EXPECT_EQ(atomic_sub(scope::system, &d, 0.25), 1.5);
  EXPECT_EQ(atomic_min(&d, -2.0), 1.25);
  EXPECT_EQ(atomic_max(&d, 4.0), -2.0);
  EXPECT_EQ(d, 4.0);
  float f = 3.0f;
  EXPECT_EQ(atomic_cas(&f, 2.0f, 9.0f), 3.0f);  // no match: unchanged
  EXPECT_EQ(atomic_cas(&f, 3.0f, 9.0f), 3.0f);
  EXPECT_EQ(f, 9.0f);
  long l = -3;
  EXPECT_EQ(atomic_add(&l, 1), -3);  // an int literal for a long: the value's type follows *p
  EXPECT_EQ(atomic_exchange(scope::block, &l, 40), -2);
  EXPECT_EQ(l, 40);
}

TEST_P(KernelSuite, ExceptionInAKernelReachesWait) {
  auto e = launch(here(), grid(1000).elements(4), [](auto const& self) {
    if (self.block_index()[0] == 617) throw std::runtime_error("block 617 failed");
  });
  try {
    e.wait();
    FAIL() << "no exception";
  } catch (std::runtime_error const& err) {
    EXPECT_STREQ(err.what(), "block 617 failed");
  }
  EXPECT_TRUE(e.has_failed());
  // In a fiber block and in a phase too.
  auto s = grid(4).block(parallel, 8);
  EXPECT_THROW(launch(here(), s,
                      [](auto const& self) {
                        self.block().barrier();
                        if (self.block().linear_index() == 3) throw std::logic_error("fiber");
                        self.block().barrier();
                      })
                   .wait(),
               std::logic_error);
  EXPECT_THROW(launch(here(), s,
                      phases<int>([](auto const&, int&) {},
                                  [](auto const&, int&) { throw std::logic_error("phase"); }))
                   .wait(),
               std::logic_error);
}

TEST_P(KernelSuite, BarrierNotReachedByAllThreadsIsAnError) {
  auto e = launch(here(), grid(2).block(parallel, 4), [](auto const& self) {
    if (self.block().linear_index() % 2 == 0) self.block().barrier();
  });
  try {
    e.wait();
    FAIL();
  } catch (error const& err) {
    EXPECT_NE(std::string(err.what()).find("2 of the block's 4 threads returned"),
              std::string::npos)
        << err.what();
  }
}

TEST_P(KernelSuite, ScratchpadOverflowIsAnError) {
  auto e = launch(here(), grid(1).block(parallel, 2).scratchpad(16),
                  [](auto const& self) { self.block().template scratchpad<double>(4); });
  EXPECT_THROW(e.wait(), invalid_argument);
}

TEST_P(KernelSuite, NestedLaunchesFromRunningKernels) {
  // Every outer block launches an inner kernel on the same backend and waits for it:
  // the waiting thread must help, never block the pool.
  int const outer = 16, inner = 64;
  std::vector<int> out(outer * inner, 0);
  auto where = here();
  launch(
      where, grid(outer),
      [where](auto const& self, int* out) {
        auto base = self.block_index()[0] * inner;
        launch(
            where, grid(inner), [](auto const& s, int* o) { o[s.block_index()[0]] += 1; },
            out + base)
            .wait();
      },
      out.data())
      .wait();
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](int v) { return v == 1; }));
}

TEST_P(KernelSuite, AfterChainsAndQueuesKeepOrder) {
  int const n = 4096;
  std::vector<int> a(n, 0), b(n, 0);
  auto fill = launch(
      here(), grid(n), [](auto const& s, int* a) { a[s.block_index()[0]] = 1; }, a.data());
  auto copy = launch(
      after(fill), here(), grid(n),
      [](auto const& s, int const* a, int* b) {
        b[s.block_index()[0]] = a[s.block_index()[0]] + 1;
      },
      a.data(), b.data());
  copy.wait();
  EXPECT_TRUE(std::all_of(b.begin(), b.end(), [](int v) { return v == 2; }));

  queue q(here());
  std::vector<int> v(n, 0);
  for (int step = 0; step < 20; ++step)
    q.launch(
        grid(64).elements(64),
        [step](auto const& s, int* v) {
          for (auto i : s.elements())
            if (v[i] == step) v[i] = step + 1;  // only correct if steps run in order
        },
        v.data());
  q.wait();
  EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](int x) { return x == 20; }));
}

TEST_P(KernelSuite, FailurePropagatesAlongAfterAndQueues) {
  auto bad = launch(here(), grid(1), [](auto const&) { throw std::runtime_error("first"); });
  bool ran = false;
  auto next = launch(after(bad), here(), grid(1), [&ran](auto const&) { ran = true; });
  EXPECT_THROW(next.wait(), std::runtime_error);
  EXPECT_FALSE(ran);
  queue q(here());
  q.launch(grid(1), [](auto const&) { throw std::runtime_error("queued"); });
  q.launch(grid(1), [&ran](auto const&) { ran = true; });
  EXPECT_THROW(q.wait(), std::runtime_error);
  EXPECT_FALSE(ran);
}

TEST_P(KernelSuite, RunsOnASingleProcessor) {
  std::vector<int> v(1000, 0);
  launch(
      on_first_pu(), grid(1000), [](auto const& s, int* v) { v[s.block_index()[0]] = 1; }, v.data())
      .wait();
  EXPECT_EQ(std::count(v.begin(), v.end(), 1), 1000);
}

TEST_P(KernelSuite, BlockOverTheLimitIsAnError) {
  try {
    launch(here(), grid(1).block(parallel, 2048), [](auto const&) {});
    FAIL();
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("block of 2048 threads exceeds"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("limit of 1024"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, KernelSuite, testing::ValuesIn(test::cpu_backends()),
                         test::backend_name);

}  // namespace
}  // namespace strata
