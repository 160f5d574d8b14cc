// A hang is the defect under several tests: run the body on a thread and end the whole
// test binary with a message if it does not finish in time, so a hung test cannot hang CI
// (ctest's own timeout would only report "timeout" without saying which case hung).
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>
#include <utility>

namespace strata::testing_support {

template <class F>
void finishes_within(std::chrono::seconds limit, char const* what, F&& fn) {
  std::promise<void> done;
  auto f = done.get_future();
  std::thread t([&] {
    try {
      fn();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  if (f.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "HANG: %s did not finish within %lld s\n", what,
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(3);
  }
  t.join();
  f.get();
}

}  // namespace strata::testing_support
