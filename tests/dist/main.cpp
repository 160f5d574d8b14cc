// The MPI tests' main: run by ctest under `mpiexec -n K` (tests/dist/CMakeLists.txt).
// Every rank runs every test in the same order; each test makes its own dist::runtime,
// whose shutdown barrier lines the ranks up again. Ranks other than 0 print failures
// only. A watchdog ends the job, naming the test, if a test hangs (a hang would otherwise
// show only as ctest's timeout).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace {

std::mutex current_mutex;
std::string current = "(before the first test)";
std::atomic<long> started_at{0};

struct watch : testing::EmptyTestEventListener {
  void OnTestStart(testing::TestInfo const& info) override {
    std::lock_guard lock(current_mutex);
    current = std::string(info.test_suite_name()) + "." + info.name();
    started_at = std::chrono::steady_clock::now().time_since_epoch().count();
  }
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  char const* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank && std::string(rank) != "0") GTEST_FLAG_SET(brief, true);
  testing::UnitTest::GetInstance()->listeners().Append(new watch);
  long limit_s = 60;  // one test; the whole MPI suite takes seconds
  if (auto v = std::getenv("STRATA_DIST_TEST_LIMIT_S")) limit_s = std::atol(v);
  std::thread([limit_s, rank] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      auto const start = started_at.load();
      if (!start) continue;
      auto const now = std::chrono::steady_clock::now().time_since_epoch().count();
      if (std::chrono::steady_clock::duration(now - start) > std::chrono::seconds(limit_s)) {
        std::lock_guard lock(current_mutex);
        std::fprintf(stderr, "HANG: rank %s: %s did not finish within %ld s\n", rank ? rank : "0",
                     current.c_str(), limit_s);
        std::fflush(stderr);
        std::_Exit(3);
      }
    }
  }).detach();
  return RUN_ALL_TESTS();
}
