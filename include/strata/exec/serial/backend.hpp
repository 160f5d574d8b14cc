// The serial backend: every block on the calling thread, in order (Alpaka's sequential
// accelerator). The launch has finished when it returns; its event is complete.
#pragma once

#include <strata/exec/backend.hpp>
#include <strata/exec/event.hpp>
#include <strata/exec/kernel_body.hpp>

namespace strata::serial {

struct backend {
  static constexpr backend_id id = backend_id::serial;

  /// Runs every block of `k` in the calling thread, on the launch's own arguments; a
  /// kernel's exception fails the event it returns (src/exec/cpu/launch.cpp).
  static event launch(detail::placement const& where, detail::inline_kernel const& k);
};

}  // namespace strata::serial
