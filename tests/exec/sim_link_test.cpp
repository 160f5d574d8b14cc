// Issue 21, "sim model at small sizes": a sim device has two copy engines, one per
// direction (host -> device and device -> host), each with a link of its own, as GPUs
// have; a copy between two devices holds the source's outgoing and the destination's
// incoming link. The tests check what the model promises by the modeled ends of the
// transfers (each event's expected end) and by the order of events tens of milliseconds
// apart in modeled time, never by a tight timing bound.
#include <gtest/gtest.h>

#include <strata/strata.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <string>
#endif

#include "support/hang_guard.hpp"

namespace strata {
namespace {

using testing_support::finishes_within;
constexpr auto limit = std::chrono::seconds(60);
constexpr std::size_t mib = std::size_t{1} << 20;

std::chrono::steady_clock::time_point modeled_end(event const& e) {
  return e.state()->expected();
}

// 100 MB/s: 1 MiB takes about 10 ms over a modeled link, 8 MiB about 84 ms.
class SimLinks : public testing::Test {
 protected:
  runtime rt{runtime_options{.sim_devices = "2:bw=100MB/s,lat=10us"}};
  place machine = rt.machine();
  place sim0 = machine.slice(isa::sim).descendants(place_type::device)[0];
  place sim1 = machine.slice(isa::sim).descendants(place_type::device)[1];

