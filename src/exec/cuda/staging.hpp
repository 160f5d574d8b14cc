// Copies between pageable host memory and a GPU (issue 13, item 6). cudaMemcpyAsync from
// or to pageable memory is not asynchronous: the driver first waits for the stream's
// earlier work, and a copy to the host returns only when it is done, so the calling
// thread (a pool worker, or a completion worker running a continuation) would block for
// as long as the GPU is busy. Such copies go instead to a staging thread per device that
// moves them through two page-locked bounce buffers in chunks: while the copy engine
// moves one chunk, the thread packs or unpacks the other.
#pragma once

#include <strata/exec/event.hpp>
#include <strata/exec/trace.hpp>

#include "exec/copy_desc.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::detail::cuda {

/// Bytes of one bounce buffer (two per device).
inline constexpr std::size_t staging_chunk = std::size_t{4} << 20;

/// Whether `s` is host memory that CUDA cannot reach by DMA (neither pinned nor
/// registered nor managed), so a copy touching it must be staged.
bool pageable(copy_side const& s) noexcept;

/// `d` cut into 2-D pieces (slices == 1) of at most `chunk` bytes each, in order: a
/// contiguous copy in runs of `chunk` bytes, else whole rows of one slice where a row
/// fits, else parts of one row. Together they cover each byte of `d` once.
inline std::vector<copy_desc> staging_pieces(copy_desc const& d, std::size_t chunk) {
  std::vector<copy_desc> out;
  auto piece = [&](std::size_t dst_offset, std::size_t src_offset, std::size_t row_bytes,
                   std::size_t rows) {
    copy_desc p = d;
    p.dst.base += dst_offset;
    p.src.base += src_offset;
    p.row_bytes = row_bytes;
    p.rows = rows;
    p.slices = 1;
    if (rows == 1) p.dst.pitch = p.src.pitch = row_bytes;  // CUDA wants pitch >= width
    p.dst.slice_pitch = rows * p.dst.pitch;
    p.src.slice_pitch = rows * p.src.pitch;
    out.push_back(p);
  };
  if (d.bytes() == 0 || chunk == 0) return out;
  if (d.contiguous()) {
    for (std::size_t at = 0; at < d.bytes(); at += chunk)
      piece(at, at, std::min(chunk, d.bytes() - at), 1);
    return out;
  }
  for (std::size_t k = 0; k < d.slices; ++k) {
    std::size_t const dst_slice = k * d.dst.slice_pitch, src_slice = k * d.src.slice_pitch;
    if (d.row_bytes <= chunk) {
      std::size_t const per = chunk / d.row_bytes;
      for (std::size_t r = 0; r < d.rows; r += per)
        piece(dst_slice + r * d.dst.pitch, src_slice + r * d.src.pitch, d.row_bytes,
              std::min(per, d.rows - r));
    } else {
      for (std::size_t r = 0; r < d.rows; ++r)
        for (std::size_t at = 0; at < d.row_bytes; at += chunk)
          piece(dst_slice + r * d.dst.pitch + at, src_slice + r * d.src.pitch + at,
                std::min(chunk, d.row_bytes - at), 1);
    }
  }
  return out;
}

/// One device's staging thread and bounce buffers.
class stager {
 public:
  explicit stager(int ordinal);
  ~stager();
  stager(stager const&) = delete;
  stager& operator=(stager const&) = delete;

  /// Queues `d` (one side pageable host memory, the other memory of this device) after
  /// `deps` (null: none); the event completes when the bytes have arrived.
  event copy(copy_desc const& d, after const* deps);
  /// Waits until no staged copy is queued or running; whether any was.
  bool wait_idle();

 private:
  struct job {
    copy_desc desc;
    after deps;
    event done;
    // The trace's origin of the copy (the graph node that queued it), adopted by the
    // staging thread so that the copy's arrow starts at its node, not at this thread.
    ::strata::trace::detail::flow_origin origin;
  };
  void run();
  void stage(job const& j);

  int ordinal_;
  void* buffers_[2] = {nullptr, nullptr};  // page-locked, staging_chunk bytes each
  void* filled_[2] = {nullptr, nullptr};   // cudaEvent_t: the last DMA of each buffer
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<job> queue_;
  bool running_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

/// Queues `d` on the staging thread of device `ordinal` (made on first use).
event staged_copy(int ordinal, copy_desc const& d, after const* deps);

}  // namespace strata::detail::cuda
