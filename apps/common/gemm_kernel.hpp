// One GEMM kernel source for every backend (Alpaka §4.2.2, Fig. 7: "a block calculates the
// result of a tile in matrix C. Each thread in this block loads a set of elements of
// matrices A and B into shared memory ... It then calculates the partial results of its
// set of elements before the block continues with the next tiles of A and B"):
//
//   C = alpha A B + beta C
//
// * grid: one block per block tile of C (bm x bn = threads x elements per thread);
// * block: a parallel block whose threads pack the block's slice of B (kc x bn) and of
//   A (bm x kc, or chunks of it: see `gemm_tiling`) into the scratchpad, meet at a
//   barrier, multiply, meet again;
// * thread: its elements of C, as micro-tiles of RM x RN;
// * element: one micro-tile is a register tile, RM x RN accumulators in a fixed-size
//   array that the compiler keeps in vector registers (the k loop broadcasts one element
//   of A and multiplies a row of RN elements of B: an FMA per vector of the tile).
//
// The layout types are the tiling (PARRAY §7.1, Listing 43: the sgemm's A, B, C, S (smem)
// and R (rmem) array types partition the arrays over blocks, shared memory and
// registers). `gemm_tiling` declares the scratch and register tiles as PARRAY array types
// (`static_dims`, folded at compile time) and the kernel reads its strides off them; the
// operands are given as array types too (apps/common/gemm.hpp), so a transposed or
// windowed A is just another type (PARRAY §7.1: "the array type that describes array's
// memory layout can become the arguments of the sub program").
//
// What differs between backends is only the tiling: a CPU block is one thread with a
// large share of C in many micro-tiles (alpaka: one thread per block on CPUs, the element
// level for the vector unit), a device block is 16 x 16 threads with one micro-tile each
// (the CUDA programming guide's tiling). `gemm_cpu_tiling` / `gemm_device_tiling` are
// those traits; the source below is the same.
#pragma once

#include <strata/strata.hpp>

#include <cstddef>
#include <cstdint>

// The element level's two loop forms. Rows of the register tile are unrolled fully, so
// its accumulators are registers (nvcc and clang spell it `unroll`, GCC `GCC unroll`);
// a row is one `omp simd` loop, a vector of the tile. Without the simd loop GCC 12's SLP
// vectorizer loads RM elements of A as one vector and permutes each into a broadcast
// (8 vpermpd per 16 FMAs on AVX-512: 51 against 64-78 GFLOP/s for an 8 x 16 double
// tile in L1, measured on the development VM). A GPU thread's row is plain scalar code.
// The k loop is unrolled 4 times: a step is 16 FMAs, 10 loads and the loop's own 5-6
// instructions, which the unrolling spreads (GCC 12 does not unroll it by itself: the
// micro-kernel ran 5-15% faster unrolled, session 56, one core of the Xeon VM).
#if defined(__CUDACC__)
#define APPS_GEMM_UNROLL _Pragma("unroll")
#define APPS_GEMM_UNROLL_K _Pragma("unroll 4")
#define APPS_GEMM_SIMD
#elif defined(__clang__)
#define APPS_GEMM_UNROLL _Pragma("unroll")
#define APPS_GEMM_UNROLL_K _Pragma("unroll 4")
#define APPS_GEMM_SIMD _Pragma("omp simd")
#else
#define APPS_GEMM_UNROLL _Pragma("GCC unroll 32")
#define APPS_GEMM_UNROLL_K _Pragma("GCC unroll 4")
#define APPS_GEMM_SIMD _Pragma("omp simd")
#endif

