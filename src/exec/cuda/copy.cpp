// Copies that touch CUDA memory (Phalanx §III-C; Alpaka §3.4.4): cudaMemcpyAsync for one
// contiguous run, cudaMemcpy2DAsync / cudaMemcpy3DAsync for pitched ones, the peer
// variants between two GPUs, and the strided copy kernel for short rows within one GPU.
// Every copy goes to a stream of the device's pool and completes like a kernel.
#include <strata/error.hpp>
#include <strata/exec/cuda/backend.hpp>
#include <strata/memory/allocate.hpp>

#include "exec/cuda/copy.hpp"
#include "exec/cuda/pointers.hpp"
#include "exec/cuda/staging.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace strata::detail::cuda {
namespace {

// The CUDA ordinal of a CUDA-side address, from the allocation registry (a hand-made ptr
// may carry a wrong place id), or for memory Strata did not allocate (cudaMalloc, cuBLAS,
// Thrust) from CUDA's own record of it.
int ordinal_of(copy_side const& s, char const* what = "copy") {
  auto info = find_allocation(s.base);
  if (!info) {
    auto foreign = foreign_memory_of(s.base);
    if (foreign && (foreign->space == space_id::cuda || foreign->space == space_id::managed) &&
        foreign->device >= 0)
      return foreign->device;
  }
  if (!info || (info->space != space_id::cuda && info->space != space_id::managed) ||
      info->machine != current_machine_key())
    throw invalid_argument(fmt::format(
        "{}: {} is used as CUDA memory but is neither a live CUDA allocation of this runtime "
        "nor CUDA memory the CUDA runtime knows",
        what, static_cast<void*>(s.base)));
  return place_of_id(info->place_id).os_index();
}

void check(cudaError_t e, char const* call, copy_desc const& d, char const* what = "copy") {
  if (e != cudaSuccess)
    fail(call, e,
         fmt::format("{} of {} bytes ({} x {} rows of {})", what, d.bytes(), d.slices, d.rows,
                     d.row_bytes));
}

// cudaMemcpy3D describes a slice as `ysize` rows of `pitch` bytes.
cudaPitchedPtr pitched(void const* base, std::size_t pitch, std::size_t row_bytes,
                       std::size_t rows) {
  cudaPitchedPtr p{};
  p.ptr = const_cast<void*>(base);
  p.pitch = pitch;
  p.xsize = row_bytes;
  p.ysize = rows;
  return p;
}
cudaPitchedPtr pitched(copy_side const& s, std::size_t row_bytes, std::size_t rows) {
  return pitched(s.base, s.pitch, row_bytes, rows);
}
cudaExtent extent_of(std::size_t width, std::size_t height, std::size_t depth) {
  cudaExtent e{};
  e.width = width;
  e.height = height;
  e.depth = depth;
  return e;
}

}  // namespace

