// A kernel fault surfaces at wait as strata::backend_error naming the kernel and CUDA's
// message. Its own executable: a fault ends the process's CUDA context, so nothing may run
// after it. Skipped (with the runtime's reason) without a GPU.
#include <strata/strata.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace strata {
namespace {

// The wild address travels as an integer: a pointer argument would be checked against
// the allocation registry at launch in builds without NDEBUG (the debug preset), and the
// launch would throw there instead of faulting on the device.
struct write_through_k {
  template <class Self>
  STRATA_FN void operator()(Self const& self, std::uintptr_t address) const {
    reinterpret_cast<int*>(address)[self.global_linear_index()] = 1;
  }
};

TEST(CudaFault, IllegalAddressReachesWait) {
  runtime rt;
  auto gpus = rt.machine().slice(isa::cuda).descendants(place_type::device);
  if (gpus.empty()) GTEST_SKIP() << (rt.notes().empty() ? "no CUDA device" : rt.notes().front());
  // A wild device address (no allocation), written by every thread.
  auto e = launch(gpus.front(), grid(64).block(128), write_through_k{}, std::uintptr_t{0x10});
  try {
    e.wait();
    FAIL() << "no exception";
  } catch (backend_error const& err) {
    std::string what = err.what();
    EXPECT_NE(what.find("write_through_k"), std::string::npos) << what;
    EXPECT_NE(what.find("cudaEventSynchronize"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace strata
