// Every spin and park constant of the execution layer, in one place (issue 21: they were
// chosen per site). A thread that has nothing to do spins for a short while before it
// parks on its waiter (src/exec/threads/wake.hpp, the one sleep/wake mechanism), because a
// futex round trip costs several microseconds on a VM: the size of a small kernel or a
// small halo copy. Each constant says which wait it bounds and why it has its value.
#pragma once

#include <chrono>

namespace strata::detail::spin {

using std::chrono::microseconds;

/// An idle worker, a waiting thread or an idle sim copy engine looks for work this long
/// before parking: long enough to catch back-to-back launches, tasks and halo copies
/// without a futex round trip, short enough that an idle pool stops using CPU within a
/// fraction of a millisecond (`strata bench sleep-wake`: idle CPU below 0.1%).
inline constexpr microseconds before_park{50};

/// A thread outside the pool that polls dist's progress while it waits yields its core at
/// most this often, not after every empty poll: a yield is a system call that costs
/// more than a poll on a VM, and every one between a message's arrival and its poll adds
/// to the latency (a remote round trip went from 3.3 to 1.7 us with this and calls run by
/// the thread that receives them, to 1.5 us with a cheaper call path).
/// A thread that shares its PU with the one it waits for delays it by at most this long.
inline constexpr microseconds poll_yield_interval{5};

/// ... while its polls found a message within this window (in the current wait or an
/// earlier one of the thread) and the pool runs no job or task graph; otherwise it yields
/// after every empty poll, leaving its core to the local work it may be waiting for.
inline constexpr microseconds poll_hot_window{50};

/// A waiter whose work has a known end (an emulated transfer: event_state::expected)
/// parks until shortly before that end, then spins through it: the futex wake-up it
/// would otherwise need costs more than a small transfer's whole model. This is the
/// least "shortly" (expected_margin() adds what this machine's timed sleeps overshoot).
inline constexpr microseconds before_expected{100};

/// A sim device waiting out a modeled duration sleeps until shortly before its end (the
/// OS wakes a sleeper late), then yields through the rest; at least this long before
/// (sleep_margin() adds what this machine's timed sleeps overshoot).
inline constexpr microseconds sleep_margin_min{200};

/// How late this machine's timed sleeps wake, learned (a high quantile): session 62's AMD
/// VM woke a futex or nanosleep timeout 90-125 us late (p50-p90, with the timer slack at
/// 1 ns still 50-110 us), so a waiter parked until 100 us before a transfer's end woke
/// after it and the 1 MiB `sim-copy` took 0.87 of the model; the Intel VM of sessions
/// 1-60 woke tens of microseconds late. The margins below follow the machine.
std::chrono::nanoseconds timed_wake_lateness() noexcept;
/// Records a timed sleep that was to end at `deadline` and returned now (call only after
/// one whose timeout passed, or that may have: an early return says nothing).
void note_timed_wake(std::chrono::steady_clock::time_point deadline) noexcept;
/// The same with the lateness given (negative counts as 0, more than 500 us as 500 us).
void note_lateness(std::chrono::nanoseconds late) noexcept;
/// Sleeps a few times briefly to seed timed_wake_lateness, and times a few yields for
/// pause_margin (once per process; about a millisecond on a VM): sim devices call it
/// before their first modeled wait.
void calibrate_timed_wakes() noexcept;

/// before_expected, or this machine's timed-sleep lateness with room to spare if larger.
std::chrono::nanoseconds expected_margin() noexcept;
/// sleep_margin_min, or this machine's timed-sleep lateness with room to spare if larger.
std::chrono::nanoseconds sleep_margin() noexcept;

/// ... and pauses without yielding through the last few microseconds: a yield near the
/// deadline can hand the core to another thread and end the transfer a time slice late.
/// At least this long; pause_margin() adds two of this machine's yields (a yield is a
/// system call: 1.2 us on session 62's VM, and one that hands the core to a spinning
/// engine returns after that engine's own yield).
inline constexpr microseconds pause_margin_min{3};
std::chrono::nanoseconds pause_margin() noexcept;

/// A CUDA device's completion worker polls a launch's marker this long before it sleeps
/// in the driver (src/exec/cuda/streams.cpp; STRATA_CUDA_SPIN_US overrides it): a
/// blocking-sync event wakes its waiter by an interrupt, which on the H200 machine of
/// session 52 made a 280 us copy kernel's launch + wait 375 us (317 us with this poll;
/// raw CUDA's cudaStreamSynchronize spins where the host has cores to spare).
inline constexpr microseconds before_gpu_sleep{1000};

/// A spinning waiter runs the wait hook (wait_hook.hpp: dist's MPI progress) at least this
/// many times before it parks, however long it was descheduled during its spin: a waiter
/// preempted through the whole spin would park having polled the hook once or twice (a
/// hang under TSan at -j2, WaitHook.AThreadOutsideThePoolRunsItWhileWaiting, whose event
/// only the hook completes).
inline constexpr int min_hook_runs = 32;

/// Pauses a worker makes between two looks at its task group while joining, before it
/// parks (a join whose last task is about to end should not pay a futex round trip).
inline constexpr int join_pauses = 256;

/// The CPU's spin-wait hint (x86 `pause`): frees the core's resources for its sibling
/// hyperthread and saves power while a thread spins.
inline void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace strata::detail::spin
