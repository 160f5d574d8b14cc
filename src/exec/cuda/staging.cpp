// The staging thread of pageable host copies (staging.hpp; issue 13, item 6).
#include "exec/cuda/staging.hpp"

#include <strata/error.hpp>
#include <strata/exec/cuda/backend.hpp>

#include "exec/cuda/pointers.hpp"
#include "exec/wait_hook.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstring>
#include <future>
#include <memory>

namespace strata::detail::cuda {
namespace {

void check_staged(cudaError_t e, char const* call, copy_desc const& d) {
  if (e != cudaSuccess)
    fail(call, e,
         fmt::format("staged copy of {} bytes ({} x {} rows of {})", d.bytes(), d.slices, d.rows,
                     d.row_bytes));
}

}  // namespace

bool pageable(copy_side const& s) noexcept {
  if (s.space != space_id::host && s.space != space_id::mapped) return false;
  // Host memory the program registered (cudaHostRegister) or got from cudaHostAlloc
  // itself is DMA-able as it is.
  return !foreign_memory_of(s.base);
}

stager::stager(int ordinal) : ordinal_(ordinal) {
  device_guard const keep_device;
  if (auto e = cudaSetDevice(ordinal); e != cudaSuccess) fail("cudaSetDevice", e);
  for (int i = 0; i < 2; ++i) {
    if (auto e = cudaHostAlloc(&buffers_[i], staging_chunk, cudaHostAllocPortable);
        e != cudaSuccess)
      fail("cudaHostAlloc", e, "staging buffer");
    cudaEvent_t ev = nullptr;
    if (auto e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming | cudaEventBlockingSync);
        e != cudaSuccess)
      fail("cudaEventCreateWithFlags", e, "staging buffer");
    filled_[i] = ev;
  }
  worker_ = std::thread([this] {
    mark_background_thread();
    run();
  });
}

stager::~stager() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
  for (int i = 0; i < 2; ++i) {
    if (filled_[i]) {
      cudaEventSynchronize(static_cast<cudaEvent_t>(filled_[i]));
      cudaEventDestroy(static_cast<cudaEvent_t>(filled_[i]));
    }
    if (buffers_[i]) cudaFreeHost(buffers_[i]);
  }
  (void)cudaGetLastError();
}

event stager::copy(copy_desc const& d, after const* deps) {
  auto done = event::pending();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(
        {d, deps ? *deps : after{}, done,
         trace::enabled() ? trace::detail::origin_here() : trace::detail::flow_origin{}});
  }
  wake_.notify_all();
  return done;
}

bool stager::wait_idle() {
  std::unique_lock lock(mutex_);
  bool const busy = !queue_.empty() || running_;
  idle_.wait(lock, [this] { return queue_.empty() && !running_; });
  return busy;
}

void stager::run() {
  cudaSetDevice(ordinal_);
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    job j = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    try {
      stage(j);
    } catch (...) {
      j.done.complete(std::current_exception());
    }
    lock.lock();
    running_ = false;
    idle_.notify_all();
  }
}

void stager::stage(job const& j) {
  trace::detail::adopt_flow const adopted(j.origin);  // first seen on an H100, session 24
  // The host side is read or written here, on the host, so its producers must be done
  // (a GPU marker among them only orders the stream, not this thread). This thread is
  // Strata's own, so waiting here blocks no scheduler thread; it waits on a future, not
  // with event::wait, which would have it help run pool work meanwhile.
  auto ready = when_all(j.deps);
  if (!ready.ready()) {
    auto arrived = std::make_shared<std::promise<void>>();
    auto f = arrived->get_future();
    ready.then([arrived] { arrived->set_value(); });
    f.wait();
  }
  if (auto err = ready.error()) std::rethrow_exception(err);
  auto const& d = j.desc;
  bool const to_device = pageable(d.src);
  auto stream = static_cast<cudaStream_t>(stream_for(ordinal_, nullptr));
  auto buffer = [&](std::size_t i) { return static_cast<std::byte*>(buffers_[i % 2]); };
  auto filled = [&](std::size_t i) { return static_cast<cudaEvent_t>(filled_[i % 2]); };
  auto pieces = staging_pieces(d, staging_chunk);
  if (to_device) {
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      auto const& p = pieces[i];
      // The buffer's previous chunk must have left before it is packed again.
      check_staged(cudaEventSynchronize(filled(i)), "cudaEventSynchronize", d);
      for (std::size_t r = 0; r < p.rows; ++r)
        std::memcpy(buffer(i) + r * p.row_bytes, p.src.base + r * p.src.pitch, p.row_bytes);
      check_staged(cudaMemcpy2DAsync(p.dst.base, p.dst.pitch, buffer(i), p.row_bytes, p.row_bytes,
                                     p.rows, cudaMemcpyDefault, stream),
                   "cudaMemcpy2DAsync", d);
      check_staged(cudaEventRecord(filled(i), stream), "cudaEventRecord", d);
    }
    // Complete, as any copy, through the device's completion worker.
    complete_with(
        finish(ordinal_, stream,
               fmt::format("staged copy of {} bytes to CUDA device {}", d.bytes(), ordinal_)),
        j.done);
    return;
  }
  auto unpack = [&](std::size_t i) {
    auto const& p = pieces[i];
    check_staged(cudaEventSynchronize(filled(i)), "cudaEventSynchronize", d);
    for (std::size_t r = 0; r < p.rows; ++r)
      std::memcpy(p.dst.base + r * p.dst.pitch, buffer(i) + r * p.row_bytes, p.row_bytes);
  };
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    auto const& p = pieces[i];
    check_staged(cudaMemcpy2DAsync(buffer(i), p.row_bytes, p.src.base, p.src.pitch, p.row_bytes,
                                   p.rows, cudaMemcpyDefault, stream),
                 "cudaMemcpy2DAsync", d);
    check_staged(cudaEventRecord(filled(i), stream), "cudaEventRecord", d);
    // The previous chunk is unpacked while this one is on its way (and before its buffer
    // takes the next one).
    if (i > 0) unpack(i - 1);
  }
  if (!pieces.empty()) unpack(pieces.size() - 1);
  j.done.complete();
}

}  // namespace strata::detail::cuda