namespace apps {

using strata::index_t;

/// A matrix operand in its strided form: element (i, j) at data[i * rs + j * cs]. The
/// host side derives it from a rank-2 array type (gemm.hpp); the kernel sees only this.
template <class T>
struct gemm_operand {
  T* data = nullptr;
  index_t rows = 0, cols = 0;
  index_t rs = 0, cs = 0;  // row and column strides, in elements
};

/// Arguments of one GEMM launch: C (m x n) = alpha A (m x k) B (k x n) + beta C.
template <class T>
struct gemm_problem {
  index_t m = 0, n = 0, k = 0;
  T alpha{1}, beta{0};
  gemm_operand<T const> a, b;
  gemm_operand<T> c;
};

/// The tiling of one backend kind, as array types (PARRAY §7.1):
///   reg       [RM][RN]            a thread's register tile of C (PARRAY's `R`, rmem)
///   a_scratch [MC/RM][KC][RM]     a chunk of the block's slice of A: panels of RM rows,
///                                 k-major (`S`)
///   b_scratch [BN/RN][KC+PB][RN]  the block's slice of B: panels of RN columns, k-major;
///                                 PB k steps of padding after each panel (see below)
/// The micro-kernel walks a panel of A and one of B in step, RM and RN elements a step,
/// so both are read contiguously (what packing buys: no strides, no cache-set conflicts
/// of power-of-two leading dimensions). BM and BN are the largest block tile; a launch may
/// use smaller ones (its shape's elements), in whole panels: the strides do not change.
/// A block's rows pass through the A scratch MC at a time, each chunk against the whole
/// B slice (BLIS's loop around the micro-kernel: B is packed once per k slice and reused
/// by every chunk, the A chunk is sized for L2); MC = BM packs the block's A at once.
/// PB pads the B panels: packing scatters one row of B over every panel, and panels of
/// a power-of-two size (KC x RN doubles: 16 KiB) put those stores in the same L1 sets,
/// where they evict one another; one step of padding spreads them (packing a 256 x 256 B
/// took 19-20 us without it, 7.5 us with it, on one core of the development VM).
template <class T, index_t RM, index_t RN, index_t KC, index_t BM, index_t BN, index_t PB = 0,
          index_t MC = BM>
struct gemm_tiling {
  static_assert(BM % RM == 0 && BN % RN == 0 && MC % RM == 0 && MC <= BM,
                "block tiles and A chunks are whole register tiles");
  using value_type = T;
  static constexpr index_t rm = RM, rn = RN, kc = KC, max_bm = BM, max_bn = BN, mc = MC;

  using type = strata::array_type<T>;
  static constexpr type reg = type(strata::static_dims(RM, RN));
  static constexpr type a_scratch = type(strata::static_dims(MC / RM, KC, RM));
  static constexpr type b_scratch = type(strata::static_dims(BN / RN, KC + PB, RN));

  // The kernel's index arithmetic, read off the types (evaluated by the compiler).
  static constexpr index_t a_panel = a_scratch.stride(0);  // one panel of A
  static constexpr index_t a_step = a_scratch.stride(1);   // one k step in a panel
  static constexpr index_t b_panel = b_scratch.stride(0);
  static constexpr index_t b_step = b_scratch.stride(1);
  // The accumulators are `T acc[RM][RN]`, the reg type's row-major layout.
  static_assert(a_scratch.stride(2) == 1 && b_scratch.stride(2) == 1 && reg.stride(0) == RN &&
                    reg.stride(1) == 1,
                "a step of a panel and a row of the register tile are contiguous");

  /// The rows of A a block of bm rows packs at once: chunks of MC for a block of one
  /// thread, the whole block for one of several (its threads' tiles interleave over it).
  STRATA_FN static constexpr index_t chunk_rows(index_t bm, index_t threads_m) {
    return threads_m == 1 && bm > MC ? MC : bm;
  }