  static ptr<char> host(std::vector<char>& v) { return ptr<char>(v.data(), 0); }
};

TEST_F(SimLinks, AnUploadAndADownloadOverlap) {
  std::vector<char> up_src(8 * mib, 1), down_src(mib, 2), down_dst(mib, 0);
  auto a = allocate<char, sim_space>(sim0, 8 * mib);
  auto b = allocate<char, sim_space>(sim0, mib);
  copy(b, host(down_src), mib).wait();
  auto up = copy(a, host(up_src), 8 * mib);      // the incoming link, about 84 ms
  auto down = copy(host(down_dst), b, mib);      // the outgoing link, about 10 ms
  EXPECT_LT(modeled_end(down), modeled_end(up))  // one engine for both: behind the upload
      << "the download is modeled to end after the upload issued before it";
  down.wait();
  EXPECT_FALSE(up.ready()) << "the download waited for the upload";
  up.wait();
  EXPECT_EQ(down_dst[mib - 1], 2);
  std::vector<char> back(8 * mib, 0);
  copy(host(back), a, 8 * mib).wait();
  EXPECT_EQ(back[8 * mib - 1], 1);
  deallocate(a);
  deallocate(b);
}

TEST_F(SimLinks, EachDirectionKeepsItsOwnQueueInOrder) {
  // Two uploads share the incoming link: the second is modeled to end a transfer's time
  // after the first, and completes after it.
  std::vector<char> src(4 * mib, 3);
  auto a = allocate<char, sim_space>(sim0, 4 * mib);
  auto b = allocate<char, sim_space>(sim0, 4 * mib);
  auto first = copy(a, host(src), 4 * mib);
  auto second = copy(b, host(src), 4 * mib);
  auto const gap = modeled_end(second) - modeled_end(first);
  EXPECT_GE(gap, std::chrono::milliseconds(40)) << "two uploads overlapped on one link";
  second.wait();
  EXPECT_TRUE(first.ready());
  deallocate(a);
  deallocate(b);
}

TEST_F(SimLinks, ADeviceToDeviceCopyLeavesTheOtherDirectionsFree) {
  // sim0 -> sim1 holds sim0's outgoing and sim1's incoming link: an upload to sim0 and a
  // download from sim1, both long, do not delay it.
  std::vector<char> big(8 * mib, 4), big_back(8 * mib, 0);
  auto in0 = allocate<char, sim_space>(sim0, 8 * mib);
  auto out1 = allocate<char, sim_space>(sim1, 8 * mib);
  auto from = allocate<char, sim_space>(sim0, mib);
  auto to = allocate<char, sim_space>(sim1, mib);
  copy(from, host(big), mib).wait();
  auto busy_in0 = copy(in0, host(big), 8 * mib);
  auto busy_out1 = copy(host(big_back), out1, 8 * mib);
  auto across = copy(to, from, mib);
  EXPECT_LT(modeled_end(across), modeled_end(busy_in0));
  EXPECT_LT(modeled_end(across), modeled_end(busy_out1));
  across.wait();
  EXPECT_FALSE(busy_in0.ready()) << "the device-to-device copy waited for sim0's upload";
  EXPECT_FALSE(busy_out1.ready()) << "the device-to-device copy waited for sim1's download";
  wait_all({busy_in0, busy_out1});
  std::vector<char> check(mib, 0);
  copy(host(check), to, mib).wait();
  EXPECT_EQ(check[mib - 1], 4);
  for (auto p : {in0, from}) deallocate(p);
  for (auto p : {out1, to}) deallocate(p);
}

TEST_F(SimLinks, ADeviceToDeviceCopyWaitsForBothOfItsLinks) {
  std::vector<char> big(8 * mib, 5), big_back(8 * mib, 0);
  auto src0 = allocate<char, sim_space>(sim0, 8 * mib);
  auto dst1 = allocate<char, sim_space>(sim1, 8 * mib);
  auto from = allocate<char, sim_space>(sim0, mib);
  auto to = allocate<char, sim_space>(sim1, mib);
  copy(from, host(big), mib).wait();
  {
    // The source's outgoing link is busy: the copy is modeled to start after it.
    auto download0 = copy(host(big_back), src0, 8 * mib);
    auto across = copy(to, from, mib);
    EXPECT_GE(modeled_end(across) - modeled_end(download0), std::chrono::milliseconds(9));
    across.wait();
    EXPECT_TRUE(download0.ready());
  }
  {
    // The destination's incoming link is busy: the same.
    auto upload1 = copy(dst1, host(big), 8 * mib);
    auto across = copy(to, from, mib);
    EXPECT_GE(modeled_end(across) - modeled_end(upload1), std::chrono::milliseconds(9));
    across.wait();
    EXPECT_TRUE(upload1.ready()) << "the copy into sim1 ignored sim1's busy incoming link";
    // And it holds that link in turn: a later upload to sim1 queues behind it.
    auto upload_after = copy(dst1, host(big), mib);
    EXPECT_GE(modeled_end(upload_after) - modeled_end(across), std::chrono::milliseconds(9));
    upload_after.wait();
  }
  for (auto p : {src0, from}) deallocate(p);
  for (auto p : {dst1, to}) deallocate(p);
}

TEST_F(SimLinks, TinyCopiesChainedInAQueueKeepTheirOrder) {
  // Each step uploads a value and downloads it again on the other engine: the queue's
  // order, not one engine's FIFO, keeps the download behind its upload.
  constexpr int steps = 1000;
  std::vector<int> values(steps), seen(steps, -1);
  for (int i = 0; i < steps; ++i) values[static_cast<std::size_t>(i)] = i;
  auto d = allocate<int, sim_space>(sim0, 1);
  finishes_within(limit, "a queue of tiny copies in both directions", [&] {
    queue q(sim0);
    for (std::size_t i = 0; i < steps; ++i) {
      q.copy(d, ptr<int>(&values[i], 0), 1);
      q.copy(ptr<int>(&seen[i], 0), d, 1);
    }
    q.wait();
  });
  for (int i = 0; i < steps; ++i) ASSERT_EQ(seen[static_cast<std::size_t>(i)], i);
  deallocate(d);
}

TEST_F(SimLinks, AGatedChainOfTinyCopiesLosesNoCompletion) {
  // A chain through both engines of both devices, queued behind a gate: every copy is
  // issued by the completion of the one before, on another engine's thread.
  constexpr int rounds = 500;
  std::vector<int> h{7}, out{0};
  auto a = allocate<int, sim_space>(sim0, 1);
  auto b = allocate<int, sim_space>(sim1, 1);
  finishes_within(limit, "a gated chain of tiny sim copies", [&] {
    auto gate = event::pending();
    event last = gate;
    for (int r = 0; r < rounds; ++r) {
      last = copy(after(last), a, ptr<int>(h.data(), 0), 1);    // host -> sim0
      last = copy(after(last), b, a, 1);                        // sim0 -> sim1
      last = copy(after(last), ptr<int>(out.data(), 0), b, 1);  // sim1 -> host
    }
    gate.complete();
    last.wait();
  });
  EXPECT_EQ(out[0], 7);
  deallocate(a);
  deallocate(b);
}

TEST_F(SimLinks, FreeingWaitsForTransfersInBothDirections) {
  std::vector<char> src(4 * mib, 6), dst(4 * mib, 0);
  auto a = allocate<char, sim_space>(sim0, 4 * mib);
  auto b = allocate<char, sim_space>(sim0, 4 * mib);
  copy(b, host(src), 4 * mib).wait();
  auto up = copy(a, host(src), 4 * mib);    // incoming, about 42 ms
  auto down = copy(host(dst), b, 4 * mib);  // outgoing, about 42 ms
  deallocate(b);
  EXPECT_TRUE(down.ready()) << "sim memory was freed under a pending download";
  deallocate(a);
  EXPECT_TRUE(up.ready()) << "sim memory was freed under a pending upload";
  EXPECT_EQ(dst[4 * mib - 1], 6);
}

TEST_F(SimLinks, FreeingTheDestinationWaitsForADeviceToDeviceCopy) {
  // The copy runs on sim0's engine, but writes sim1's memory: freeing that memory waits
  // for it as for sim1's own work (it used to be tracked on the source device only).
  std::vector<char> src(4 * mib, 8);
  auto from = allocate<char, sim_space>(sim0, 4 * mib);
  copy(from, host(src), 4 * mib).wait();
  for (bool deferred : {false, true}) {
    auto to = allocate<char, sim_space>(sim1, 4 * mib);
    auto gate = event::pending();
    if (!deferred) gate.complete();
    auto across = copy(after(gate), to, from, 4 * mib);  // about 42 ms
    if (deferred) gate.complete();
    deallocate(to);
    EXPECT_TRUE(across.ready()) << "sim1 memory was freed under a copy from sim0"
                                << (deferred ? " (issued after an event)" : "");
  }
  deallocate(from);
}

TEST_F(SimLinks, AnEngineThatParkedAfterWaitersRanItsTransfersStillRunsAnUnwaitedOne) {
  // Session 26: a copy engine stays awake while transfers keep being issued to it, also
  // those a waiter then runs itself (help_engines), and parks after a quiet spell. A
  // transfer issued after that must start without anybody waiting for it: here it is
  // polled with plain sleeps, which run no wait hook. Quiet spells shorter and longer
  // than the engine's spin, so that both the awake and the parked engine are met.
  std::vector<char> h(4096, 7);
  auto a = allocate<char, sim_space>(sim0, 4096);
  auto b = allocate<char, sim_space>(sim1, 4096);
  auto c = allocate<char, sim_space>(sim0, 4096);  // the unwaited upload's own target
  int never = 0;
  finishes_within(limit, "sim transfers nobody waits for", [&] {
    for (int round = 0; round < 20; ++round) {
      for (int i = 0; i < 10; ++i) {  // waited for: the waiter may run them
        copy(a, host(h), 4096).wait();
        copy(b, a, 4096).wait();
      }
      std::this_thread::sleep_for(std::chrono::microseconds(round % 2 ? 30 : 2000));
      auto across = copy(b, a, 4096);
      auto up = copy(c, host(h), 4096);
      auto const t0 = std::chrono::steady_clock::now();
      while (!(across.ready() && up.ready()) &&
             std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      if (!(across.ready() && up.ready())) ++never;
      wait_all({across, up});  // a round that failed still finishes before the next
    }
  });
  EXPECT_EQ(never, 0) << "rounds whose unwaited transfers did not complete within 5 s";
  std::vector<char> back(4096, 0);
  copy(host(back), b, 4096).wait();
  EXPECT_EQ(back[4095], 7);
  copy(host(back), c, 4096).wait();
  EXPECT_EQ(back[0], 7);
  deallocate(a);
  deallocate(b);
  deallocate(c);
}

// Session 49: after idle both engines of a device are parked; the thread that issues an
// upload and then a download wakes the first, and the second is left to the first to
// wake when it resumes. Nobody waits here (plain sleeps run no wait hook), so a
// download whose wake-up was left to an engine that never passes it on never completes.
void upload_and_download_after_idle(place const& dev, place const& other, int rounds) {
  constexpr std::size_t n = 64 << 10;
  std::vector<char> up_src(n), down_dst(n), across_dst(n);
  auto up_dev = allocate<char, sim_space>(dev, n);
  auto down_dev = allocate<char, sim_space>(dev, n);
  auto across_dev = allocate<char, sim_space>(other, n);
  int never = 0;
  finishes_within(limit, "an upload and a download issued together after idle", [&] {
    for (int round = 0; round < rounds; ++round) {
      char const v = static_cast<char>(round % 100 + 1);
      std::fill(up_src.begin(), up_src.end(), v);
      std::vector<char> fresh(n, static_cast<char>(v + 1));
      copy(down_dev, ptr<char>(fresh.data(), 0), n).wait();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // both engines park
      std::vector<event> all{copy(up_dev, ptr<char>(up_src.data(), 0), n),
                             copy(ptr<char>(down_dst.data(), 0), down_dev, n)};
      if (round % 3 == 2) all.push_back(copy(across_dev, down_dev, n));  // dev's outgoing link
      auto const t0 = std::chrono::steady_clock::now();
      auto done = [&] {
        return std::all_of(all.begin(), all.end(), [](event const& e) { return e.ready(); });
      };
      while (!done() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      if (!done()) ++never;
      wait_all(all);
      EXPECT_EQ(down_dst[0], static_cast<char>(v + 1)) << "round " << round;
      EXPECT_EQ(down_dst[n - 1], static_cast<char>(v + 1)) << "round " << round;
      std::vector<char> back(n, 0);
      copy(ptr<char>(back.data(), 0), up_dev, n).wait();
      EXPECT_EQ(back[n - 1], v) << "round " << round;
      if (round % 3 == 2) {
        copy(ptr<char>(back.data(), 0), across_dev, n).wait();
        EXPECT_EQ(back[0], static_cast<char>(v + 1)) << "round " << round;
      }
    }
  });
  EXPECT_EQ(never, 0) << "rounds whose transfers did not complete within 5 s unwaited";
  deallocate(up_dev);
  deallocate(down_dev);
  deallocate(across_dev);
}

TEST_F(SimLinks, AnUploadAndADownloadIssuedTogetherAfterIdleBothRunUnwaited) {
  upload_and_download_after_idle(sim0, sim1, 60);
}

TEST_F(SimLinks, AWakeUpLeftWithAnEngineWhoseTransferAWaiterTookIsNotLost) {
  // Small transfers after idle: the waiter takes the upload and the download itself, so
  // the engine woken for the upload finds the download's engine with nothing to do and
  // leaves it parked. A download issued right after, and never waited for, must still
  // wake it (the engine left parked must be marked as needing a wake-up again).
  constexpr std::size_t n = 4096;
  std::vector<char> src(n, 9), dst(n, 0), dst2(n, 0);
  auto a = allocate<char, sim_space>(sim0, n);
  auto b = allocate<char, sim_space>(sim0, n);
  copy(b, ptr<char>(src.data(), 0), n).wait();
  int never = 0;
  finishes_within(limit, "a download after a waiter took both transfers", [&] {
    for (int round = 0; round < 40; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // both engines park
      wait_all({copy(a, ptr<char>(src.data(), 0), n), copy(ptr<char>(dst.data(), 0), b, n)});
      auto later = copy(ptr<char>(dst2.data(), 0), b, n);
      auto const t0 = std::chrono::steady_clock::now();
      while (!later.ready() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      if (!later.ready()) ++never;
      later.wait();
      EXPECT_EQ(dst2[n - 1], 9);
    }
  });
  EXPECT_EQ(never, 0) << "rounds whose unwaited download did not complete within 5 s";
  deallocate(a);
  deallocate(b);
}

TEST_F(SimLinks, TwoThreadsIssuingToOneDeviceAfterIdleLoseNoWakeUp) {
  // Two threads each issue an upload and a download to the same device at once, after
  // idle: wake-ups left to an engine by one thread must not be lost by the other's.
  constexpr std::size_t n = 16 << 10;
  int never = 0;
  std::mutex m;
  finishes_within(limit, "two threads issuing to one device after idle", [&] {
    auto body = [&](int id) {
      std::vector<char> src(n, static_cast<char>(id + 1)), dst(n, 0);
      auto a = allocate<char, sim_space>(sim0, n);
      auto b = allocate<char, sim_space>(sim0, n);
      copy(b, ptr<char>(src.data(), 0), n).wait();
      for (int round = 0; round < 40; ++round) {
        std::this_thread::sleep_for(std::chrono::microseconds(round % 2 ? 300 : 1500));
        auto up = copy(a, ptr<char>(src.data(), 0), n);
        auto down = copy(ptr<char>(dst.data(), 0), b, n);
        auto const t0 = std::chrono::steady_clock::now();
        while (!(up.ready() && down.ready()) &&
               std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        if (!(up.ready() && down.ready())) {
          std::lock_guard lock(m);
          ++never;
        }
        wait_all({up, down});
        EXPECT_EQ(dst[n - 1], static_cast<char>(id + 1));
      }
      deallocate(a);
      deallocate(b);
    };
    std::thread other(body, 1);
    body(2);
    other.join();
  });
  EXPECT_EQ(never, 0) << "rounds whose transfers did not complete within 5 s unwaited";
}

TEST_F(SimLinks, AWakeUpCreditNeverMovesAModeledStartBeforeTheIssuesBegan) {
  // The wake-ups of parked engines that a thread pays are credited to the transfers it
  // issues right after (their modeled start moves back by them), never to one issued
  // after a pause, and never before the thread began issuing.
  constexpr std::size_t n = 64 << 10;
  double const model_s = 10e-6 + double(n) / 100e6;  // the fixture's link
  auto const model = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(model_s));
  std::vector<char> h(n, 1), back(n, 0);
  auto a = allocate<char, sim_space>(sim0, n);
  auto b = allocate<char, sim_space>(sim1, n);
  finishes_within(limit, "wake-up credits", [&] {
    for (int round = 0; round < 20; ++round) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the engines park
      auto const t0 = std::chrono::steady_clock::now();
      std::vector<event> burst{
          copy(a, ptr<char>(h.data(), 0), n), copy(ptr<char>(back.data(), 0), a, n),
          copy(b, ptr<char>(h.data(), 0), n), copy(ptr<char>(back.data(), 0), b, n)};
      for (std::size_t i = 0; i < burst.size(); ++i)
        EXPECT_GE(modeled_end(burst[i]), t0 + model) << "round " << round << ", transfer " << i;
      wait_all(burst);
      // A pause longer than the credit's gap: the next transfer gets none of it.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      auto first = copy(a, ptr<char>(h.data(), 0), n);  // pays a wake-up
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      auto const t1 = std::chrono::steady_clock::now();
      auto later = copy(b, ptr<char>(h.data(), 0), n);
      EXPECT_GE(modeled_end(later), t1 + model) << "round " << round << ": a stale credit";
      wait_all({first, later});
    }
  });
  deallocate(a);
  deallocate(b);
}

TEST_F(SimLinks, ManyUnwaitedUploadsToNeighbouringElementsKeepTheirOrderAndBytes) {
  // Session 27: an engine's queue is a ring that grows when full. Rounds of a long upload
  // (about 10 ms, taken by the engine: the ring's front moves on) and then 40 uploads of
  // one int each into neighbouring elements of one buffer, all issued before any is
  // waited for, so the ring wraps and then grows with its front mid-storage: every
  // element gets its own value (no copy touches a neighbour), and the modeled ends and the
  // completions follow the issue order on the one link.
  constexpr int per_round = 40, rounds = 3, n = per_round * rounds;
  std::vector<int> src(n);
  for (int i = 0; i < n; ++i) src[static_cast<std::size_t>(i)] = 1000 + i;
  auto d = allocate<int, sim_space>(sim0, n);
  std::vector<int> zeros(n, 0);
  copy(d, ptr<int>(zeros.data(), 0), n).wait();
  std::vector<char> big_src(mib, 4);
  auto big = allocate<char, sim_space>(sim0, mib);
  finishes_within(limit, "many unwaited uploads on one link", [&] {
    // Outlive every round: an event's waiters are woken before its continuations run (a
    // continuation is not part of the wait), so the continuations are awaited themselves.
    std::mutex m;
    std::condition_variable cv;
    std::vector<int> completed;
    for (int r = 0; r < rounds; ++r) {
      std::vector<event> ups{copy(big, host(big_src), mib)};
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      for (int i = r * per_round; i < (r + 1) * per_round; ++i) {
        ups.push_back(copy(d + i, ptr<int>(&src[static_cast<std::size_t>(i)], 0), 1));
        ups.back().then([&m, &cv, &completed, i] {
          std::lock_guard lock(m);
          completed.push_back(i);
          cv.notify_all();
        });
      }
      for (std::size_t i = 1; i < ups.size(); ++i)
        EXPECT_LT(modeled_end(ups[i - 1]), modeled_end(ups[i])) << "upload " << i;
      wait_all(ups);
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return completed.size() == static_cast<std::size_t>(per_round); });
      EXPECT_TRUE(std::is_sorted(completed.begin(), completed.end()))
          << "round " << r << ": uploads on one link completed out of issue order";
      completed.clear();
    }
  });
  std::vector<int> back(n, 0);
  copy(ptr<int>(back.data(), 0), d, n).wait();
  EXPECT_EQ(back, src);
  deallocate(d);
  deallocate(big);
}

TEST(SimLinksOnePu, BothDirectionsFromAKernelOnTheOnlyPu) {
  // One PU: the host kernel that issues and waits runs on the pool's only worker; the
  // engines and the continuations of the chained copies need no worker.
  runtime rt({.topology = "synthetic:pack:1 core:1 pu:1", .sim_devices = "1:bw=1GB/s,lat=10us"});
  auto sim0 = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  finishes_within(limit, "sim copies issued and awaited on a one-PU pool", [&] {
    std::vector<int> src(4096), back(4096, 0), other(4096, 0);
    for (int i = 0; i < 4096; ++i) src[static_cast<std::size_t>(i)] = i;
    auto a = allocate<int, sim_space>(sim0, 4096);
    auto b = allocate<int, sim_space>(sim0, 4096);
    copy(b, ptr<int>(src.data(), 0), 4096).wait();
    launch(rt.machine(), grid(1), [&](auto const&) {
      for (int round = 0; round < 50; ++round) {
        auto up = copy(a, ptr<int>(src.data(), 0), 4096);
        auto down = copy(ptr<int>(other.data(), 0), b, 4096);
        auto chained = copy(after(up), ptr<int>(back.data(), 0), a, 4096);
        wait_all({down, chained});
      }
    }).wait();
    EXPECT_EQ(back[4095], 4095);
    EXPECT_EQ(other[4095], 4095);
    deallocate(a);
    deallocate(b);
  });
}

TEST(SimLinksCredit, ATransferIssuedAfterAnotherCompletedIsNotModeledBeforeItsEnd) {
  // Transfers much shorter than an engine's wake-up (about 1.4 us against 2-25 us): the
  // thread that woke the engine for an upload, waited for it and then issues a download
  // (or chains one after it) within the credit's gap must not get its download modeled
  // to start before the upload's modeled end (a credit without that floor did).
  runtime rt({.sim_devices = "1:bw=10GB/s,lat=1us"});
  auto dev = rt.machine().slice(isa::sim).descendants(place_type::device).front();
  constexpr std::size_t n = 4096;
  auto const model = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(1e-6 + double(n) / 10e9));
  std::vector<char> h(n, 1), back(n, 0);
  auto d = allocate<char, sim_space>(dev, n);
  finishes_within(limit, "transfers after transfers", [&] {
    for (int round = 0; round < 40; ++round) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));  // the engines park
      auto up = copy(d, ptr<char>(h.data(), 0), n);
      up.wait();
      auto down = round % 2 ? copy(after(up), ptr<char>(back.data(), 0), d, n)
                            : copy(ptr<char>(back.data(), 0), d, n);
      EXPECT_GE(modeled_end(down), modeled_end(up) + model) << "round " << round;
      down.wait();
    }
  });
  EXPECT_EQ(back[n - 1], 1);
  deallocate(d);
}

