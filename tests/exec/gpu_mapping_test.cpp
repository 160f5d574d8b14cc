// The host-side logic of the CUDA backend (issue 13), tested without a GPU: where a grid
// goes on CUDA's axes (item 2: plan_grid, check_shape), the grid-stride order of a
// thread's elements through a context that asks for it the way the CUDA context does
// (item 10), how memory CUDA reports is taken (item 1), the pool of markers (item 7) and
// the chunks pageable host copies are staged in (item 6).
#include <strata/config.hpp>
#include <strata/exec/copy.hpp>
#include <strata/exec/cuda/backend.hpp>
#include <strata/exec/domain.hpp>
#include <strata/runtime.hpp>

#include "exec/cuda/event_pool.hpp"
#include "exec/cuda/pointers.hpp"
#include "exec/cuda/staging.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace strata {
namespace {

// An H100's limits (cudaDeviceProp): grid x 2^31-1, y and z 65535.
detail::cuda::device_limits const gpu{
    1024, {1024, 1024, 64}, {2147483647, 65535, 65535}, 48 * 1024, 227 * 1024};

TEST(CudaGridPlan, LastDimensionIsXWhenTheGridFits) {
  auto p = detail::cuda::plan_grid(vec<2>{300, 7}, gpu);
  EXPECT_EQ(p.axis_of_dim[0], 1);  // y
  EXPECT_EQ(p.axis_of_dim[1], 0);  // x
  EXPECT_EQ(p.extent[0], 7u);
  EXPECT_EQ(p.extent[1], 300u);
  EXPECT_EQ(p.extent[2], 1u);
}

// A fill of a 200000 x 64 view: 200000 rows of blocks do not fit y (65535); they go to x.
TEST(CudaGridPlan, MoreThan65535RowsGoToX) {
  auto p = detail::cuda::check_shape(0, gpu, vec<2>{200000, 1}, vec<2>{1, 256}, 0);
  EXPECT_EQ(p.axis_of_dim[0], 0);
  EXPECT_EQ(p.axis_of_dim[1], 1);
  EXPECT_EQ(p.extent[0], 200000u);
  EXPECT_EQ(p.extent[1], 1u);
  auto q = detail::cuda::check_shape(0, gpu, vec<3>{3, 100000, 5}, vec<3>{1, 1, 128}, 0);
  EXPECT_EQ(q.axis_of_dim[1], 0);  // the largest, 100000 blocks, on x
  EXPECT_EQ(q.axis_of_dim[0], 1);  // the others on y and z in Strata's order
  EXPECT_EQ(q.axis_of_dim[2], 2);
  EXPECT_EQ(q.extent[0], 100000u);
  EXPECT_EQ(q.extent[1], 3u);
  EXPECT_EQ(q.extent[2], 5u);
}

TEST(CudaGridPlan, TwoDimensionsBeyondYAndZAreAClearError) {
  try {
    detail::cuda::check_shape(0, gpu, vec<2>{70000, 80000}, vec<2>{1, 1}, 0);
    FAIL() << "a 70000 x 80000 grid was accepted";
  } catch (invalid_argument const& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the device's limit of 65535"), std::string::npos)
        << e.what();
  }
}

// A host stand-in for the CUDA context: fixed indices, grid-stride elements.
template <std::size_t D, bool Strided>
struct fake_context {
  static constexpr bool grid_stride_elements = Strided;
  vec<D> grid, block, elements, at_block, at_thread;
  vec<D> grid_extent() const { return grid; }
  vec<D> block_extent() const { return block; }
  vec<D> element_extent() const { return elements; }
  vec<D> block_index() const { return at_block; }
  vec<D> thread_index() const { return at_thread; }
};

template <bool Strided>
std::vector<index_t> elements_1d(index_t block, index_t thread, index_t bound) {
  using ctx = fake_context<1, Strided>;
  ctx c{{2}, {2}, {3}, {block}, {thread}};
  domain<1, streaming_group, ctx> self(c);
  std::vector<index_t> r;
  for (auto i : self.elements(bound)) r.push_back(i);
  return r;
}

TEST(ElementOrder, GpuThreadsStrideOverTheGrid) {
  // 2 blocks x 2 threads x 3 elements: thread 1 of block 0 is global thread 1 of 4.
  EXPECT_EQ(elements_1d<true>(0, 1, 12), (std::vector<index_t>{1, 5, 9}));
  EXPECT_EQ(elements_1d<true>(0, 1, 7), (std::vector<index_t>{1, 5}));
  EXPECT_EQ(elements_1d<true>(1, 1, 3), (std::vector<index_t>{}));
  // The CPU order: one contiguous chunk.
  EXPECT_EQ(elements_1d<false>(0, 1, 12), (std::vector<index_t>{3, 4, 5}));
  // Either order covers [0, bound) once.
  for (index_t bound : {0, 5, 11, 12}) {
    std::vector<index_t> all;
    for (index_t b = 0; b < 2; ++b)
      for (index_t t = 0; t < 2; ++t)
        for (auto i : elements_1d<true>(b, t, bound)) all.push_back(i);
    std::sort(all.begin(), all.end());
    std::vector<index_t> expect(static_cast<std::size_t>(bound));
    for (index_t i = 0; i < bound; ++i) expect[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(all, expect) << "bound " << bound;
  }
}

TEST(ElementOrder, StridedCountEqualsANaiveCount) {
  // The division-free path (every element in bounds) and the dividing one, at every edge.
  for (index_t first = 0; first < 20; ++first)
    for (index_t stride = 1; stride < 8; ++stride)
      for (index_t count = 0; count < 7; ++count)
        for (index_t bound = 0; bound < 45; ++bound) {
          index_t naive = 0;
          for (index_t k = 0; k < count; ++k) naive += first + k * stride < bound ? 1 : 0;
          ASSERT_EQ(detail::strided_count(first, stride, count, bound), naive)
              << first << " " << stride << " " << count << " " << bound;
        }
}

TEST(ElementOrder, GpuThreadsStrideIn2D) {
  using ctx = fake_context<2, true>;
  // Grid 1 x 2 blocks of 2 x 2 threads, 2 x 2 elements each: global extent 2 x 4.
  ctx c{{1, 2}, {2, 2}, {2, 2}, {0, 1}, {1, 0}};
  domain<2, streaming_group, ctx> self(c);
  std::vector<vec<2>> got;
  for (auto p : self.elements(vec<2>{4, 7})) got.push_back(p);
  // Global thread (1, 2); strides (2, 4); column 2 + 4 = 6 < 7 stays.
  std::vector<vec<2>> expect{{1, 2}, {1, 6}, {3, 2}, {3, 6}};
  EXPECT_EQ(got, expect);
  // The contiguous chunk every backend can still ask for.
  auto chunk = self.element_chunk();
  EXPECT_EQ(chunk.first, (vec<2>{2, 4}));
  EXPECT_EQ(chunk.extent, (vec<2>{2, 2}));
}

// Item 1: memory from cudaMalloc / cuBLAS / Thrust is device memory of its GPU, from
// cudaMallocManaged managed memory, from cudaHostAlloc pinned; pageable memory is none.
TEST(CudaForeignMemory, ClassifiesWhatCudaReports) {
  using detail::cuda::classify;
  using detail::cuda::memory_type;
  auto dev = classify(memory_type::device, 3);
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev->space, space_id::cuda);
  EXPECT_EQ(dev->device, 3);
  auto managed = classify(memory_type::managed, 1);
  ASSERT_TRUE(managed);
  EXPECT_EQ(managed->space, space_id::managed);
  auto pinned = classify(memory_type::host, 0);
  ASSERT_TRUE(pinned);
  EXPECT_EQ(pinned->space, space_id::pinned);
  EXPECT_FALSE(classify(memory_type::unregistered, -2));
}

// Without a GPU (or without CUDA) a host address is no CUDA memory: the check still
// rejects a vector's data as a CUDA kernel argument.
TEST(CudaForeignMemory, PageableHostMemoryIsNotCudaMemory) {
  int on_stack = 0;
  EXPECT_FALSE(detail::cuda::foreign_memory_of(&on_stack));
}

// Item 3: a memset of CUDA memory from a file the host compiler built goes to the
// library's cudaMemset path (it used to launch a kernel, which throws "compile with nvcc"
// here). A view no allocation holds is refused by that path, naming the address.
TEST(CudaMemset, RunsFromHostCompiledFiles) {
  runtime rt;
  static std::byte fake[256];
  view<std::byte, 2, cuda_space> v(ptr<std::byte, cuda_space>(fake, 0), vec<2>{4, 16}, 32);
  try {
    strata::memset(v, 0).wait();
    FAIL() << "memset of memory no allocation holds was accepted";
  } catch (not_supported const& e) {
    EXPECT_FALSE(STRATA_ENABLE_CUDA) << e.what();  // only a libstrata without CUDA says so
    EXPECT_NE(std::string(e.what()).find("built with CUDA"), std::string::npos) << e.what();
  } catch (invalid_argument const& e) {
    EXPECT_TRUE(STRATA_ENABLE_CUDA);
    EXPECT_NE(std::string(e.what()).find("neither a live CUDA allocation"), std::string::npos)
        << e.what();
  }
}

// Item 7: markers are reused, not made per launch.
TEST(CudaMarkerPool, ReusesHandlesAndOutlivesItsOwner) {
  static int storage[4];
  int made = 0, destroyed = 0;
  auto create = [&] { return &storage[made++]; };
  auto destroy = [&](int*) { ++destroyed; };
  auto pool = detail::cuda::make_handle_pool<int*>(create, destroy);
  auto a = pool->acquire();
  void* first = a.get();
  a.reset();
  EXPECT_EQ(pool->idle(), 1u);
  auto b = pool->acquire();
  EXPECT_EQ(b.get(), first);  // the same handle again, none made
  auto c = pool->acquire();
  EXPECT_EQ(made, 2);
  pool.reset();  // the runtime goes; the lent handles keep the pool
  EXPECT_EQ(destroyed, 0);
  b.reset();
  c.reset();
  EXPECT_EQ(destroyed, 2);  // the last handle back destroys the pool and its handles
}

// Item 6: the pieces a staged copy moves through the bounce buffers cover every byte once,
// none larger than a buffer; checked by doing the copy with them on the host.
TEST(CudaStaging, PiecesCoverTheCopyOnceWithinAChunk) {
  struct layout {
    std::size_t row_bytes, rows, slices, dst_pitch, src_pitch, dst_slice, src_slice;
  };
  for (auto l : {layout{100, 1, 1, 100, 100, 100, 100},  // contiguous, 4 pieces
                 layout{24, 10, 3, 24, 24, 240, 240},    // contiguous 3-D
                 layout{24, 10, 3, 32, 40, 400, 400},    // pitched rows of 24
                 layout{70, 3, 2, 80, 72, 300, 216},     // rows longer than a chunk
                 layout{16, 5, 2, 16, 16, 100, 80}}) {   // slices with gaps
    std::size_t const chunk = 32;
    std::vector<std::byte> src(l.slices * l.src_slice + 64), dst(l.slices * l.dst_slice + 64);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 1);
    detail::copy_desc d{{dst.data(), l.dst_pitch, l.dst_slice, space_id::host, 0},
                        {src.data(), l.src_pitch, l.src_slice, space_id::host, 0},
                        l.row_bytes,
                        l.rows,
                        l.slices};
    auto expect = dst;
    for (std::size_t k = 0; k < l.slices; ++k)
      for (std::size_t r = 0; r < l.rows; ++r)
        std::memcpy(expect.data() + k * l.dst_slice + r * l.dst_pitch,
                    src.data() + k * l.src_slice + r * l.src_pitch, l.row_bytes);
    std::size_t moved = 0;
    for (auto const& p : detail::cuda::staging_pieces(d, chunk)) {
      EXPECT_EQ(p.slices, 1u);
      EXPECT_LE(p.bytes(), chunk);
      EXPECT_GE(p.dst.pitch, p.row_bytes);
      EXPECT_GE(p.src.pitch, p.row_bytes);
      for (std::size_t r = 0; r < p.rows; ++r)
        std::memcpy(p.dst.base + r * p.dst.pitch, p.src.base + r * p.src.pitch, p.row_bytes);
      moved += p.bytes();
    }
    EXPECT_EQ(moved, d.bytes()) << "row " << l.row_bytes;
    EXPECT_EQ(dst, expect) << "row " << l.row_bytes;
  }
}

}  // namespace
}  // namespace strata
