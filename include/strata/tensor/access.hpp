// Access specifiers of kernels over tensors (Ripple §5.4): how a kernel uses a tensor
// argument's padding (`concurrent_padded_access`, `exclusive_padded_access`, `expanded`,
// `overlapped`, the `in_shared` variants, and `along` to load some dimensions' padding
// only), block iterators (§5.2.2) and values computed at launch (`deferred`). The graph
// splits and `for_each_cell` that take them are in split.hpp.
#pragma once

#include <strata/tensor/tensor.hpp>

#include <concepts>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

namespace strata {

enum class padded_access_mode {
  concurrent,  // load the padding; the kernel reads it (Figure 7)
  exclusive,   // load the padding; the kernel also writes cells its neighbours read (Fig. 9)
  expanded,    // no load: the kernel runs into padding it (or an earlier step) filled
  unpadded     // the padding is not used (in_shared without padding)
};

/// A tensor argument whose padding the kernel reads (Ripple §5.4), and how many cells
/// into the padding the kernel runs (`expand`: 0 for the interior only).
template <class T, std::size_t N>
struct padded_access {
  using tensor_split_tag = void;
  tensor<T, N> t;
  padded_access_mode mode;
  index_t expand = 0;
  bool shared = false;       // staged in block scratch memory (Ripple §5.4.3)
  dim_mask dims = all_dims;  // the dimensions whose padding is loaded

  /// The same access with only the padding along dimensions `d...` loaded: the halo boxes
  /// that lie outside the block in those dimensions only (faces, and the edges and corners
  /// between them) and the domain edges in them; the block's nodes then wait only for the
  /// neighbours in those dimensions. For kernels that read neighbours along some axes, as
  /// the sweeps of a dimensionally split scheme (the shock-bubble solver's x sweep reads
  /// no other device's rows). The rest of the padding keeps whatever it held: a kernel
  /// must not read it.
  template <std::integral... D>
  requires(sizeof...(D) > 0) padded_access along(D... d)
  const {
    if (mode != padded_access_mode::concurrent && mode != padded_access_mode::exclusive)
      throw invalid_argument(
          "along: the access loads no padding (expanded, or in_shared without padding); "
          "expected concurrent or exclusive padded access");
    if (expand != 0)
      throw invalid_argument("along: an overlapped access runs " + std::to_string(expand) +
                             " cells into the padding on every side; expected no expansion");
    padded_access a = *this;
    a.dims = 0;
    for (long long const k : {static_cast<long long>(d)...}) {
      if (k < 0 || k >= static_cast<long long>(N))
        throw invalid_argument("along: dimension " + std::to_string(k) + " of a " +
                               std::to_string(N) + "-D tensor; expected dimensions 0 to " +
                               std::to_string(N - 1));
      a.dims |= dim_mask{1} << k;
    }
    return a;
  }
};

template <class T, std::size_t N>
padded_access<T, N> concurrent_padded_access(tensor<T, N> const& t) {
  return {t, padded_access_mode::concurrent};
}
template <class T, std::size_t N>
padded_access<T, N> exclusive_padded_access(tensor<T, N> const& t) {
  return {t, padded_access_mode::exclusive};
}
/// The kernel runs `n` cells into the padding on every side of each block (the padding's
/// cells are computed, not loaded), so a step can produce the halo the next step reads
/// and several steps share one exchange. Needs padding >= n on every tensor argument. At
/// the domain's edges the extra cells lie outside the domain (global index < 0 or >= the
/// extent); kernels that must not write there test `it.first(d)` / `it.last(d)`.
template <class T, std::size_t N>
padded_access<T, N> expanded(tensor<T, N> const& t, index_t n) {
  return {t, padded_access_mode::expanded, n};
}
/// As `concurrent_padded_access`, and the kernel runs `n` cells into the padding it loaded
/// (overlapping its neighbours' cells): with padding p, one exchange then serves a step
/// that reads 1 cell away and writes an n = p - 1 ring, so the next step needs no
/// exchange (communication-avoiding stencils).
template <class T, std::size_t N>
padded_access<T, N> overlapped(tensor<T, N> const& t, index_t n) {
  return {t, padded_access_mode::concurrent, n};
}

// Shared access (Ripple §5.4.3): the kernel's block of the tensor, with its padding for
// the padded variants, is copied into the block scratch memory (shared memory on a GPU)
// before the kernel runs over it, and its interior copied back after. A kernel over such
// arguments runs as one parallel block per tensor block, so the tensor's blocks must fit
// the scratch memory (choose sub_partitions accordingly).
template <class T, std::size_t N>
padded_access<T, N> in_shared(tensor<T, N> const& t) {
  return {t, padded_access_mode::unpadded, 0, true};
}
template <class T, std::size_t N>
padded_access<T, N> concurrent_padded_access_in_shared(tensor<T, N> const& t) {
  return {t, padded_access_mode::concurrent, 0, true};
}
template <class T, std::size_t N>
padded_access<T, N> exclusive_padded_access_in_shared(tensor<T, N> const& t) {
  return {t, padded_access_mode::exclusive, 0, true};
}

/// A tensor argument whose kernel iterator is a block_iterator (Ripple §5.2.2): the cell
/// and its index in the block, without the global space.
template <class T, std::size_t N>
struct block_access_arg {
  using tensor_split_tag = void;
  tensor<T, N> t;
};
template <class T, std::size_t N>
block_access_arg<T, N> block_access(tensor<T, N> const& t) {
  return {t};
}

/// A kernel argument whose value is computed when each block's kernel is launched, not
/// when the graph is built: the time step that a reduction earlier in the same graph pass
/// found (Ripple's Listing 12: `then_reduce(wavespeeds, max)`, `then(set_dt, ...)`, then
/// the update kernels use dt). `f` runs on the host, once per block launch; its result is
/// passed to every cell like a plain value.
template <class F>
struct deferred_arg {
  F f;
};
template <class F>
requires std::is_invocable_v<F const&> deferred_arg<F> deferred(F f) {
  return {std::move(f)};
}

}  // namespace strata
