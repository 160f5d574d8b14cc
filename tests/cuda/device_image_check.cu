// Compiled to a cubin only (nvcc -cubin) by tests/cuda/check_device_image.cmake, which
// looks for the kernels below among its symbols: a kernel launched through
// strata::launch must be in the device image, or every launch on a GPU fails with
// cudaErrorInvalidDeviceFunction (found on the first GPU run, session 24: nvcc's device
// pass left out kernels named only in a static member's initializer).
#include <strata/strata.hpp>

namespace strata_device_image_check {

struct plain_kernel {
  template <class Self>
  STRATA_FN void operator()(Self const& self, int* out) const {
    out[self.global_linear_index()] = 1;
  }
};

struct thread_array_kernel {
  template <class Thread>
  STRATA_FN void operator()(Thread const& t, int* out) const {
    out[t.tid()] = static_cast<int>(t.tid(1));
    t.sync(1);
  }
};

void launches(strata::place const& gpu, int* out) {
  strata::launch(gpu, strata::grid(4).block(32), plain_kernel{}, out).wait();
  strata::launch(gpu, strata::thread_array<strata::thread_kind::cuda>{4, 32}, thread_array_kernel{},
                 out)
      .wait();
}

}  // namespace strata_device_image_check
