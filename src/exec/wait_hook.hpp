// Work a waiting thread does while it spins. The distributed layer registers one MPI
// progress round (docs/dist.md "Progress and its latency"): a thread that waits for a
// remote reply then receives it and completes its event itself, instead of being woken
// by the MPI thread — on an oversubscribed machine each such hand-off is a context
// switch, several times an MPI message's latency.
#pragma once

namespace strata::detail {

/// One round of work a waiter may do; returns whether it did anything. It must not
/// block and must not throw.
using wait_hook = bool (*)() noexcept;

/// Registers `h` (nullptr removes it). One hook per process.
void set_wait_hook(wait_hook h) noexcept;

/// Registers the emulated devices' hook, run beside the one above (nullptr removes it):
/// a waiter runs a sim transfer that no copy engine has taken yet (src/exec/sim/device.cpp).
void set_device_wait_hook(wait_hook h) noexcept;

/// Runs the registered hooks, if any; returns whether they did anything.
bool run_wait_hook() noexcept;
/// Runs only the set_wait_hook one (dist's progress), or only the devices' one.
bool run_process_wait_hook() noexcept;
bool run_device_wait_hook() noexcept;

/// Called by a thread that ran the wait hook every round (not a pool worker) when it
/// stops spinning to park: whoever left its polling to such threads takes it back (dist's
/// MPI thread naps while a waiter polls). It must not block and must not throw.
using wait_park_hook = void (*)() noexcept;

/// Registers `h` (nullptr removes it). One per process.
void set_wait_park_hook(wait_park_hook h) noexcept;

/// Runs the registered park hook, if any.
void run_wait_park_hook() noexcept;

/// Marks the calling thread as one of the runtime's own background threads (a sim
/// device's units and copy engines, a CUDA device's worker, dist's MPI thread): work it
/// submits comes from continuations it runs, not from a caller that will take the first
/// PU's share, so the pool does not move it to that PU's CPU at a submit
/// (pool::settle_caller).
void mark_background_thread() noexcept;

/// Whether any hook is registered; whether the set_wait_hook one is.
bool has_wait_hook() noexcept;
bool has_process_wait_hook() noexcept;

}  // namespace strata::detail
