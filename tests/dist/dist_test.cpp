// strata::dist under mpiexec -n 1..4 (tests/dist/CMakeLists.txt): the cluster tree, remote
// tasks, global pointers, atomics, teams and collectives, and their errors. Every rank
// runs every test; data that every rank must agree on comes from deterministic seeds.
#include <strata/dist.hpp>
#include <strata/exec.hpp>
#include <strata/machine/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>
#include <unistd.h>

using namespace strata;
namespace dist = strata::dist;

namespace {

constexpr auto limit = std::chrono::seconds(30);

// Waits with a deadline (a lost message must fail the test, not hang it); a failure of
// the event itself is left to the caller's wait().
void wait_or_fail(event const& e, char const* what) {
  bool done = true;
  try {
    done = e.wait_for(limit);
  } catch (...) {
  }
  ASSERT_TRUE(done) << what << " did not complete within " << limit.count() << " s";
}

struct add {
  int operator()(int a, int b) const { return a + b; }
};

struct nothing_to_do {
  void operator()() const {}
};

// A weighted sum of the elements and their count: what a large argument must arrive as.
struct weigh {
  std::uint64_t operator()(std::vector<std::uint32_t> const& v) const {
    std::uint64_t s = v.size();
    for (std::size_t i = 0; i < v.size(); ++i) s += v[i] * (i % 7 + 1);
    return s;
  }
};

// The vector reversed: a reply as long as the argument.
struct mirror {
  std::vector<std::uint32_t> operator()(std::vector<std::uint32_t> v) const {
    std::reverse(v.begin(), v.end());
    return v;
  }
};

struct describe {
  std::string operator()(std::string const& who, std::vector<int> const& v) const {
    return who + "@" + std::to_string(dist::runtime::current().rank()) + ":" +
           std::to_string(std::accumulate(v.begin(), v.end(), 0));
  }
};

struct thrower {
  int code;
  int operator()() const {
    throw std::runtime_error("boom " + std::to_string(code) + " from rank " +
                             std::to_string(dist::runtime::current().rank()));
  }
};

int triple(int x) {
  return 3 * x;
}

// Step i of a chain: the shared counter must read i when it runs.
struct chain_step {
  dist::global_ptr<long> counter;
  long i;
  void operator()() const {
    long old = dist::atomic_fetch_add(counter, 1L).get();
    if (old != i)
      throw std::logic_error("chain step " + std::to_string(i) + " ran after " +
                             std::to_string(old) + " steps");
  }
};

// A remote task that launches a kernel on its own rank's CPUs (Phalanx's hierarchy).
struct local_sum {
  int n;
  long operator()() const {
    auto& rt = dist::runtime::current();
    std::vector<long> v(static_cast<std::size_t>(n));
    auto* p = v.data();
    launch(rt.machine(), grid(n), [p](auto const& self) {
      auto i = self.global_index();
      p[i] = static_cast<long>(i);
    }).wait();
    return std::accumulate(v.begin(), v.end(), 0L);
  }
};

struct my_rank {
  int operator()() const { return dist::runtime::current().rank(); }
};

// A remote call that calls the next rank and waits for it, `hops` deep: the thread that
// runs it (often one that received it in its own wait) waits inside it, and the calls that
// reach its rank meanwhile must still run.
struct bounce {
  int hops;
  long operator()() const {
    auto& rt = dist::runtime::current();
    if (hops == 0) return rt.rank();
    auto next = dist::async(rt.rank_place((rt.rank() + 1) % rt.size()), bounce{hops - 1});
    return next.get() * 10 + rt.rank();
  }
};
// A call that waits for a later call of the same sender (a gate on the target rank that the
// later call opens): both may arrive in one progress round of one thread, which must not
// run them one after the other (the first would wait for ever, src/dist/engine.cpp).
std::mutex gates_mutex;
std::map<long, event> gates;
event gate(long key) {
  std::lock_guard lock(gates_mutex);
  auto [it, fresh] = gates.try_emplace(key, event::pending());
  return it->second;
}
struct wait_at_gate {
  long key;
  int operator()() const { return gate(key).wait_for(std::chrono::seconds(20)) ? 1 : 0; }
};
struct open_gate {
  long key;
  void operator()() const { gate(key).complete(); }
};

long bounce_expected(int from, int hops, int size) {
  long v = (from + hops) % size;  // the last hop's rank
  for (int h = hops - 1; h >= 0; --h) v = v * 10 + (from + h) % size;
  return v;
}

}  // namespace

TEST(DistCluster, OneRankPlacePerProcessEachHoldingItsMachine) {
  dist::runtime rt;
  auto c = rt.cluster();
  EXPECT_EQ(c.type(), place_type::cluster);
  ASSERT_EQ(static_cast<int>(c.children().size()), rt.size());
  auto local_count = rt.machine().descendants().size();
  for (int r = 0; r < rt.size(); ++r) {
    auto rp = rt.rank_place(r);
    EXPECT_EQ(rp.type(), place_type::rank);
    EXPECT_EQ(rp.info().rank, r);
    for (auto const& d : rp.descendants()) EXPECT_EQ(d.info().rank, r) << d.path();
    ASSERT_EQ(rp.children().size(), 1u);
    EXPECT_EQ(rp.children().front().type(), place_type::machine);
    // Every rank runs on this machine here, so every subtree matches the local machine.
    EXPECT_EQ(rp.descendants().size(), local_count + 1);
    EXPECT_EQ(dist::rank_of(rp.processors().front()), r);
  }
  // The local PUs in the cluster tree map back to the local machine's PUs.
  auto my_pus = rt.here().processors();
  auto local_pus = rt.machine().processors();
  ASSERT_EQ(my_pus.size(), local_pus.size());
  for (std::size_t i = 0; i < my_pus.size(); ++i) EXPECT_EQ(rt.to_local(my_pus[i]), local_pus[i]);
  EXPECT_EQ(rt.to_local(rt.here()), rt.machine());
  // Slicing by ISA keeps the rank structure.
  auto host = c.slice(isa::host);
  EXPECT_EQ(static_cast<int>(host.children().size()), rt.size());
  EXPECT_EQ(host.processors().size(), local_pus.size() * static_cast<std::size_t>(rt.size()));
  // The JSON of the cluster reloads with the same places and ranks.
  auto again = machine_from_json(to_json(c));
  EXPECT_EQ(again.descendants().size(), c.descendants().size());
  EXPECT_EQ(again.children().back().info().rank, rt.size() - 1);
}

// Issue 13: under an MPI launcher every rank traces to a file of its own with process
// lanes of its own: rank r of several writes x.rank<r>.json, whose processes are named
// "rank r ..." (a single rank writes x.json, unprefixed).
TEST(DistTrace, EachRankWritesItsOwnFileAndLanes) {
  auto const dir = std::filesystem::temp_directory_path();
  int rank = 0, size = 1;
  {
    dist::runtime rt(runtime_options{.trace = (dir / "strata_dist_trace.json").string()});
    rank = rt.rank();
    size = rt.size();
    launch(on(rt.machine(), backend_id::serial), grid(1), [](auto const&) {}).wait();
    dist::barrier(rt.world()).wait();
  }
  auto const mine = size > 1 ? dir / ("strata_dist_trace.rank" + std::to_string(rank) + ".json")
                             : dir / "strata_dist_trace.json";
  std::ifstream in(mine);
  ASSERT_TRUE(in) << "rank " << rank << " wrote no " << mine;
  std::string const text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string const process = "\"name\":\"process_name\"";
  std::string const prefix = size > 1 ? "rank " + std::to_string(rank) + " " : "";
  int processes = 0;
  for (auto at = text.find(process); at != std::string::npos; at = text.find(process, at + 1)) {
    ++processes;
    auto const name = text.find("\"args\":{\"name\":\"", at);
    ASSERT_NE(name, std::string::npos);
    EXPECT_EQ(text.compare(name + 16, prefix.size(), prefix), 0)
        << "rank " << rank << ": " << text.substr(name, 60);
  }
  EXPECT_GE(processes, 1) << text;
  EXPECT_NE(text.find("\"" + prefix + "host\""), std::string::npos) << text;
  std::filesystem::remove(mine);
}