  /// Scratchpad bytes of a block tile of bm x bn (whole panels) of threads_m rows of
  /// threads.
  static constexpr std::size_t scratch_bytes(index_t bm, index_t bn, index_t threads_m) {
    return static_cast<std::size_t>(chunk_rows(bm, threads_m) / RM * a_panel + bn / RN * b_panel) *
               sizeof(T) +
           64;
  }
};

/// CPU backends (serial, threads, openmp): one thread per block, the block's tile of C
/// in RM x RN register tiles: 8 x 16 doubles / 8 x 32 floats, 16 AVX-512 accumulators,
/// at the FMA peak in L1 (131-135 GFLOP/s double on one core of the development VM, by
/// thread CPU time, for every shape from 6 x 16 to 14 x 16). An A chunk (256 x 384
/// doubles, 512 x 256 floats: 768 / 512 KiB) stays in L2 while the B panels pass it; a B
/// panel (KC x RN: 48 / 32 KiB) is read once per A panel of the chunk, mostly from L1
/// (at 48 KiB the double panel fills the L1 beside the streaming A panel, and still ran
/// faster than KC 256: the C tiles are read and written once per k slice).
///
/// The sizes are measured, not derived. On an AMD VM with a 1 MiB L2 (n = 2048, one core,
/// GFLOP/s by CPU time, two runs each), one chunk per block: double KC x BM 256 x 256:
/// 98-101, 128 x 512: 107, 128 x 256: 100-102, 192 x 384: 94-98; float 256 x 256:
/// 212-214, 128 x 512: 225-227, 256 x 512: 235-237. On a Xeon VM with AVX-512 and a 2 MiB
/// L2 (sessions 55-56, one core against OpenBLAS in the same process; the figures move
/// 20% with the VM's phase, so only ratios compare): a 1 MiB A chunk (512 x 256 double)
/// left the micro-kernel at 65-66 GFLOP/s, a 512 KiB one at 69-70; packing took 12-16%
/// of the time with a chunk per block of 512 x 1024 (B packed again by every block of a
/// column, 8 times at n = 4096) and 9-10% with 1024-row blocks of four chunks. Double
/// n = 4096 against OpenBLAS: KC x BM x BN x MC 256 x 512 x 1024 x 512: 0.74-0.76; 384 x
/// 1024 x 1024 x 256: 0.85-0.90; 2048-row blocks: 0.88-0.90 at 4096, 0.86 at 2048
/// (the B slice then comes back from L3 eight times: the micro-kernel ran 3-5% slower).
/// Float n = 4096: 256 x 512 x 2048 x 512: 0.83, 1024-row blocks 0.85, 2048-row 0.78;
/// KC 384 no better. Register tiles of 12 x 16, 14 x 16, 8 x 24 and 6 x 32 were within the
/// VM's noise of 8 x 16 in a stand-alone harness; 6 x 32 (24 accumulators) in the kernel
/// as launched ran at 19 GFLOP/s against 48 (GCC spilled the accumulators there).
template <class T>
struct gemm_cpu_tiling;
template <>
struct gemm_cpu_tiling<double> : gemm_tiling<double, 8, 16, 384, 1024, 1024, 1, 256> {};
template <>
struct gemm_cpu_tiling<float> : gemm_tiling<float, 8, 32, 256, 1024, 2048, 1, 512> {};

/// Devices (CUDA, sim): 16 x 16 threads per block, one 4 x 4 register tile each, a
/// 64 x 64 block tile, k slices of 16: 16 KiB (double) of shared memory per block.
template <class T>
struct gemm_device_tiling : gemm_tiling<T, 4, 4, 16, 64, 64> {
  static constexpr index_t threads = 16;
};

namespace detail {

STRATA_FN constexpr index_t gemm_min(index_t a, index_t b) {
  return a < b ? a : b;
}

/// acc += (panel of A) x (panel of B) over kb steps: the register tile.
template <class Tiling, class T>
STRATA_FN inline void gemm_micro(index_t kb, T const* __restrict__ a, T const* __restrict__ b,
                                 T (&acc)[Tiling::rm][Tiling::rn]) {
  APPS_GEMM_UNROLL_K
  for (index_t p = 0; p < kb; ++p) {
    T const* ap = a + p * Tiling::a_step;
    T const* bp = b + p * Tiling::b_step;
#if !defined(__CUDA_ARCH__)
    // A CPU reads the A panel from L2 (the block's A chunk): asked for 16 k steps ahead
    // (1 KiB of double), a 2048^3 dgemm ran at 67-71 GFLOP/s on one core of a Xeon VM
    // with AVX-512, against 59-61 without (the hardware prefetchers alone). Integer
    // arithmetic: past the last panel the address is outside the scratchpad, which a
    // prefetch may name but a pointer may not.
    __builtin_prefetch(reinterpret_cast<void const*>(reinterpret_cast<std::uintptr_t>(ap) +
                                                     16 * Tiling::a_step * sizeof(T)));
#endif
    APPS_GEMM_UNROLL
    for (index_t i = 0; i < Tiling::rm; ++i) {
      T const ai = ap[i];
      APPS_GEMM_SIMD
      for (index_t j = 0; j < Tiling::rn; ++j) acc[i][j] += ai * bp[j];
    }
  }
}

/// C tile at (i, j) = alpha acc + beta' C, beta' = beta for the first k slice (C is not
/// read when it is 0, as BLAS), 1 after it. Clipped at the edges of C.
template <class Tiling, class T>
STRATA_FN inline void gemm_store(gemm_problem<T> const& g, T const (&acc)[Tiling::rm][Tiling::rn],
                                 index_t i, index_t j, bool first) {
  constexpr index_t RM = Tiling::rm, RN = Tiling::rn;
  T const beta = first ? g.beta : T(1);
  T* c = g.c.data + i * g.c.rs + j * g.c.cs;
  index_t const rows = gemm_min(RM, g.m - i), cols = gemm_min(RN, g.n - j);
  if (rows == RM && cols == RN && g.c.cs == 1) {
    APPS_GEMM_UNROLL
    for (index_t r = 0; r < RM; ++r) {
      T* cr = c + r * g.c.rs;
      if (beta == T(0)) {
        APPS_GEMM_SIMD
        for (index_t s = 0; s < RN; ++s) cr[s] = g.alpha * acc[r][s];
      } else {
        APPS_GEMM_SIMD
        for (index_t s = 0; s < RN; ++s) cr[s] = g.alpha * acc[r][s] + beta * cr[s];
      }
    }
    return;
  }
  for (index_t r = 0; r < rows; ++r)
    for (index_t s = 0; s < cols; ++s) {
      T& x = c[r * g.c.rs + s * g.c.cs];
      x = beta == T(0) ? g.alpha * acc[r][s] : g.alpha * acc[r][s] + beta * x;
    }
}

/// Packs A's rows [i0, i0 + mb) x columns [k0, k0 + kb) into panels of RM rows (the
/// a_scratch type); rows past mb are zeros, so edge tiles need no special micro-kernel.
/// The block's threads share the (panel, k) pairs.
template <class Tiling, class T>
STRATA_FN inline void gemm_pack_a(T* __restrict__ dst, gemm_operand<T const> const& a, index_t i0,
                                  index_t mb, index_t k0, index_t kb, index_t tid, index_t nt) {
  constexpr index_t RM = Tiling::rm, KC = Tiling::kc;
  index_t const panels = (mb + RM - 1) / RM;
  if (nt == 1 && a.cs == 1) {
    // One thread (a CPU block), A's rows contiguous: each row's next W k steps are read
    // as one piece and written transposed (one element of each of RM rows at a time
    // packed a 512 x 256 double slice at 7.4 GB/s, this at 9.3-9.7; session 56).
    constexpr index_t W = 8;
    for (index_t u = 0; u < panels; ++u) {
      index_t const rows = gemm_min(RM, mb - u * RM);
      T* d = dst + u * Tiling::a_panel;
      T const* s = a.data + (i0 + u * RM) * a.rs + k0;
      index_t p = 0;
      if (rows == RM) {
        for (; p + W <= kb; p += W) {
          T t[RM][W];
          for (index_t r = 0; r < RM; ++r)
            for (index_t q = 0; q < W; ++q) t[r][q] = s[r * a.rs + p + q];
          for (index_t q = 0; q < W; ++q)
            for (index_t r = 0; r < RM; ++r) d[(p + q) * Tiling::a_step + r] = t[r][q];
        }
      }
      for (; p < kb; ++p)
        for (index_t r = 0; r < RM; ++r)
          d[p * Tiling::a_step + r] = r < rows ? s[r * a.rs + p] : T(0);
    }
    return;
  }
  for (index_t q = tid; q < panels * KC; q += nt) {
    index_t const u = q / KC, p = q % KC;
    if (p >= kb) continue;
    T* d = dst + u * Tiling::a_panel + p * Tiling::a_step;
    T const* s = a.data + (i0 + u * RM) * a.rs + (k0 + p) * a.cs;
    if ((u + 1) * RM <= mb) {
      APPS_GEMM_UNROLL
      for (index_t r = 0; r < RM; ++r) d[r] = s[r * a.rs];
    } else {
      for (index_t r = 0; r < RM; ++r) d[r] = u * RM + r < mb ? s[r * a.rs] : T(0);
    }
  }
}

/// Packs B's rows [k0, k0 + kb) x columns [j0, j0 + nb) into panels of RN columns (the
/// b_scratch type), columns past nb as zeros. A row of B is read whole, left to right, and
/// scattered over the panels (reading a panel's RN columns down kb rows instead touches
/// two lines of every row at a 16 KiB stride for n = 2048, which the prefetchers do not
/// follow: packing B took 15% of a 2048^3 dgemm that way). The block's threads share
/// the (k, panel) pairs; one thread (a CPU block) walks them without dividing.
template <class Tiling, class T>
STRATA_FN inline void gemm_pack_b_row(T* __restrict__ d, T const* __restrict__ s, index_t cs,
                                      index_t cols) {
  constexpr index_t RN = Tiling::rn;
  if (cols == RN && cs == 1) {
    APPS_GEMM_SIMD
    for (index_t c = 0; c < RN; ++c) d[c] = s[c];
  } else {
    for (index_t c = 0; c < RN; ++c) d[c] = c < cols ? s[c * cs] : T(0);
  }
}

template <class Tiling, class T>
STRATA_FN inline void gemm_pack_b(T* __restrict__ dst, gemm_operand<T const> const& b, index_t j0,
                                  index_t nb, index_t k0, index_t kb, index_t tid, index_t nt) {
  constexpr index_t RN = Tiling::rn;
  index_t const panels = (nb + RN - 1) / RN;
  auto row = [&](index_t p, index_t v) {
    gemm_pack_b_row<Tiling>(dst + v * Tiling::b_panel + p * Tiling::b_step,
                            b.data + (k0 + p) * b.rs + (j0 + v * RN) * b.cs, b.cs,
                            gemm_min(RN, nb - v * RN));
  };
  if (nt == 1) {
    for (index_t p = 0; p < kb; ++p) {
#if !defined(__CUDA_ARCH__)
      // The row two ahead, asked for line by line: packing ran 12-15% faster than with
      // the hardware prefetchers alone (session 56).
      if (b.cs == 1 && p + 2 < kb) {
        // Every line the row's nb elements touch, from the first one's line on.
        auto const first = reinterpret_cast<std::uintptr_t>(b.data + (k0 + p + 2) * b.rs + j0);
        auto const end = first + static_cast<std::uintptr_t>(nb) * sizeof(T);
        for (std::uintptr_t x = first & ~std::uintptr_t{63}; x < end; x += 64)
          __builtin_prefetch(reinterpret_cast<void const*>(x));
      }
#endif
      for (index_t v = 0; v < panels; ++v) row(p, v);
    }
    return;
  }
  for (index_t q = tid; q < kb * panels; q += nt) row(q / panels, q % panels);
}

}  // namespace detail

/// The kernel: launched on a 2-D grid of 2-D parallel blocks whose shape's elements are
/// each thread's share of C in whole register tiles (gemm.hpp's `gemm_shape`), with
/// `Tiling::scratch_bytes(bm, bn, threads_m)` of scratchpad.
template <class Tiling>
struct gemm_kernel {
  using T = typename Tiling::value_type;

