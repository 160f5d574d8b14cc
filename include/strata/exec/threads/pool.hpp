// The interface of the runtime's worker pool that the threads backend submits to.
//
// A job is a count of chunks that workers claim one at a time (blocks are handed out
// dynamically); whoever finishes the last chunk completes the job's event. The pool has
// one worker per host PU, each pinned to its PU with hwloc. The first PU's share of
// ordinary jobs is done by the threads that wait (as OpenMP's master thread does), so a
// launch followed by a wait uses every PU without oversubscribing any; its worker is a
// reserve that runs only the jobs confined to that PU.
#pragma once

#include <strata/exec/event.hpp>
#include <strata/exec/first_error.hpp>
#include <strata/vec.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>

namespace strata::detail {

struct slot_set;

class job {
 public:
  job(index_t chunks, slot_set const* slots, char const* name = "job")
      : total_(chunks), slots_(slots), name_(name) {
    remaining_.store(chunks, std::memory_order_relaxed);
  }
  virtual ~job() = default;
  job(job const&) = delete;
  job& operator=(job const&) = delete;

  /// Runs one chunk; may throw (the job then fails and its other chunks are skipped).
  virtual void run_chunk(index_t chunk) = 0;

  event const& done() const noexcept { return done_; }
  slot_set const* slots() const noexcept { return slots_; }
  /// What the trace calls it (a kernel's type, "copy", ...).
  char const* name() const noexcept { return name_; }
  index_t total() const noexcept { return total_; }

  /// Claims the next chunk, or returns -1 when all are claimed.
  index_t claim() noexcept {
    if (next_.load(std::memory_order_relaxed) >= total_) return -1;
    auto c = next_.fetch_add(1, std::memory_order_relaxed);
    return c < total_ ? c : -1;
  }
  bool exhausted() const noexcept { return next_.load(std::memory_order_relaxed) >= total_; }

  /// Runs a claimed chunk and, for the last one, completes the event (running its
  /// continuations); returns true for that last one.
  bool execute(index_t chunk) noexcept;

 private:
  index_t const total_;
  slot_set const* const slots_;
  char const* const name_;
  std::atomic<index_t> next_{0};
  std::atomic<index_t> remaining_{0};
  first_error error_;
  event done_ = event::pending();
};

/// Hands a job to the runtime's pool (created on first use) and returns at once.
void submit(std::shared_ptr<job> j);

template <class Body>
class body_job final : public job {
 public:
  body_job(index_t chunks, slot_set const* slots, Body body, char const* name = "job")
      : job(chunks, slots, name), body_(std::move(body)) {}
  void run_chunk(index_t chunk) override { body_(chunk); }

 private:
  Body body_;
};

}  // namespace strata::detail
