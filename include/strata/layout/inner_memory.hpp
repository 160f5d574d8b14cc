// Inner memory types (PARRAY §2.1: smem, rmem, vmem; §4.1 tiling; Listing 43): memory a
// kernel gets automatically rather than by allocation — a parallel block's shared
// scratchpad (`smem`, CUDA __shared__), a thread's private array (`rmem`, registers), a
// thread's vector registers (`vmem`). Array types in these spaces lay out tiles that
// load_tile/itile fill from outer memory:
//
//   PARRAY (Listing 43)                      Strata
//   parray smem float [32][17] S             array_type<float, smem_space> S{32, 17};
//   parray rmem float [16][2] R              array_type<float, rmem_space> R{16, 2};
//   create S s, R r   (inside `for CUDA`)    auto s = create_shared(block, S);
//                                            private_array<float, 32> r(R);
//
// `create_shared` takes the next piece of the block's scratchpad (every thread of the
// block makes the same calls in the same order, so all get the same array). A private
// array's storage is a plain C++ array of N elements in the thread (registers when the
// compiler can keep it there: give it a type with compile-time extents, static_dims).
// These spaces cannot be allocated on the host (allocate refuses them at compile time).
#pragma once

#include <strata/layout/array_type.hpp>

#include <cstddef>

namespace strata {

/// A parallel block's shared scratchpad (PARRAY `smem`).
struct smem_space {
  static constexpr space_id id = space_id::host;  // only kernel code on a CPU or GPU sees it
  static constexpr bool host_accessible = true;
  static constexpr std::size_t row_alignment = 16;
  static constexpr bool automatic = true;
};
/// A thread's private memory (PARRAY `rmem`: the register file of a CUDA thread).
struct rmem_space {
  static constexpr space_id id = space_id::host;
  static constexpr bool host_accessible = true;
  static constexpr std::size_t row_alignment = 1;
  static constexpr bool automatic = true;
};
/// A thread's vector registers (PARRAY `vmem`): a private array aligned for SIMD loads.
struct vmem_space {
  static constexpr space_id id = space_id::host;
  static constexpr bool host_accessible = true;
  static constexpr std::size_t row_alignment = 64;
  static constexpr bool automatic = true;
};

/// PARRAY `create S s` for a scratchpad type, inside a parallel block: the array over the
/// next piece of the block's scratchpad (the type's whole offset span; the shape must
/// provide the bytes).
template <class Block, class T>
STRATA_FN array_view<T, smem_space> create_shared(Block const& block,
                                                  array_type<T, smem_space> const& type) {
  auto const span = type.offset_range();
  detail::layout_check(span.first >= 0, "smem array type's first offset (expected from 0)",
                       span.first, 1);
  T* p = block.template scratchpad<T>(static_cast<std::size_t>(span.second + 1));
  return array_view<T, smem_space>(ptr<T, smem_space>(p, 0), type);
}

/// PARRAY `create R r` for a private type: N elements of storage in the calling thread,
/// laid out by `type` (whose offsets must lie in [0, N)).
template <class T, std::size_t N, class Space = rmem_space>
class private_array {
  static_assert(std::is_same_v<Space, rmem_space> || std::is_same_v<Space, vmem_space>,
                "private_array: expected rmem_space or vmem_space");

 public:
  STRATA_FN explicit private_array(array_type<T, Space> const& type) : type_(type) {
    auto const span = type.offset_range();
    detail::layout_check(span.first >= 0 && span.second < static_cast<index_t>(N),
                         "private array type's last offset (expected below the storage's N)",
                         span.second, static_cast<index_t>(N));
  }
  /// A temporary type is refused: the array keeps a reference to its type (a copy would put
  /// the type's whole tree, kilobytes, in every thread's private storage), which would
  /// dangle after the full-expression. Name the type first, as PARRAY's `create R r` does.
  explicit private_array(array_type<T, Space> const&& type) = delete;
  template <class... I>
  STRATA_FN T& operator()(I... i) {
    return data_[type_(static_cast<index_t>(i)...)];
  }
  template <class... I>
  STRATA_FN T const& operator()(I... i) const {
    return data_[type_(static_cast<index_t>(i)...)];
  }
  STRATA_FN T* data() { return data_; }
  STRATA_FN array_type<T, Space> const& type() const { return type_; }
  /// Every element set to v (registers start uninitialized, like any local).
  STRATA_FN void fill(T const& v) {
    for (std::size_t k = 0; k < N; ++k) data_[k] = v;
  }

 private:
  alignas(Space::row_alignment > alignof(T) ? Space::row_alignment : alignof(T)) T data_[N];
  array_type<T, Space> const& type_;
};

}  // namespace strata