event copy(copy_desc const& given, after const* deps) {
  // A single row's pitch and a single slice's pitch mean nothing, and callers may leave
  // them 0; CUDA wants pitch >= width and whole-row slice pitches (and `% pitch` below
  // must not divide by 0), so they are made consistent first.
  copy_desc d = given;
  for (auto* side : {&d.dst, &d.src}) {
    if (d.rows <= 1 && side->pitch < d.row_bytes) side->pitch = d.row_bytes;
    if (d.slices <= 1) side->slice_pitch = d.rows * side->pitch;
  }
  if (d.bytes() != 0 && (d.dst.pitch == 0 || d.src.pitch == 0))
    throw invalid_argument(
        fmt::format("copy: a row pitch of 0 bytes for {} rows of {} bytes", d.rows, d.row_bytes));
  auto on_gpu = [](space_id s) { return s == space_id::cuda || s == space_id::managed; };
  bool const dst_gpu = on_gpu(d.dst.space), src_gpu = on_gpu(d.src.space);
  int const dst_dev = dst_gpu ? ordinal_of(d.dst) : -1;
  int const src_dev = src_gpu ? ordinal_of(d.src) : -1;
  int const device = src_gpu ? src_dev : dst_dev;
  bool const peer = dst_gpu && src_gpu && dst_dev != src_dev;
  // cudaMemcpyAsync with pageable host memory blocks this thread until the stream's
  // earlier work (and, to the host, the copy) is done: such copies are staged instead.
  if ((!src_gpu && pageable(d.src)) || (!dst_gpu && pageable(d.dst)))
    return staged_copy(device, d, deps);
  device_guard const keep_device;  // stream_for makes `device` current
  auto stream = static_cast<cudaStream_t>(stream_for(device, deps));
  std::size_t const rows = d.rows * d.slices;
  // Slices that continue their rows' pitch on both sides are just more rows.
  bool const slices_are_rows = d.slices == 1 || (d.dst.slice_pitch == d.rows * d.dst.pitch &&
                                                 d.src.slice_pitch == d.rows * d.src.pitch);
  if (d.contiguous()) {
    check(peer ? cudaMemcpyPeerAsync(d.dst.base, dst_dev, d.src.base, src_dev, d.bytes(), stream)
               : cudaMemcpyAsync(d.dst.base, d.src.base, d.bytes(), cudaMemcpyDefault, stream),
          peer ? "cudaMemcpyPeerAsync" : "cudaMemcpyAsync", d);
  } else if (dst_gpu && src_gpu && !peer && d.row_bytes < short_row_bytes) {
    (void)cudaGetLastError();  // so that the check below sees this launch's error only
    strided_copy(d, stream);
    check(cudaGetLastError(), "strided copy kernel launch", d);
  } else if (!peer && slices_are_rows) {
    check(cudaMemcpy2DAsync(d.dst.base, d.dst.pitch, d.src.base, d.src.pitch, d.row_bytes, rows,
                            cudaMemcpyDefault, stream),
          "cudaMemcpy2DAsync", d);
  } else if (d.dst.slice_pitch % d.dst.pitch == 0 && d.src.slice_pitch % d.src.pitch == 0) {
    // 3-D: a slice pitch that is a whole number of rows on both sides.
    auto extent = extent_of(d.row_bytes, d.rows, d.slices);
    if (peer) {
      cudaMemcpy3DPeerParms p{};
      p.srcPtr = pitched(d.src, d.row_bytes, d.src.slice_pitch / d.src.pitch);
      p.dstPtr = pitched(d.dst, d.row_bytes, d.dst.slice_pitch / d.dst.pitch);
      p.srcDevice = src_dev;
      p.dstDevice = dst_dev;
      p.extent = extent;
      check(cudaMemcpy3DPeerAsync(&p, stream), "cudaMemcpy3DPeerAsync", d);
    } else {
      cudaMemcpy3DParms p{};
      p.srcPtr = pitched(d.src, d.row_bytes, d.src.slice_pitch / d.src.pitch);
      p.dstPtr = pitched(d.dst, d.row_bytes, d.dst.slice_pitch / d.dst.pitch);
      p.extent = extent;
      p.kind = cudaMemcpyDefault;
      check(cudaMemcpy3DAsync(&p, stream), "cudaMemcpy3DAsync", d);
    }
  } else {
    // Slice pitches of no whole row count: one 2-D copy per slice.
    for (std::size_t k = 0; k < d.slices; ++k) {
      auto* to = d.dst.base + k * d.dst.slice_pitch;
      auto const* from = d.src.base + k * d.src.slice_pitch;
      if (peer) {
        cudaMemcpy3DPeerParms p{};
        p.srcPtr = pitched(from, d.src.pitch, d.row_bytes, d.rows);
        p.dstPtr = pitched(to, d.dst.pitch, d.row_bytes, d.rows);
        p.srcDevice = src_dev;
        p.dstDevice = dst_dev;
        p.extent = extent_of(d.row_bytes, d.rows, 1);
        check(cudaMemcpy3DPeerAsync(&p, stream), "cudaMemcpy3DPeerAsync", d);
      } else {
        check(cudaMemcpy2DAsync(to, d.dst.pitch, from, d.src.pitch, d.row_bytes, d.rows,
                                cudaMemcpyDefault, stream),
              "cudaMemcpy2DAsync", d);
      }
    }
  }
  return finish(device, stream,
                fmt::format("copy of {} bytes {} CUDA device {}", d.bytes(),
                            peer ? "between" : (src_gpu ? "from" : "to"), device));
}

event memset(copy_desc const& given, unsigned char byte, after const* deps) {
  copy_desc d = given;
  auto& side = d.dst;
  if (d.rows <= 1 && side.pitch < d.row_bytes) side.pitch = d.row_bytes;
  if (d.slices <= 1) side.slice_pitch = d.rows * side.pitch;
  if (d.bytes() != 0 && side.pitch < d.row_bytes)
    throw invalid_argument(fmt::format(
        "memset: a row pitch of {} bytes is below the row of {} bytes", side.pitch, d.row_bytes));
  int const device = ordinal_of(side, "memset");
  device_guard const keep_device;  // stream_for makes `device` current
  auto stream = static_cast<cudaStream_t>(stream_for(device, deps));
  bool const dense_rows = d.rows == 1 || side.pitch == d.row_bytes;
  bool const slices_are_rows = d.slices == 1 || side.slice_pitch == d.rows * side.pitch;
  if (dense_rows && slices_are_rows) {
    check(cudaMemsetAsync(side.base, byte, d.bytes(), stream), "cudaMemsetAsync", d, "memset");
  } else if (slices_are_rows) {
    check(cudaMemset2DAsync(side.base, side.pitch, byte, d.row_bytes, d.rows * d.slices, stream),
          "cudaMemset2DAsync", d, "memset");
  } else {
    for (std::size_t k = 0; k < d.slices; ++k)
      check(cudaMemset2DAsync(side.base + k * side.slice_pitch, side.pitch, byte, d.row_bytes,
                              d.rows, stream),
            "cudaMemset2DAsync", d, "memset");
  }
  return finish(device, stream,
                fmt::format("memset of {} bytes on CUDA device {}", d.bytes(), device));
}

}  // namespace strata::detail::cuda
