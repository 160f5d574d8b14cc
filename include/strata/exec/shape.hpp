// The shape of a launch: a grid of blocks of threads, each thread over elements (Alpaka
// §3.2), with the block level's policy known at compile time (Phalanx §III-B domains).
#pragma once

#include <strata/error.hpp>
#include <strata/vec.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace strata {

/// Phalanx's streaming_group: members are independent and may run in any order.
struct streaming_group {};
/// Phalanx's parallel_group: members may barrier() and share a scratchpad, so they must
/// be scheduled to make progress together.
struct parallel_group {};

/// The policies as values: shape.block(strata::parallel, 256).
inline constexpr streaming_group streaming{};
inline constexpr parallel_group parallel{};

template <class P>
concept level_policy = std::same_as<P, streaming_group> || std::same_as<P, parallel_group>;

template <class P>
inline constexpr bool is_parallel_v = std::same_as<P, parallel_group>;

/// The levels of the hierarchy, for messages and generic queries.
enum class level { grid, block, thread };

namespace detail {

inline char const* level_name(int which) noexcept {
  constexpr char const* names[] = {"grid", "block", "elements"};
  return names[which];
}

template <std::size_t D>
void check_extent(vec<D> const& e, int which) {
  for (std::size_t i = 0; i < D; ++i)
    if (e[i] < 1)
      throw invalid_argument("shape: " + std::string(level_name(which)) + " extent " +
                             std::to_string(e[i]) + " in dimension " + std::to_string(i) +
                             " is invalid; expected at least 1");
}

/// Multiplies extents, throwing when the product leaves the index type.
inline index_t checked_mul(index_t a, index_t b, char const* what) {
  index_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw invalid_argument(std::string("shape: ") + what + " overflows the 64-bit index type (" +
                           std::to_string(a) + " x " + std::to_string(b) +
                           "); expected a product below 2^63");
  return r;
}

/// An extent given by the user as an integer of any type, range-checked into index_t.
template <std::integral I>
index_t to_index(I x, int which) {
  if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(index_t)) {
    if (x > static_cast<I>(INT64_MAX))
      throw invalid_argument("shape: " + std::string(level_name(which)) + " extent " +
                             std::to_string(x) + " exceeds the index type's limit of 2^63-1");
  }
  return static_cast<index_t>(x);
}

}  // namespace detail

/// A launch shape: `grid` blocks, `block` threads per block, `elements` per thread, and
/// the bytes of scratchpad each parallel block shares. Built with strata::grid(...).
template <std::size_t D, level_policy BlockPolicy = streaming_group>
class shape {
 public:
  static constexpr std::size_t rank = D;
  using block_policy = BlockPolicy;

  constexpr shape() = default;
  explicit shape(vec<D> grid, vec<D> block = vec<D>::fill(1), vec<D> elements = vec<D>::fill(1),
                 std::size_t scratchpad_bytes = 0)
      : grid_(grid), block_(block), elements_(elements), scratchpad_bytes_(scratchpad_bytes) {
    detail::check_extent(grid_, 0);
    detail::check_extent(block_, 1);
    detail::check_extent(elements_, 2);
    index_t total = 1;
    for (std::size_t i = 0; i < D; ++i)
      total = detail::checked_mul(total, grid_[i], "the grid size");
    for (std::size_t i = 0; i < D; ++i)
      total = detail::checked_mul(total, block_[i], "grid x block");
    for (std::size_t i = 0; i < D; ++i)
      total = detail::checked_mul(total, elements_[i], "grid x block x elements");
  }

  /// Threads per block; the policy stays.
  template <std::integral... I>
  requires(sizeof...(I) == D) shape block(I... b)
  const { return shape(grid_, vec<D>{detail::to_index(b, 1)...}, elements_, scratchpad_bytes_); }
  /// Threads per block that may barrier() and share a scratchpad.
  template <std::integral... I>
  requires(sizeof...(I) == D) shape<D, parallel_group> block(parallel_group, I... b)
  const {
    return shape<D, parallel_group>(grid_, vec<D>{detail::to_index(b, 1)...}, elements_,
                                    scratchpad_bytes_);
  }
  /// Elements per thread (Alpaka's element level: SIMD-friendly inner loops).
  template <std::integral... I>
  requires(sizeof...(I) == D) shape elements(I... e)
  const { return shape(grid_, block_, vec<D>{detail::to_index(e, 2)...}, scratchpad_bytes_); }
  /// Bytes of scratchpad (shared memory) each block gets; parallel blocks only.
  shape scratchpad(std::size_t bytes) const {
    static_assert(is_parallel_v<BlockPolicy>,
                  "scratchpad: only parallel blocks share a scratchpad; build the shape with "
                  ".block(strata::parallel, ...)");
    return shape(grid_, block_, elements_, bytes);
  }

  STRATA_FN constexpr vec<D> const& grid_extent() const noexcept { return grid_; }
  STRATA_FN constexpr vec<D> const& block_extent() const noexcept { return block_; }
  STRATA_FN constexpr vec<D> const& element_extent() const noexcept { return elements_; }
  STRATA_FN constexpr std::size_t scratchpad_bytes() const noexcept { return scratchpad_bytes_; }
  STRATA_FN constexpr index_t blocks() const noexcept { return grid_.product(); }
  STRATA_FN constexpr index_t threads_per_block() const noexcept { return block_.product(); }
  /// Elements covered by the whole launch in each dimension.
  STRATA_FN constexpr vec<D> global_element_extent() const noexcept {
    return grid_ * block_ * elements_;
  }

 private:
  vec<D> grid_ = vec<D>::fill(1);
  vec<D> block_ = vec<D>::fill(1);
  vec<D> elements_ = vec<D>::fill(1);
  std::size_t scratchpad_bytes_ = 0;
};

/// A streaming grid of `g...` blocks of one thread each: strata::grid(n / 256).block(256).
template <std::integral... I>
requires(sizeof...(I) >= 1 && sizeof...(I) <= 3) shape<sizeof...(I)> grid(I... g) {
  return shape<sizeof...(I)>(vec<sizeof...(I)>{detail::to_index(g, 0)...});
}

template <class S>
struct is_shape : std::false_type {};
template <std::size_t D, class P>
struct is_shape<shape<D, P>> : std::true_type {};
template <class S>
concept shape_type = is_shape<std::remove_cvref_t<S>>::value;

}  // namespace strata
