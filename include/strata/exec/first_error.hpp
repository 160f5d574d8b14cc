// The first exception of work that runs in pieces on several threads (the chunks of a
// job, of a sim kernel, the threads of an OpenMP region): kept once, the other pieces
// skip their work once it is set, and the work's event carries it (DESIGN.md, "Errors,
// safety, observability": an exception in a kernel reaches `wait`).
#pragma once

#include <atomic>
#include <exception>
#include <utility>

namespace strata::detail {

class first_error {
 public:
  /// Runs `piece()` unless an earlier piece failed; keeps its exception if it is the
  /// first. Returns whether the piece ran and returned normally.
  template <class Piece>
  bool run(Piece&& piece) noexcept {
    if (failed()) return false;
    try {
      std::forward<Piece>(piece)();
      return true;
    } catch (...) {
      capture();
      return false;
    }
  }

  /// Keeps the exception being handled, if none was kept before. Call inside a catch.
  void capture() noexcept {
    bool expected = false;
    if (failed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel))
      error_ = std::current_exception();
  }

  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }

  /// The kept exception, or null. Read it once every piece has ended (the reader
  /// synchronizes with the pieces through the work's own completion count).
  std::exception_ptr get() const noexcept {
    return failed_.load(std::memory_order_acquire) ? error_ : nullptr;
  }
  /// The same, handed over: this keeps no reference to the exception, so that the thread
  /// that finished the work does not hold it after the waiter caught it.
  std::exception_ptr take() noexcept {
    return failed_.load(std::memory_order_acquire) ? std::move(error_) : nullptr;
  }

 private:
  std::atomic<bool> failed_{false};
  std::exception_ptr error_;
};

}  // namespace strata::detail