TEST(SimLinksOnePu, AnUploadAndADownloadIssuedTogetherAfterIdleOnTheOnlyPu) {
  // One PU: the issuing thread, both engines and the engine that passes a wake-up on all
  // share it.
  runtime rt({.topology = "synthetic:pack:1 core:1 pu:1", .sim_devices = "2:bw=1GB/s,lat=10us"});
  auto devs = rt.machine().slice(isa::sim).descendants(place_type::device);
  upload_and_download_after_idle(devs[0], devs[1], 30);
}

#if defined(__linux__)
// The thread id of this process's thread whose OS name is `name` (-1 if none).
pid_t thread_named(std::string const& name) {
  pid_t found = -1;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] == '.') continue;
      std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
      std::string line;
      if (std::getline(comm, line) && line == name)
        found = static_cast<pid_t>(std::stoi(entry->d_name));
    }
    closedir(dir);
  }
  return found;
}

// Polls `tid`'s scheduling policy until it is `policy` or `within` has passed.
bool policy_becomes(pid_t tid, int policy, std::chrono::milliseconds within) {
  auto const until = std::chrono::steady_clock::now() + within;
  do {
    if (sched_getscheduler(tid) == policy) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  } while (std::chrono::steady_clock::now() < until);
  return sched_getscheduler(tid) == policy;
}