TEST(DistCluster, BadPlacesAndRanksAreRefused) {
  dist::runtime rt;
  EXPECT_THROW(rt.rank_place(rt.size()), invalid_argument);
  EXPECT_THROW(rt.rank_place(-1), invalid_argument);
  EXPECT_THROW(dist::rank_of(rt.cluster()), invalid_argument);
  EXPECT_THROW(dist::rank_of(rt.machine()), invalid_argument);  // local tree, not the cluster
  EXPECT_THROW(dist::async(place{}, add{}, 1, 2), invalid_argument);
  if (rt.size() > 1) {
    EXPECT_THROW(rt.to_local(rt.rank_place((rt.rank() + 1) % rt.size())), invalid_argument);
  }
  EXPECT_THROW(dist::put(dist::global_ptr<int>(rt.size(), 64), static_cast<int const*>(nullptr), 0),
               invalid_argument);
  EXPECT_THROW(dist::get(static_cast<int*>(nullptr), dist::global_ptr<int>(-3, 64), 0),
               invalid_argument);
  EXPECT_THROW(rt.make_team({rt.rank(), rt.size()}), invalid_argument);
  EXPECT_THROW(rt.make_team({rt.rank(), rt.rank()}), invalid_argument);
  EXPECT_EQ(rt.thread_level(), "multiple");
  try {
    rt.rank_place(rt.size() + 5);
    FAIL();
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
}

TEST(DistAsync, RoundTripsToEveryRank) {
  dist::runtime rt;
  std::vector<dist::future<int>> sums;
  std::vector<dist::future<std::string>> texts;
  for (int r = 0; r < rt.size(); ++r) {
    sums.push_back(dist::async(rt.rank_place(r), add{}, r, 100 * rt.rank()));
    texts.push_back(dist::async(rt.rank_place(r).processors().back(), describe{},
                                std::string("from ") + std::to_string(rt.rank()),
                                std::vector<int>(static_cast<std::size_t>(r + 1), 2)));
  }
  for (int r = 0; r < rt.size(); ++r) {
    wait_or_fail(sums[r].event(), "async add");
    EXPECT_EQ(sums[r].get(), r + 100 * rt.rank());
    EXPECT_EQ(texts[r].get(), "from " + std::to_string(rt.rank()) + "@" + std::to_string(r) + ":" +
                                  std::to_string(2 * (r + 1)));
  }
  auto f = dist::async(rt.rank_place(rt.size() - 1), dist::fn<&triple>{}, 14);
  EXPECT_EQ(f.get(), 42);
  // A lambda with captures travels as its bytes.
  int base = 1000;
  auto g = dist::async(
      rt.rank_place(0), [base](int x) { return base + x; }, 5);
  EXPECT_EQ(g.get(), 1005);
  dist::barrier(rt.world()).wait();
}

TEST(DistAsync, ChainsAcrossRanksFollowTheirDependencies) {
  dist::runtime rt;
  dist::global_ptr<long> counter;
  if (rt.rank() == 0) {
    counter = dist::allocate<long>(rt.here(), 1).get();
    *counter.local() = 0;
  }
  dist::broadcast(rt.world(), std::span(&counter, 1), 0).wait();
  if (rt.rank() == 0) {
    // 24 steps hopping over the ranks, each after the previous one, with a local kernel
    // event mixed into the dependencies of every fourth step.
    event previous;
    for (long i = 0; i < 24; ++i) {
      std::vector<event> deps{previous};
      if (i % 4 == 0) deps.push_back(launch(rt.machine(), grid(8), [](auto const&) {}));
      auto target = rt.rank_place(static_cast<int>((i * 7 + 1) % rt.size()));
      previous = dist::async(after(std::move(deps)), target, chain_step{counter, i}).event();
    }
    wait_or_fail(previous, "the chain");
    previous.wait();
    EXPECT_EQ(*counter.local(), 24);
    // A failed dependency fails the remote task without running it.
    auto failing = dist::async(rt.rank_place(rt.size() - 1), thrower{1});
    auto skipped = dist::async(after(failing.event()), rt.rank_place(0), chain_step{counter, 24});
    EXPECT_THROW(skipped.get(), dist::remote_error);
    EXPECT_EQ(*counter.local(), 24);
    dist::deallocate(counter).wait();
  }
  dist::barrier(rt.world()).wait();
}

TEST(DistAsync, TenThousandConcurrentSmallTasks) {
  dist::runtime rt;
  int const total = 10000;
  // Spread over the ranks as issuers too: every rank sends its share to every rank.
  int const mine = total / rt.size() + (rt.rank() < total % rt.size() ? 1 : 0);
  std::vector<dist::future<int>> fs;
  fs.reserve(static_cast<std::size_t>(mine));
  for (int i = 0; i < mine; ++i)
    fs.push_back(dist::async(rt.rank_place((i + rt.rank()) % rt.size()), add{}, i, rt.rank()));
  for (int i = 0; i < mine; ++i) {
    wait_or_fail(fs[static_cast<std::size_t>(i)].event(), "a small task");
    ASSERT_EQ(fs[static_cast<std::size_t>(i)].get(), i + rt.rank());
  }
  long issued = mine, all = 0;
  dist::all_reduce(rt.world(), std::span<long const>(&issued, 1), std::span(&all, 1),
                   dist::reduce_op::sum)
      .wait();
  EXPECT_EQ(all, total);
}

// Arguments from a few bytes to several times a ring's capacity, sent by two threads of
// every rank to every rank at once: both directions of every pair fill their rings, so
// each sender queues what does not fit and streams it out while it receives (a sender
// that waited for room would wait for a peer that waits for it). Sizes cross the ring's
// end at changing offsets; every sum must come back right.
TEST(DistAsync, LargeArgumentsBothWaysAtOnce) {
  dist::runtime rt;
  auto const before = dist::detail::ring_messages();
  constexpr int threads = 2, calls = 6;
  std::size_t const sizes[] = {1, 17, 61000, 65536, 300000, 700001};
  auto user = [&](int who) {
    std::mt19937_64 rng(5 + static_cast<unsigned>(who + 16 * rt.rank()));
    std::vector<std::pair<dist::future<std::uint64_t>, std::uint64_t>> out;
    // Every third call returns its argument reversed: replies as long (queued on the
    // target's side, by whichever thread ran the call).
    std::vector<std::pair<dist::future<std::vector<std::uint32_t>>, std::vector<std::uint32_t>>>
        back;
    for (int i = 0; i < calls; ++i)
      for (int r = 0; r < rt.size(); ++r) {
        std::size_t const n = sizes[static_cast<std::size_t>(i + r + who) % std::size(sizes)] +
                              static_cast<std::size_t>(rng() % 5);
        std::vector<std::uint32_t> v(n);
        for (auto& x : v) x = static_cast<std::uint32_t>(rng());
        if ((i + r) % 3 == 0) {
          auto expected = mirror{}(v);
          back.emplace_back(dist::async(rt.rank_place(r), mirror{}, v), std::move(expected));
          continue;
        }
        auto expected = weigh{}(v);
        out.emplace_back(dist::async(rt.rank_place(r), weigh{}, v), expected);
      }
    for (auto& [f, expected] : out) {
      wait_or_fail(f.event(), "a large call");
      if (f.get() != expected) throw std::logic_error("a large argument arrived changed");
    }
    for (auto& [f, expected] : back) {
      wait_or_fail(f.event(), "a large reply");
      if (f.get() != expected) throw std::logic_error("a large reply arrived changed");
    }
  };
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      try {
        user(t);
      } catch (...) {
        errors[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  for (auto& t : ts) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  dist::barrier(rt.world()).wait();
  // With rings (the default on one node) the messages went through them.
  if (rt.size() > 1 && dist::detail::ring_transport())
    EXPECT_GT(dist::detail::ring_messages(), before);
  else
    EXPECT_EQ(dist::detail::ring_messages(), before);
}

// Rings are used by every rank or by none: one rank that may not use them (here
// STRATA_DIST_RINGS=0 on it alone, test dist.rings.one_rank_off) turns them off on all,
// and remote calls still work. STRATA_TEST_EXPECT_RINGS says what the ctest expects.
TEST(DistAsync, RingsAreUsedByEveryRankOrByNone) {
  dist::runtime rt;
  int const mine = dist::detail::ring_transport() ? 1 : 0;
  int lowest = 0, highest = 0;
  dist::all_reduce(rt.world(), std::span<int const>(&mine, 1), std::span(&lowest, 1),
                   dist::reduce_op::min)
      .wait();
  dist::all_reduce(rt.world(), std::span<int const>(&mine, 1), std::span(&highest, 1),
                   dist::reduce_op::max)
      .wait();
  EXPECT_EQ(lowest, highest);
  if (char const* e = std::getenv("STRATA_TEST_EXPECT_RINGS")) {
    EXPECT_EQ(mine, std::atoi(e));
  } else if (std::getenv("STRATA_DIST_RINGS") == nullptr) {
    EXPECT_EQ(mine, rt.size() > 1 && dist::detail::direct_mapping(rt.world()) ? 1 : 0);
  }
  std::vector<dist::future<int>> sums;
  for (int r = 0; r < rt.size(); ++r)
    sums.push_back(dist::async(rt.rank_place(r), add{}, r, rt.rank()));
  for (int r = 0; r < rt.size(); ++r)
    EXPECT_EQ(sums[static_cast<std::size_t>(r)].get(), r + rt.rank());
  dist::barrier(rt.world()).wait();
}

TEST(DistAsync, RemoteCallsThatCallOnAndWait) {
  dist::runtime rt;
  // Every rank starts chains of 1..4 hops at once, 16 of them, while the others do the
  // same: calls arrive at threads that are themselves inside a call's wait.
  std::vector<dist::future<long>> fs;
  std::vector<long> expected;
  int const next = (rt.rank() + 1) % rt.size();
  for (int i = 0; i < 16; ++i) {
    int const hops = i % 4;
    fs.push_back(dist::async(rt.rank_place(next), bounce{hops}));
    expected.push_back(bounce_expected(next, hops, rt.size()));
  }
  for (std::size_t i = 0; i < fs.size(); ++i) {
    wait_or_fail(fs[i].event(), "a chain of calls");
    EXPECT_EQ(fs[i].get(), expected[i]) << "chain " << i;
  }
  dist::barrier(rt.world()).wait();
}

TEST(DistAsync, ACallThatWaitsForALaterCallDoesNotHoldItBack) {
  dist::runtime rt;
  auto const target = rt.rank_place((rt.rank() + 1) % rt.size());
  std::vector<dist::future<int>> waits;
  std::vector<dist::future<void>> opens;
  for (long k = 0; k < 32; ++k) {
    long const key = rt.rank() * 1000 + k;  // distinct per sender on the shared target
    waits.push_back(dist::async(target, wait_at_gate{key}));
    opens.push_back(dist::async(target, open_gate{key}));
  }
  for (std::size_t i = 0; i < waits.size(); ++i) {
    wait_or_fail(waits[i].event(), "a call waiting for a later one");
    EXPECT_EQ(waits[i].get(), 1) << "call " << i << " waited 20 s for the call after it";
    opens[i].get();
  }
  dist::barrier(rt.world()).wait();
}

TEST(DistAsync, RemoteExceptionsNameTheRank) {
  dist::runtime rt;
  int const target = (rt.rank() + 1) % rt.size();
  auto f = dist::async(rt.rank_place(target), thrower{7});
  try {
    f.get();
    FAIL() << "expected the remote exception";
  } catch (dist::remote_error const& e) {
    EXPECT_EQ(e.rank(), target);
    std::string what = e.what();
    EXPECT_NE(what.find("on rank " + std::to_string(target)), std::string::npos) << what;
    EXPECT_NE(what.find("boom 7 from rank " + std::to_string(target)), std::string::npos) << what;
  }
  // The runtime is still usable after a failure.
  EXPECT_EQ(dist::async(rt.rank_place(target), add{}, 1, 1).get(), 2);
  dist::barrier(rt.world()).wait();
}

TEST(DistAsync, NamedFunctionsAndTheirErrors) {
  dist::runtime rt;
  dist::register_function<double(double, int)>("scale", [](double x, int k) { return x * k; });
  if (rt.rank() == 0) dist::register_function<int()>("only_on_zero", [] { return 0; });
  dist::barrier(rt.world()).wait();  // registered everywhere before anyone calls
  int const target = rt.size() - 1;
  EXPECT_EQ(dist::async_named<double>(rt.rank_place(target), "scale", 1.5, 4).get(), 6.0);
  // Unknown name: a clear error from the target, naming the call.
  auto unknown = dist::async_named<int>(rt.rank_place(target), "no_such_function", 1);
  try {
    unknown.get();
    FAIL();
  } catch (dist::remote_error const& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("no_such_function"), std::string::npos) << what;
    EXPECT_NE(what.find("no function"), std::string::npos) << what;
  }
  if (target != 0) {
    EXPECT_THROW(dist::async_named<int>(rt.rank_place(target), "only_on_zero").get(),
                 dist::remote_error);
  }
  // Wrong argument types: refused by the target, not misread.
  try {
    dist::async_named<double>(rt.rank_place(target), "scale", 1.5, 4.0).get();
    FAIL();
  } catch (dist::remote_error const& e) {
    EXPECT_NE(std::string(e.what()).find("double (double, int)"), std::string::npos) << e.what();
  }
  dist::barrier(rt.world()).wait();
}

TEST(DistAsync, ANewRegistrationIsSeenByTheNextCall) {
  // A thread keeps the function it ran last (engine::invoke); a registration since must
  // reach the next call, and a conflicting one must refuse it.
  dist::runtime rt;
  int const target = rt.size() - 1;
  auto call = [&] { return dist::async_named<int>(rt.rank_place(target), "reregistered").get(); };
  dist::register_function<int()>("reregistered", [] { return 1; });
  dist::barrier(rt.world()).wait();
  for (int i = 0; i < 20; ++i) ASSERT_EQ(call(), 1);
  dist::barrier(rt.world()).wait();
  dist::register_function<int()>("reregistered", [] { return 2; });
  dist::barrier(rt.world()).wait();
  for (int i = 0; i < 20; ++i) ASSERT_EQ(call(), 2);
  dist::barrier(rt.world()).wait();
  dist::register_function<long()>("reregistered", [] { return 3L; });
  dist::barrier(rt.world()).wait();
  try {
    call();
    FAIL() << "expected the conflicting registration to refuse the call";
  } catch (dist::remote_error const& e) {
    EXPECT_NE(std::string(e.what()).find("two different functions"), std::string::npos) << e.what();
  }
  dist::barrier(rt.world()).wait();
}

TEST(DistAsync, RemoteTasksLaunchKernelsOnTheirRank) {
  dist::runtime rt;
  auto f = dist::async(rt.rank_place((rt.rank() + 1) % rt.size()), local_sum{1000});
  EXPECT_EQ(f.get(), 999L * 1000 / 2);
  auto each = dist::async_each(rt.world(), my_rank{});
  ASSERT_EQ(static_cast<int>(each.size()), rt.size());
  wait_or_fail(dist::when_all(each), "async_each");
  for (int r = 0; r < rt.size(); ++r) EXPECT_EQ(each[static_cast<std::size_t>(r)].get(), r);
  dist::barrier(rt.world()).wait();
}

TEST(DistMemory, RandomPutsAndGetsMatchAReference) {
  dist::runtime rt;
  int const target = (rt.rank() + 1) % rt.size();
  std::size_t const n = 300000;  // 2.4 MB of doubles: inline and rendezvous transfers
  auto g = dist::allocate<double>(rt.rank_place(target), n).get();
  EXPECT_EQ(g.rank(), target);
  std::vector<double> reference(n, 0.0);
  wait_or_fail(dist::put(g, reference.data(), n), "the first put");
  std::mt19937_64 rng(1234 + static_cast<unsigned>(rt.rank()));
  std::vector<std::vector<double>> sources;
  std::vector<event> pending;
  for (int round = 0; round < 40; ++round) {
    std::size_t size = rng() % 3 == 0 ? rng() % 200000 : rng() % 1500;
    std::size_t offset = rng() % (n - size + 1);
    std::vector<double> data(size);
    for (auto& x : data) x = static_cast<double>(rng() % 100000);
    std::copy(data.begin(), data.end(), reference.begin() + static_cast<long>(offset));
    // Ordered: each put after the previous one, so overlapping ranges end as the
    // reference says.
    after deps;
    if (!pending.empty()) deps.events.push_back(pending.back());
    sources.push_back(std::move(data));
    pending.push_back(dist::put(deps, g + static_cast<long>(offset), sources.back().data(), size));
    if (round % 5 == 4) {
      wait_or_fail(pending.back(), "a put");
      std::size_t gsize = rng() % 100000 + 1, goff = rng() % (n - gsize + 1);
      std::vector<double> back(gsize, -1.0);
      wait_or_fail(dist::get(back.data(), g + static_cast<long>(goff), gsize), "a get");
      ASSERT_TRUE(std::equal(back.begin(), back.end(), reference.begin() + static_cast<long>(goff)))
          << "round " << round;
    }
  }
  for (auto& e : pending) wait_or_fail(e, "a put");
  std::vector<double> all(n);
  wait_or_fail(dist::get(all.data(), g, n), "the final get");
  EXPECT_EQ(all, reference);
  // Copy between two global pointers on (possibly) other ranks, staged through here.
  auto h = dist::allocate<double>(rt.rank_place((rt.rank() + 2) % rt.size()), 1000).get();
  wait_or_fail(dist::copy(h, g + 5, 1000), "a copy");
  std::vector<double> copied(1000);
  dist::get(copied.data(), h, 1000).wait();
  EXPECT_TRUE(std::equal(copied.begin(), copied.end(), reference.begin() + 5));
  dist::deallocate(h).wait();
  dist::deallocate(g).wait();
  // No rank allocates after this barrier, so the freed addresses are not reused.
  dist::barrier(rt.world()).wait();
  // Freed memory is refused by its rank, not written.
  double one = 1.0;
  auto late = dist::put(g, &one, 1);
  wait_or_fail(late, "a put to freed memory");
  EXPECT_THROW(late.wait(), dist::remote_error);
  std::vector<double> big(20000, 2.0);
  EXPECT_THROW(dist::put(g + 3, big.data(), big.size()).wait(), dist::remote_error);
  EXPECT_THROW(dist::get(big.data(), g, big.size()).wait(), dist::remote_error);
  EXPECT_THROW(dist::deallocate(g).wait(), dist::remote_error);  // twice
  dist::barrier(rt.world()).wait();
}

// The progress token (docs/dist.md "Progress"): threads that post operations run them
// themselves when nobody else makes progress, and threads that wait run progress rounds.
// Here four plain threads and a kernel's blocks (pool workers in nested waits) issue
// puts, gets and remote calls at once, each into its own slice of the next rank's
// memory, while the MPI thread competes for the token: every byte must arrive, every
// reply must come back to its own caller, and one thread's puts must land in order.
TEST(DistProgress, ThreadsThatPostAndWaitConcurrently) {
  dist::runtime rt;
  int const target = (rt.rank() + 1) % rt.size();
  constexpr int threads = 4, blocks = 4, rounds = 60;
  constexpr std::size_t slice = 2048;  // doubles per user: inline and rendezvous sizes
  auto g = dist::allocate<double>(rt.rank_place(target), (threads + blocks) * slice).get();
  auto user = [&](int who) {
    std::mt19937_64 rng(77 + static_cast<unsigned>(who + 16 * rt.rank()));
    auto mine = g + static_cast<long>(static_cast<std::size_t>(who) * slice);
    for (int round = 0; round < rounds; ++round) {
      std::size_t const n = round % 3 == 0 ? slice : 1 + rng() % 64;
      std::vector<double> data(n);
      for (auto& x : data) x = static_cast<double>(rng() % 1000000) + who;
      // Two puts back to back without waiting: the second must land last.
      std::vector<double> first(n, -1.0);
      auto a = dist::put(mine, first.data(), n);
      auto b = dist::put(after(a), mine, data.data(), n);
      auto f = dist::async(rt.rank_place(target), add{}, round, who);
      b.wait();
      std::vector<double> back(n, -2.0);
      dist::get(back.data(), mine, n).wait();
      if (back != data)
        throw std::logic_error("user " + std::to_string(who) + " round " + std::to_string(round) +
                               ": get differs from put");
      if (f.get() != round + who)
        throw std::logic_error("user " + std::to_string(who) + ": a reply went astray");
    }
  };
  std::vector<std::thread> plain;
  std::vector<std::exception_ptr> errors(threads + blocks);
  for (int t = 0; t < threads; ++t)
    plain.emplace_back([&, t] {
      try {
        user(t);
      } catch (...) {
        errors[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  auto kernel = launch(rt.machine(), grid(blocks), [&](auto const& self) {
    auto const b = static_cast<int>(self.global_index());
    try {
      user(threads + b);
    } catch (...) {
      errors[static_cast<std::size_t>(threads + b)] = std::current_exception();
    }
  });
  wait_or_fail(kernel, "the kernel's users");
  for (auto& t : plain) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  dist::barrier(rt.world()).wait();
  dist::deallocate(g).wait();
  dist::barrier(rt.world()).wait();
}

TEST(DistMemory, OutOfBoundsAccessesFailOnTheTarget) {
  dist::runtime rt;
  int const target = rt.size() - 1;
  auto g = dist::allocate<int>(rt.rank_place(target), 100).get();
  std::vector<int> v(101, 1);
  EXPECT_NO_THROW(dist::put(g, v.data(), 100).wait());
  try {
    dist::put(g, v.data(), 101).wait();  // one element past the end
    FAIL();
  } catch (dist::remote_error const& e) {
    EXPECT_EQ(e.rank(), target);
    EXPECT_NE(std::string(e.what()).find("404 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dist::get(v.data(), g - 1, 2).wait(), dist::remote_error);
  EXPECT_THROW(dist::atomic_fetch_add(g + 100, 1).get(), dist::remote_error);
  dist::deallocate(g).wait();
  // make_global exposes local memory to the others.
  std::vector<int> mine(10, rt.rank());
  auto exposed = dist::make_global(std::span(mine));
  std::vector<dist::global_ptr<int>> all(static_cast<std::size_t>(rt.size()));
  dist::all_gather(rt.world(), std::span<dist::global_ptr<int> const>(&exposed, 1), std::span(all))
      .wait();
  int const from = (rt.rank() + 1) % rt.size();
  std::vector<int> got(10, -1);
  dist::get(got.data(), all[static_cast<std::size_t>(from)], 10).wait();
  EXPECT_EQ(got, std::vector<int>(10, from));
  dist::barrier(rt.world()).wait();
  dist::release_global(exposed);
  dist::barrier(rt.world()).wait();
}

// On one node (every test run here), dist::allocate's memory is mapped by the peers and
// puts, gets and atomics into it are memory operations (docs/dist.md "Put and get on one
// node"); STRATA_DIST_DIRECT=0 or =read keeps messages. Covers the paths that only the
// mapping has: the first access asks the owner, later ones go through the cached window
// (this thread's last one, without a lock), a put after a pending event, an access past
// the end of a mapped segment, and a segment freed while a peer holds its mapping.
TEST(DistMemory, PutsAndGetsOnOneNodeAreMemoryCopies) {
  dist::runtime rt;
  char const* mode = std::getenv("STRATA_DIST_DIRECT");
  bool const mapped = rt.size() > 1 && (!mode || std::string(mode) == "1");
  int const target = (rt.rank() + 1) % rt.size();
  std::size_t const n = 5000;
  auto g = dist::allocate<double>(rt.rank_place(target), n).get();
  auto h = dist::allocate<double>(rt.rank_place(target), 7).get();  // a second window
  auto const before = dist::detail::direct_operations();
  std::vector<double> out(n), back(n, -1.0);
  std::iota(out.begin(), out.end(), 100.0 * rt.rank());
  wait_or_fail(dist::put(g, out.data(), n), "a put");
  double seven[7] = {1, 2, 3, 4, 5, 6, 7}, got7[7] = {};
  wait_or_fail(dist::put(h, seven, 7), "a put to the second segment");
  wait_or_fail(dist::get(back.data(), g, n), "a get");
  EXPECT_EQ(back, out);
  wait_or_fail(dist::get(got7, h, 7), "a get from the second segment");
  EXPECT_TRUE(std::equal(got7, got7 + 7, seven));
  // After an event that is still pending: the put waits for it.
  auto gate = event::pending();
  std::vector<double> later(10, -5.0);
  auto put_later = dist::put(after(gate), g + 20, later.data(), later.size());
  std::thread opener([gate]() mutable {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    gate.complete(nullptr);
  });
  wait_or_fail(put_later, "a put after an event");
  opener.join();
  wait_or_fail(dist::get(back.data(), g, n), "a get");
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(back[i], i >= 20 && i < 30 ? -5.0 : out[i]) << "element " << i;
  // A failed dependency fails the put and writes nothing.
  auto broken = event::failed(std::make_exception_ptr(std::runtime_error("upstream")));
  EXPECT_THROW(dist::put(after(broken), g, later.data(), later.size()).wait(), std::runtime_error);
  wait_or_fail(dist::get(back.data(), g, 10), "a get");
  EXPECT_EQ(back[0], out[0]);
  // One element past the end of a mapped segment: refused by its owner, as by message.
  EXPECT_THROW(dist::put(g + 1, out.data(), n).wait(), dist::remote_error);
  EXPECT_THROW(dist::get(back.data(), h, 8).wait(), dist::remote_error);
  // Atomics on the mapped words.
  dist::global_ptr<long> counter;
  if (rt.rank() == 0) {
    counter = dist::allocate<long>(rt.here(), 1).get();
    *counter.local() = 0;
  }
  dist::broadcast(rt.world(), std::span(&counter, 1), 0).wait();
  for (int i = 0; i < 100; ++i) dist::atomic_fetch_add(counter, 1L).get();
  dist::barrier(rt.world()).wait();
  if (rt.rank() == 0) {
    EXPECT_EQ(*counter.local(), 100L * rt.size());
  }
  auto const after_ops = dist::detail::direct_operations();
  if (mapped)
    EXPECT_GE(after_ops - before, 6u + (rt.rank() == 0 ? 0u : 100u))
        << "puts, gets and atomics on one node went by message";
  else
    EXPECT_EQ(after_ops, before) << "direct access is off, yet operations were direct";
  // Freed while this rank holds the mapping (and it is this thread's last window): the
  // next access must fail, not write into the freed block.
  dist::barrier(rt.world()).wait();
  wait_or_fail(dist::put(g, out.data(), 1), "a put before the free");
  dist::barrier(rt.world()).wait();
  dist::deallocate(g).wait();
  dist::deallocate(h).wait();
  dist::barrier(rt.world()).wait();  // every segment is freed; nobody allocates again
  EXPECT_THROW(dist::put(g, out.data(), 1).wait(), dist::remote_error);
  EXPECT_THROW(dist::get(back.data(), g + 3, 2).wait(), dist::remote_error);
  EXPECT_THROW(dist::atomic_fetch_add(dist::global_ptr<long>(h.rank(), h.address()), 1L).get(),
               dist::remote_error);
  dist::barrier(rt.world()).wait();
  if (rt.rank() == 0) dist::deallocate(counter).wait();
  dist::barrier(rt.world()).wait();
}

// A peer's mapping keeps a freed segment's pages alive: the windows of freed segments
// must go, or a program that allocates and frees segments that peers write to would
// hold all their memory (30 here without the sweep).
TEST(DistMemory, MappingsOfFreedSegmentsGo) {
  dist::runtime rt;
  int const target = (rt.rank() + 1) % rt.size();
  std::vector<char> data(2 << 20, 'x');
  for (int round = 0; round < 30; ++round) {
    // Growing sizes: a segment does not fit the hole its predecessor left, so each lives
    // at a new address (one at the same address would replace the old window anyway).
    std::size_t const bytes = (std::size_t{64} << 10) * static_cast<std::size_t>(round + 1);
    auto g = dist::allocate<char>(rt.rank_place(target), bytes).get();
    wait_or_fail(dist::put(g, data.data(), bytes), "a put");
    dist::deallocate(g).wait();
  }
  EXPECT_LE(dist::detail::mapped_segments(), 1u);
  dist::barrier(rt.world()).wait();
}

// Device memory in the global address space (Phalanx §IV-C): dist::allocate on a device
// place of another rank (or this one) gives a global pointer into that device's memory;
// puts and gets reach it staged through host memory on its rank (inline and rendezvous
// sizes), copies between global pointers stage through here, and what cannot work on
// device memory (atomics) is refused by name. ctest dist.devices.ranks{1,2,3} run it with
// one sim device per rank.
TEST(DistDevice, PutsAndGetsReachDeviceMemory) {
  dist::runtime rt;
  auto devices = [&](int r) { return rt.rank_place(r).descendants(place_type::device); };
  if (devices(rt.rank()).empty()) {
    if (std::getenv("STRATA_SIM_DEVICES")) FAIL() << "STRATA_SIM_DEVICES is set, yet no device";
    GTEST_SKIP() << "no device on this rank (ctest dist.devices.* sets STRATA_SIM_DEVICES)";
  }
  int const target = (rt.rank() + 1) % rt.size();
  auto const device = devices(target).front();
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{300000}}) {
    auto g = dist::allocate<double>(device, n).get();
    EXPECT_EQ(g.rank(), target);
    EXPECT_EQ(g.space(), space_id::sim);
    std::vector<double> out(n), back(n, -1.0);
    std::iota(out.begin(), out.end(), 1e6 * rt.rank());
    wait_or_fail(dist::put(g, out.data(), n), "a put into device memory");
    wait_or_fail(dist::get(back.data(), g, n), "a get from device memory");
    EXPECT_EQ(back, out) << n << " elements";
    if (n > 10) {
      double const x = -7.0;
      wait_or_fail(dist::put(g + 5, &x, 1), "a put of one element");
      double three[3] = {};
      wait_or_fail(dist::get(three, g + 4, 3), "a get of three");
      EXPECT_EQ(three[0], out[4]);
      EXPECT_EQ(three[1], -7.0);
      EXPECT_EQ(three[2], out[6]);
    }
    dist::deallocate(g).wait();
  }
  // On this rank's own device: the data is in device memory, as the memory layer sees it.
  auto mine = dist::allocate<long>(devices(rt.rank()).front(), 64).get();
  EXPECT_EQ(mine.space(), space_id::sim);
  std::vector<long> v(64), seen(64, 0);
  std::iota(v.begin(), v.end(), 10L * rt.rank());
  wait_or_fail(dist::put(mine, v.data(), v.size()), "a put into this rank's device");
  strata::copy(ptr<long, host_space>(seen.data(), 0),
               ptr<long, sim_space>(mine.local(), mine.place_id()), 64)
      .wait();
  EXPECT_EQ(seen, v);
  // Device here to device there, staged through this process.
  auto theirs = dist::allocate<long>(device, 64).get();
  wait_or_fail(dist::copy(theirs, mine, 64), "a copy between devices of two ranks");
  std::vector<long> back(64, 0);
  wait_or_fail(dist::get(back.data(), theirs, 64), "a get");
  EXPECT_EQ(back, v);
  // Atomics need host memory; one element past the end is refused as on the host.
  try {
    dist::atomic_fetch_add(theirs, 1L).get();
    ADD_FAILURE() << "an atomic on device memory did not fail";
  } catch (dist::remote_error const& e) {
    EXPECT_NE(std::string(e.what()).find("device memory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dist::put(theirs + 1, v.data(), 64).wait(), dist::remote_error);
  EXPECT_THROW(dist::get(back.data(), theirs + 1, 64).wait(), dist::remote_error);
  // A host place is not a device: dist::allocate there gives host memory.
  auto host = dist::allocate<long>(rt.rank_place(target), 4).get();
  EXPECT_EQ(host.space(), space_id::host);
  dist::deallocate(host).wait();
  dist::deallocate(theirs).wait();
  dist::deallocate(mine).wait();
  dist::barrier(rt.world()).wait();
}

// A direct put that waits for an event is outstanding like a message: the runtime's end
// waits for it (the engine it reports to must outlive it).
TEST(DistMemory, PendingDirectPutsCompleteBeforeTheRuntimeEnds) {
  std::vector<double> v(100, 3.0);
  event put_done;
  std::thread opener;
  dist::global_ptr<double> g;
  {
    dist::runtime rt;
    int const target = (rt.rank() + 1) % rt.size();
    g = dist::allocate<double>(rt.rank_place(target), v.size()).get();
    wait_or_fail(dist::put(g, v.data(), 1), "a first put (maps the segment)");
    dist::barrier(rt.world()).wait();
    auto gate = event::pending();
    put_done = dist::put(after(gate), g, v.data(), v.size());
    opener = std::thread([gate]() mutable {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      gate.complete(nullptr);
    });
  }
  EXPECT_TRUE(put_done.ready()) << "the runtime ended before a pending put ran";
  opener.join();
  EXPECT_FALSE(put_done.has_failed());
  // Segments outlive runtimes (they are the process's): free it in the next one.
  dist::runtime rt;
  std::vector<double> back(v.size());
  wait_or_fail(dist::get(back.data(), g, back.size()), "a get in the next runtime");
  EXPECT_EQ(back, v);
  dist::barrier(rt.world()).wait();
  dist::deallocate(g).wait();
  dist::barrier(rt.world()).wait();
}

TEST(DistMemory, GlobalPointerArithmetic) {
  dist::runtime rt;
  dist::global_ptr<double> p(1, 4096);
  EXPECT_EQ((p + 3).address(), 4096u + 24u);
  EXPECT_EQ((p + 3) - p, 3);
  EXPECT_EQ((p + 3) - 1, p + 2);
  EXPECT_TRUE(p < p + 1);
  EXPECT_THROW((void)(p - dist::global_ptr<double>(0, 4096)), invalid_argument);
  if (rt.rank() != 1) {
    EXPECT_THROW((void)p.local(), invalid_argument);
  }
}

TEST(DistMemory, RemoteAtomicsFromEveryRank) {
  dist::runtime rt;
  dist::global_ptr<long> words;
  if (rt.rank() == 0) {
    words = dist::allocate<long>(rt.here(), 2).get();
    words.local()[0] = 0;
    words.local()[1] = -1;
  }
  dist::broadcast(rt.world(), std::span(&words, 1), 0).wait();
  std::vector<dist::future<long>> adds;
  for (int i = 0; i < 500; ++i) adds.push_back(dist::atomic_fetch_add(words, 1L));
  long mine_won = 0;
  // Exactly one rank's compare-exchange of -1 -> its rank wins.
  auto cas = dist::atomic_compare_exchange(words + 1, -1L, static_cast<long>(rt.rank()));
  long old = cas.get();
  if (old == -1) mine_won = 1;
  for (auto& f : adds) {
    long v = f.get();
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 500L * rt.size());
  }
  long winners = 0;
  dist::all_reduce(rt.world(), std::span<long const>(&mine_won, 1), std::span(&winners, 1),
                   dist::reduce_op::sum)
      .wait();
  EXPECT_EQ(winners, 1);
  dist::barrier(rt.world()).wait();
  if (rt.rank() == 0) {
    EXPECT_EQ(words.local()[0], 500L * rt.size());
    EXPECT_GE(words.local()[1], 0);
    dist::deallocate(words).wait();
  }
  dist::barrier(rt.world()).wait();
}

namespace {
// What rank r contributes in the collective tests (every rank can compute any rank's).
std::vector<long> data_of(int r, std::size_t n, int salt) {
  std::mt19937_64 rng(static_cast<unsigned>(r * 7919 + salt));
  std::vector<long> v(n);
  for (auto& x : v) x = static_cast<long>(rng() % 1000) - 500;
  return v;
}
}  // namespace

TEST(DistCollectives, MatchASequentialReference) {
  dist::runtime rt;
  auto const& w = rt.world();
  int const P = rt.size(), me = rt.rank();
  for (std::size_t k : {std::size_t{1}, std::size_t{7}, std::size_t{3000}}) {
    int const root = static_cast<int>(k % static_cast<std::size_t>(P));
    // broadcast
    auto b = me == root ? data_of(root, k, 1) : std::vector<long>(k, 0);
    wait_or_fail(dist::broadcast(w, std::span(b), root), "broadcast");
    EXPECT_EQ(b, data_of(root, k, 1));
    // reduce and all_reduce, every op
    for (auto op : {dist::reduce_op::sum, dist::reduce_op::min, dist::reduce_op::max,
                    dist::reduce_op::prod}) {
      std::vector<long> expect = data_of(0, k, 2);
      for (int r = 1; r < P; ++r) {
        auto d = data_of(r, k, 2);
        for (std::size_t i = 0; i < k; ++i) {
          auto& e = expect[i];
          switch (op) {
            case dist::reduce_op::sum:
              e += d[i];
              break;
            case dist::reduce_op::min:
              e = std::min(e, d[i]);
              break;
            case dist::reduce_op::max:
              e = std::max(e, d[i]);
              break;
            case dist::reduce_op::prod:
              e *= d[i];
              break;
          }
        }
      }
      auto in = data_of(me, k, 2);
      std::vector<long> out(k, 0), all(k, 0);
      auto e1 = dist::reduce(w, std::span<long const>(in), std::span(out), op, root);
      auto e2 = dist::all_reduce(w, std::span<long const>(in), std::span(all), op);
      wait_or_fail(e1, "reduce");
      wait_or_fail(e2, "all_reduce");
      if (me == root) {
        EXPECT_EQ(out, expect);
      }
      EXPECT_EQ(all, expect);
    }
    // gather / all_gather
    std::vector<long> cat;
    for (int r = 0; r < P; ++r) {
      auto d = data_of(r, k, 3);
      cat.insert(cat.end(), d.begin(), d.end());
    }
    auto mine = data_of(me, k, 3);
    std::vector<long> gathered(me == root ? k * P : 0), everyone(k * P);
    wait_or_fail(dist::gather(w, std::span<long const>(mine), std::span(gathered), root), "gather");
    wait_or_fail(dist::all_gather(w, std::span<long const>(mine), std::span(everyone)),
                 "all_gather");
    if (me == root) {
      EXPECT_EQ(gathered, cat);
    }
    EXPECT_EQ(everyone, cat);
    // scatter: the root's data, piece `me` lands here
    auto whole = data_of(root, k * P, 4);
    std::vector<long> piece(k);
    std::vector<long> const root_in = me == root ? whole : std::vector<long>{};
    wait_or_fail(dist::scatter(w, std::span<long const>(root_in), std::span(piece), root),
                 "scatter");
    EXPECT_TRUE(std::equal(piece.begin(), piece.end(), whole.begin() + static_cast<long>(k) * me));
    // all_to_all: block j of rank i's input is block i of rank j's output
    auto send = data_of(me, k * P, 5);
    std::vector<long> recv(k * P);
    wait_or_fail(dist::all_to_all(w, std::span<long const>(send), std::span(recv)), "all_to_all");
    for (int i = 0; i < P; ++i) {
      auto theirs = data_of(i, k * P, 5);
      EXPECT_TRUE(std::equal(recv.begin() + static_cast<long>(k) * i,
                             recv.begin() + static_cast<long>(k) * (i + 1),
                             theirs.begin() + static_cast<long>(k) * me))
          << "block from rank " << i;
    }
  }
  wait_or_fail(dist::barrier(w), "barrier");
}

TEST(DistCollectives, TeamsOfSomeRanks) {
  dist::runtime rt;
  // The even ranks form a team; the odd ones another.
  std::vector<int> members;
  for (int r = rt.rank() % 2; r < rt.size(); r += 2) members.push_back(r);
  auto t = rt.make_team(members);
  EXPECT_EQ(t.size(), static_cast<int>(members.size()));
  EXPECT_EQ(t.world_rank(t.rank()), rt.rank());
  long mine = rt.rank(), sum = 0;
  wait_or_fail(dist::all_reduce(t, std::span<long const>(&mine, 1), std::span(&sum, 1),
                                dist::reduce_op::sum),
               "team all_reduce");
  EXPECT_EQ(sum, std::accumulate(members.begin(), members.end(), 0L));
  // A collective launch on the team (Phalanx `who`), issued by its first member.
  if (t.rank() == 0) {
    auto each = dist::async_each(t, my_rank{});
    for (int i = 0; i < t.size(); ++i)
      EXPECT_EQ(each[static_cast<std::size_t>(i)].get(), members[static_cast<std::size_t>(i)]);
  }
  wait_or_fail(dist::barrier(t), "team barrier");
  dist::barrier(rt.world()).wait();
}

// Collective allocations (Phalanx's `who` for allocate): every member of a team gets the
// same pointer to one allocation, or every member's part of a symmetric one; freed
// collectively. The teams here are the world and the odd/even halves, the owner inside
// the team or outside it, and a collective of another kind started between the call and
// its completion keeps its order.
TEST(DistCollectives, TeamAllocationsAreMadeOnceAndSharedByEveryMember) {
  dist::runtime rt;
  auto const& w = rt.world();
  int const last = rt.size() - 1;
  // One allocation on the last rank's host, shared by all: each member writes its slot.
  auto shared = dist::allocate<long>(w, rt.rank_place(last), static_cast<std::size_t>(rt.size()));
  long mine = rt.rank() + 1, sum = 0;
  // A collective called after the allocation and before it completes.
  auto reduced = dist::all_reduce(w, std::span<long const>(&mine, 1), std::span(&sum, 1),
                                  dist::reduce_op::sum);
  wait_or_fail(shared.event(), "collective allocate");
  wait_or_fail(reduced, "all_reduce after a collective allocate");
  auto const p = shared.get();
  ASSERT_TRUE(p);
  EXPECT_EQ(p.rank(), last);
  EXPECT_EQ(sum, static_cast<long>(rt.size()) * (rt.size() + 1) / 2);
  dist::put(p + rt.rank(), &mine, 1).wait();
  dist::barrier(w).wait();
  std::vector<long> seen(static_cast<std::size_t>(rt.size()));
  dist::get(seen.data(), p, seen.size()).wait();
  for (int r = 0; r < rt.size(); ++r) EXPECT_EQ(seen[static_cast<std::size_t>(r)], r + 1);
  wait_or_fail(dist::deallocate(w, p), "collective deallocate");

  // A symmetric allocation on a team of half the ranks; the owner of a shared one outside
  // the team (rank 0 for the odd team).
  std::vector<int> members;
  for (int r = rt.rank() % 2; r < rt.size(); r += 2) members.push_back(r);
  auto t = rt.make_team(members);
  auto parts_f = dist::allocate_each<int>(t, 8);
  wait_or_fail(parts_f.event(), "allocate_each");
  auto const& parts = parts_f.get();
  ASSERT_EQ(parts.size(), members.size());
  for (std::size_t i = 0; i < parts.size(); ++i) EXPECT_EQ(parts[i].rank(), members[i]);
  EXPECT_TRUE(parts[static_cast<std::size_t>(t.rank())].is_local());
  int const next = (t.rank() + 1) % t.size();
  int const value = 100 + rt.rank();
  dist::put(parts[static_cast<std::size_t>(next)] + 3, &value, 1).wait();
  dist::barrier(t).wait();
  int const previous = members[static_cast<std::size_t>((t.rank() + t.size() - 1) % t.size())];
  EXPECT_EQ(parts[static_cast<std::size_t>(t.rank())].local()[3], 100 + previous);
  auto outside = dist::allocate<double>(t, rt.rank_place(0), 4);
  wait_or_fail(outside.event(), "collective allocate owned outside the team");
  EXPECT_EQ(outside.get().rank(), 0);
  wait_or_fail(dist::deallocate(t, outside.get()), "collective deallocate outside the team");
  wait_or_fail(dist::deallocate_each(t, parts), "deallocate_each");
  EXPECT_THROW(dist::deallocate_each(t, std::vector<dist::global_ptr<int>>(parts.size() + 1)),
               invalid_argument);
  dist::barrier(w).wait();
}

TEST(DistCollectives, SizeMistakesAreRefusedBeforeSending) {
  dist::runtime rt;
  auto const& w = rt.world();
  std::vector<long> in(3), out(3 * rt.size() + 1);
  EXPECT_THROW(dist::all_gather(w, std::span<long const>(in), std::span(out)), invalid_argument);
  EXPECT_THROW(dist::all_to_all(w, std::span<long const>(out), std::span(in)), invalid_argument);
  EXPECT_THROW(dist::broadcast(w, std::span(in), rt.size()), invalid_argument);
  // Only the root knows the gathered size: only it calls (a non-root would start a real
  // gather that nobody matches).
  if (rt.rank() == 0) {
    EXPECT_THROW(dist::gather(w, std::span<long const>(in), std::span(out), 0), invalid_argument);
  }
  EXPECT_THROW(dist::all_reduce(w, std::span<long const>(in), std::span(out), dist::reduce_op::sum),
               invalid_argument);
  EXPECT_THROW(dist::barrier(dist::team{}), invalid_argument);
  dist::barrier(w).wait();
}

TEST(DistRuntime, RuntimesComeAndGoAndTeamsDieWithThem) {
  dist::team old;
  {
    dist::runtime rt;
    old = rt.world();
    dist::barrier(old).wait();
  }
  dist::runtime rt;
  EXPECT_THROW(dist::barrier(old), error);
  EXPECT_NO_THROW(dist::barrier(rt.world()).wait());
  EXPECT_THROW(dist::runtime(), error);  // one at a time
}

// Ranks on one node that nobody bound each take their share of its PUs (P / L
// consecutive ones, or one when there are more ranks than PUs), as a binding to cores
// would give them; a bound rank sees its binding. Either way no rank starts a worker per
// PU of the whole node.
TEST(DistMachine, RanksOnANodeShareItsPus) {
  dist::runtime rt;
  char const* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!local) GTEST_SKIP() << "not started by Open MPI's mpiexec";
  int const l = std::atoi(local);
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  long const online = sysconf(_SC_NPROCESSORS_ONLN);
  int pus = 0;
  for (auto const& p : rt.local().machine().descendants()) pus += p.type() == place_type::pu;
  if (CPU_COUNT(&set) < online) {
    EXPECT_EQ(pus, CPU_COUNT(&set)) << "a bound rank sees its binding";
  } else {
    int const r = std::atoi(std::getenv("OMPI_COMM_WORLD_LOCAL_RANK"));
    long const share = l <= online ? (r + 1) * online / l - r * online / l : 1;
    EXPECT_EQ(pus, share) << "local rank " << r << " of " << l << " on " << online << " PUs";
  }
}

// PARRAY's `for i mpi n` (include/strata/dist/thread_array.hpp): every rank runs the body
// once as the process of its team rank, with tid per sub-dimension, and a sync orders
// rounds of remote increments.
TEST(DistThreadArray, EveryRankRunsOnceWithItsIdsAndSyncsOrderRounds) {
  dist::runtime rt;
  auto const& w = rt.world();
  int const n = rt.size();
  auto const P =
      n == 4 ? thread_array<thread_kind::mpi>{dims{2, 2}} : thread_array<thread_kind::mpi>{n};
  dist::global_ptr<long> counter;
  if (rt.rank() == 0) {
    counter = dist::allocate<long>(rt.here(), 1).get();
    *counter.local() = 0;
  }
  dist::broadcast(w, std::span(&counter, 1), 0).wait();
  long wrong = 0, runs = 0;
  index_t id = -1, row = -1, col = -1, size = 0;
  dist::for_ranks(w, P, [&](dist::rank_context const& p) {
    ++runs;
    id = p.tid();
    size = p.size();
    if (n == 4) {
      row = p.tid(0);
      col = p.tid(1);
      p.sync(1);  // a group's sync (here: the whole array's)
    }
    for (long r = 1; r <= 20; ++r) {
      dist::atomic_fetch_add(counter, 1L).get();
      p.sync();
      if (dist::atomic_fetch_add(counter, 0L).get() != r * n) ++wrong;
      p.sync();
    }
  });
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(id, rt.rank());
  EXPECT_EQ(size, n);
  EXPECT_EQ(wrong, 0);
  if (n == 4) {
    EXPECT_EQ(row, rt.rank() / 2);
    EXPECT_EQ(col, rt.rank() % 2);
  }
  dist::barrier(w).wait();
  if (rt.rank() == 0) dist::deallocate(counter).wait();
}

// A process that throws while others wait in a sync, or that makes one sync fewer, ends
// every process's body: every rank's for_ranks throws, none hangs; the team still works.
TEST(DistThreadArray, AFailureOrAMissingSyncIsAnErrorOnEveryRank) {
  dist::runtime rt;
  auto const& w = rt.world();
  int const n = rt.size();
  thread_array<thread_kind::mpi> const P{n};
  try {
    dist::for_ranks(w, P, [&](dist::rank_context const& p) {
      if (p.tid() == n - 1) throw std::runtime_error("the last process failed");
      p.sync();
      p.sync();
    });
    ADD_FAILURE() << "expected the last process's failure on rank " << rt.rank();
  } catch (std::exception const& e) {
    EXPECT_NE(std::string(e.what()).find("the last process failed"), std::string::npos) << e.what();
  }
  if (n > 1) {
    try {
      dist::for_ranks(w, P, [&](dist::rank_context const& p) {
        p.sync();
        if (p.tid() != 0) p.sync();
      });
      ADD_FAILURE() << "expected an error on rank " << rt.rank();
    } catch (error const& e) {
      EXPECT_NE(std::string(e.what()).find("returned without reaching"), std::string::npos)
          << e.what();
    }
  }
  int rounds = 0;
  dist::for_ranks(w, P, [&](dist::rank_context const& p) {
    p.sync();
    ++rounds;
  });
  EXPECT_EQ(rounds, 1);
  EXPECT_THROW(dist::for_ranks(w, thread_array<thread_kind::mpi>{n + 1}, [](auto const&) {}),
               invalid_argument);
  EXPECT_THROW(dist::for_ranks(w, P, [](dist::rank_context const& p) { (void)p.tid(3); }),
               invalid_argument);
}

// A process that starts a collective without waiting for it and returns has joined it: the
// others' wait in it completes, their bodies end, and nothing is reported (the watch on
// departed members compares collective counts: test dist.failure.return for the other
// side). Bodies that return at different times with equal counts are normal too.
TEST(DistThreadArray, AMemberThatStartedTheCollectiveMayReturnBeforeTheOthersWait) {
  dist::runtime rt;
  auto const& w = rt.world();
  int const n = rt.size();
  thread_array<thread_kind::mpi> const P{n};
  for (int round = 0; round < 5; ++round) {
    std::vector<int> in{rt.rank() + round}, out(1);
    strata::event f;
    dist::for_ranks(w, P, [&](dist::rank_context const& p) {
      f = dist::all_reduce(w, std::span<int const>(in), std::span<int>(out), dist::reduce_op::sum);
      if (p.tid() == round % n) return;  // started, not waited for
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      f.wait();
      EXPECT_EQ(out[0], n * (n - 1) / 2 + n * round);
    });
    f.wait();  // the member that returned: its buffers live until its part is done
  }
  // The team's collectives still line up afterwards.
  std::vector<int> one{1}, sum(1);
  dist::all_reduce(w, std::span<int const>(one), std::span<int>(sum), dist::reduce_op::sum).wait();
  EXPECT_EQ(sum[0], n);
}

// A for_ranks in another's body on the same team: each call's end-of-body notices are its
// own (before they shared a tag, the inner call took the outer's notices and waited for
// ever for its own).
TEST(DistThreadArray, NestedCallsOnOneTeamKeepTheirNotices) {
  dist::runtime rt;
  auto const& w = rt.world();
  int const n = rt.size();
  thread_array<thread_kind::mpi> const P{n};
  int inner_runs = 0;
  std::vector<int> one{1}, sum(1);
  dist::for_ranks(w, P, [&](dist::rank_context const& outer) {
    for (int k = 0; k < 3; ++k)
      dist::for_ranks(w, P, [&](dist::rank_context const& inner) {
        dist::all_reduce(w, std::span<int const>(one), std::span<int>(sum), dist::reduce_op::sum)
            .wait();
        inner.sync();
        ++inner_runs;
      });
    dist::all_reduce(w, std::span<int const>(one), std::span<int>(sum), dist::reduce_op::sum)
        .wait();
    outer.sync();
  });
  EXPECT_EQ(inner_runs, 3);
  EXPECT_EQ(sum[0], n);
}

// Sizes whose bytes do not fit in size_t, or that no memory holds: refused where they are
// given (before anything is sent), not wrapped to a few bytes that a put then overruns.
TEST(DistMemory, ImpossibleSizesAreRefusedBeforeAllocating) {
  dist::runtime rt;
  int const target = (rt.rank() + 1) % rt.size();
  auto const wraps = (std::size_t{1} << 62) + 4;  // x 4 bytes wraps to 16
  try {
    (void)dist::allocate<int>(rt.rank_place(target), wraps);
    ADD_FAILURE() << "2^62 + 4 ints were accepted";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("overflow the address space"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)dist::allocate<char>(rt.rank_place(target), SIZE_MAX - 10), out_of_memory);
  // The target refuses such a size too (a caller that bypasses the check above).
  EXPECT_THROW(
      dist::async(rt.rank_place(target), dist::detail::allocate_fn<char>{SIZE_MAX - 10}).get(),
      dist::remote_error);
  // The collective form: every member refuses, none waits for the others.
  EXPECT_THROW((void)dist::allocate<double>(rt.world(), rt.rank_place(rt.size() - 1),
                                            (std::size_t{1} << 61) + 1),
               invalid_argument);
  auto g = dist::allocate<int>(rt.rank_place(target), 4).get();
  std::vector<int> v(64, 9);
  auto const past = (std::size_t{1} << 62) + 1;
  EXPECT_THROW(dist::put(g, v.data(), past), invalid_argument);
  EXPECT_THROW(dist::get(v.data(), g, past), invalid_argument);
  EXPECT_THROW(dist::copy(g, g, past), invalid_argument);
  dist::put(g, v.data(), 4).wait();  // the memory itself is fine
  dist::deallocate(g).wait();
  dist::barrier(rt.world()).wait();
}

// std::atomic_ref needs the type's alignment: a misaligned global pointer is refused on
// every path (own rank, mapped peer, message).
TEST(DistMemory, MisalignedAtomicsAreRefused) {
  dist::runtime rt;
  int const target = (rt.rank() + 1) % rt.size();
  auto g = dist::allocate<long>(rt.rank_place(target), 4).get();
  dist::global_ptr<long> const odd(g.rank(), g.address() + 4);
  try {
    (void)dist::atomic_fetch_add(odd, 1L);
    ADD_FAILURE() << "a misaligned fetch-add was accepted";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("not aligned to 8 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)dist::atomic_compare_exchange(odd, 0L, 1L), invalid_argument);
  dist::global_ptr<int> const odd_int(g.rank(), g.address() + 2);
  EXPECT_THROW((void)dist::atomic_fetch_add(odd_int, 1), invalid_argument);
  dist::global_ptr<float> const odd_float(g.rank(), g.address() + 1);
  EXPECT_THROW((void)dist::atomic_fetch_add(odd_float, 1.0f), invalid_argument);
  // Aligned ones still work.
  long const zero[4] = {};
  dist::put(g, zero, 4).wait();
  EXPECT_EQ(dist::atomic_fetch_add(g + 1, 5L).get(), 0);
  EXPECT_EQ(dist::atomic_fetch_add(dist::global_ptr<int>(g.rank(), g.address() + 4), 1).get(), 0);
  dist::barrier(rt.world()).wait();
  dist::deallocate(g).wait();
}

// A default-constructed future (a slot not yet filled) refers to nothing: a clear error,
// not a null dereference; ready() is false, since no value will come.
TEST(DistAsync, AnEmptyFutureIsAnError) {
  dist::runtime rt;
  dist::future<int> empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_FALSE(empty.ready());
  try {
    (void)empty.get();
    ADD_FAILURE() << "get() on an empty future returned";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
  EXPECT_THROW(empty.wait(), invalid_argument);
  EXPECT_THROW((void)empty.wait_for(std::chrono::milliseconds(1)), invalid_argument);
  dist::future<void> nothing;
  EXPECT_THROW(nothing.get(), invalid_argument);
  auto filled = dist::async(rt.rank_place(0), add{}, 2, 3);
  EXPECT_TRUE(filled.valid());
  EXPECT_EQ(filled.get(), 5);
  EXPECT_TRUE(filled.ready());
  // Moved from: empty again, for a value and for void (which carries no result buffer).
  auto taken = std::move(filled);
  EXPECT_EQ(taken.get(), 5);
  EXPECT_FALSE(filled.valid());  // NOLINT(bugprone-use-after-move): the point of the test
  EXPECT_THROW((void)filled.get(), invalid_argument);
  auto done = dist::async(rt.rank_place(rt.size() - 1), nothing_to_do{});
  EXPECT_TRUE(done.valid());
  auto moved = std::move(done);
  moved.get();
  EXPECT_TRUE(moved.valid());
  EXPECT_FALSE(done.valid());  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(done.wait(), invalid_argument);
}

// A receive of a larger message than its buffer is the same mistake as a smaller one:
// invalid_argument naming both sizes (MPI reports it as a truncation).
TEST(DistCollectives, AReceiveOfALargerMessageNamesBothSizes) {
  dist::runtime rt;
  if (rt.size() > 1 && rt.rank() < 2) {
    std::vector<int> out(5, 1), in(3);
    int const peer = 1 - rt.rank();
    auto s = dist::send(rt.world(), peer, 6, std::span<int const>(out));
    auto r = dist::recv(rt.world(), peer, 6, std::span<int>(in));
    try {
      r.wait();
      ADD_FAILURE() << "a 20-byte message into a 12-byte buffer was accepted";
    } catch (invalid_argument const& e) {
      EXPECT_NE(std::string(e.what()).find("sent 20 bytes; expected 12"), std::string::npos)
          << e.what();
    }
    try {
      s.wait();
    } catch (...) {
    }
  }
  dist::barrier(rt.world()).wait();
}

// A collective allocation that fails on one member fails on every member, with the same
// error naming it (the others do not wait for it), and the team goes on.
TEST(DistCollectives, AFailedAllocateEachFailsEveryMember) {
  dist::runtime rt;
  auto const& w = rt.world();
  int const last = rt.size() - 1;
  // 8 PiB on the last rank: more than its address space.
  auto huge = dist::allocate_each<double>(w, rt.rank() == last ? std::size_t{1} << 50 : 1000);
  wait_or_fail(huge.event(), "allocate_each failing on one member");
  try {
    (void)huge.get();
    ADD_FAILURE() << "expected the last member's failure on rank " << rt.rank();
  } catch (out_of_memory const& e) {
    EXPECT_NE(std::string(e.what()).find("team rank " + std::to_string(last) + " failed"),
              std::string::npos)
        << e.what();
  }
  // A size whose bytes overflow, on rank 0 only.
  auto wrapped =
      dist::allocate_each<double>(w, rt.rank() == 0 ? (std::size_t{1} << 61) + 1 : std::size_t{8});
  wait_or_fail(wrapped.event(), "allocate_each overflowing on one member");
  try {
    (void)wrapped.get();
    ADD_FAILURE() << "expected rank 0's overflow on rank " << rt.rank();
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("team rank 0 failed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("overflow"), std::string::npos) << e.what();
  }
  auto parts = dist::allocate_each<int>(w, 8);
  wait_or_fail(parts.event(), "allocate_each after failures");
  EXPECT_EQ(parts.get().size(), static_cast<std::size_t>(rt.size()));
  wait_or_fail(dist::deallocate_each(w, parts.get()), "deallocate_each");
}

// The sizes of an mpi thread array are compared before any body runs: a wrong size on
// one member is invalid_argument on every member, naming it.
TEST(DistThreadArray, AWrongSizeOnOneMemberIsAnErrorOnEveryMember) {
  dist::runtime rt;
  int const n = rt.size();
  int const wrong = n - 1;
  bool ran = false;
  try {
    dist::for_ranks(rt.world(), thread_array<thread_kind::mpi>{rt.rank() == wrong ? n + 1 : n},
                    [&](dist::rank_context const& p) {
                      ran = true;
                      p.sync();
                    });
    ADD_FAILURE() << "expected an error on rank " << rt.rank();
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("team rank " + std::to_string(wrong) + " passed"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(ran);
  int rounds = 0;
  dist::for_ranks(rt.world(), thread_array<thread_kind::mpi>{n}, [&](dist::rank_context const& p) {
    p.sync();
    ++rounds;
  });
  EXPECT_EQ(rounds, 1);
}