  template <class Self>
  STRATA_FN void operator()(Self const& self, gemm_problem<T> g) const {
    constexpr index_t RM = Tiling::rm, RN = Tiling::rn, KC = Tiling::kc;
    auto const block = self.block();
    strata::vec<2> const threads = self.block_extent(), t = self.thread_index();
    strata::vec<2> const elems = self.element_extent(), b = self.block_index();
    index_t const bm = threads[0] * elems[0], bn = threads[1] * elems[1];
    index_t const i0 = b[0] * bm, j0 = b[1] * bn;
    index_t const mb = detail::gemm_min(bm, g.m - i0), nb = detail::gemm_min(bn, g.n - j0);
    index_t const b_panels = (nb + RN - 1) / RN;
    // The thread's micro-tiles: (t0 + T0 uu, t1 + T1 vv), interleaved over the block (a
    // chunk of it, for a block of one thread).
    index_t const chunk = Tiling::chunk_rows(bm, threads[0]);
    index_t const tiles_m = chunk / threads[0] / RM, tiles_n = elems[1] / RN;
    T* as = block.template scratchpad<T>(static_cast<std::size_t>(chunk / RM * Tiling::a_panel));
    T* bs = block.template scratchpad<T>(static_cast<std::size_t>(bn / RN * Tiling::b_panel));
    index_t const tid = block.linear_index(), nt = block.linear_size();

    // k == 0 still takes one pass: C = beta C.
    for (index_t k0 = 0; k0 == 0 || k0 < g.k; k0 += KC) {
      index_t const kb = detail::gemm_min(KC, g.k - k0);
      detail::gemm_pack_b<Tiling>(bs, g.b, j0, nb, k0, kb, tid, nt);
      for (index_t ic = 0; ic < mb; ic += chunk) {
        index_t const mcb = detail::gemm_min(chunk, mb - ic);
        index_t const a_panels = (mcb + RM - 1) / RM;
        detail::gemm_pack_a<Tiling>(as, g.a, i0 + ic, mcb, k0, kb, tid, nt);
        block.barrier();
        // B panel outside (it stays in L1 while the A panels pass it), A panel inside.
        for (index_t vv = 0; vv < tiles_n; ++vv) {
          index_t const v = t[1] + threads[1] * vv;
          if (v >= b_panels) break;
          for (index_t uu = 0; uu < tiles_m; ++uu) {
            index_t const u = t[0] + threads[0] * uu;
            if (u >= a_panels) break;
            T acc[RM][RN] = {};
            detail::gemm_micro<Tiling>(kb, as + u * Tiling::a_panel, bs + v * Tiling::b_panel, acc);
            detail::gemm_store<Tiling>(g, acc, i0 + ic + u * RM, j0 + v * RN, k0 == 0);
          }
        }
        block.barrier();
      }
    }
  }
};

}  // namespace apps