TEST_F(SimLinks, AParkedEngineCannotPreemptItsIssuerAndAnEngineMovingBytesCan) {
  // Session 57: a woken engine lands on the issuing thread's CPU; as an ordinary thread it
  // preempted the issuer there and ran its memcpy before the issuer's next copy, whose
  // modeled start then came a whole memcpy late. Parked, an engine is SCHED_BATCH (no
  // preemption on wake-up); moving bytes and waiting out the model, an ordinary thread.
  // A sandbox may refuse scheduling policies, or reading another thread's: nothing to
  // check then.
  int settable = -1, readable = -1;
  pid_t const self = gettid();
  std::thread([&] {
    sched_param none{};
    settable = pthread_setschedparam(pthread_self(), SCHED_BATCH, &none);
    readable = sched_getscheduler(self);
  }).join();
  if (settable != 0 || readable < 0)
    GTEST_SKIP() << "this process may not set or read scheduling policies";
  constexpr std::size_t n = 16 * mib;  // about 168 ms at 100 MB/s
  std::vector<char> src(n, 4), back(n, 0);
  auto a = allocate<char, sim_space>(sim0, n);
  copy(a, host(src), 4096).wait();  // the device's threads start
  // The engine names itself when it starts, which may be after the copy above (a waiter
  // can run a transfer before the engine's thread is first scheduled).
  pid_t in = -1;
  for (auto const until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       in < 0 && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(1)))
    in = thread_named(sim0.name() + " copy in");
  ASSERT_GT(in, 0) << "no thread named '" << sim0.name() << " copy in'";
  EXPECT_TRUE(policy_becomes(in, SCHED_BATCH, std::chrono::seconds(10)))
      << "an idle engine is not SCHED_BATCH";
  auto up = copy(a, host(src), n);  // nobody waits: the engine itself runs it
  bool ordinary = false;
  while (!up.ready() && !ordinary) {
    ordinary = sched_getscheduler(in) == SCHED_OTHER;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  EXPECT_TRUE(ordinary) << "the engine was never an ordinary thread during its transfer";
  up.wait();
  EXPECT_TRUE(policy_becomes(in, SCHED_BATCH, std::chrono::seconds(10)))
      << "the engine did not park as SCHED_BATCH again";
  copy(host(back), a, n).wait();
  EXPECT_EQ(back[n - 1], 4);
  deallocate(a);
}

TEST(SimLinksOneCpu, AnUnwaitedTransferCompletesWhileItsIssuerSpinsOnTheOnlyCpu) {
  // Every thread of the runtime on the issuing thread's CPU (they inherit its affinity),
  // and the issuer spins without a system call after each copy: an engine that cannot
  // preempt it on wake-up must still get the CPU (at the scheduler's next tick).
  cpu_set_t before, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  int const cpu = sched_getcpu();
  ASSERT_GE(cpu, 0);
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  struct restore {  // also if the runtime or an allocation throws
    cpu_set_t const& to;
    ~restore() { sched_setaffinity(0, sizeof to, &to); }
  } restored{before};
  int never = 0;
  {
    runtime rt({.topology = "synthetic:pack:1 core:1 pu:1", .sim_devices = "1:bw=1GB/s,lat=10us"});
    auto dev = rt.machine().slice(isa::sim).descendants(place_type::device).front();
    constexpr std::size_t n = 64 << 10;
    std::vector<char> src(n, 7);
    auto d = allocate<char, sim_space>(dev, n);
    finishes_within(limit, "unwaited uploads while the issuer spins on one CPU", [&] {
      for (int round = 0; round < 20; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the engines park
        auto up = copy(d, ptr<char>(src.data(), 0), n);
        auto const t0 = std::chrono::steady_clock::now();
        while (!up.ready() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {
        }
        if (!up.ready()) ++never;
        up.wait();
      }
    });
    std::vector<char> back(n, 0);
    copy(ptr<char>(back.data(), 0), d, n).wait();
    EXPECT_EQ(back[n - 1], 7);
    deallocate(d);
  }
  EXPECT_EQ(never, 0) << "rounds whose upload did not complete within 5 s of spinning";
}
#endif

}  // namespace
}  // namespace strata
