// Partitioned arguments of graph `split`s (Ripple §5.3.3): something with a number of
// parts, each a range, and an identity that tells two splits over the same partitioning
// apart from splits over different ones. Ripple's partitioned tensors will model the same
// concept; until they exist, `strata::partitioned` cuts a contiguous range into parts.
#pragma once

#include <strata/error.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace strata {

/// What identifies a partitioning: the memory it covers (base, extent in bytes), the
/// step between elements, the number of parts and how elements map to parts (0 for an
/// even split, else a hash of the map). Two splits depend part by part only when their
/// keys are equal; splits over different keys (overlapping or not) depend on every
/// node before, so a partitioning of the same base with other extents, strides or
/// parts never misses a dependency.
struct partition_key {
  void const* base = nullptr;
  std::size_t extent = 0;
  std::size_t stride = 0;
  std::size_t parts = 0;
  std::uint64_t map = 0;
  friend bool operator==(partition_key const&, partition_key const&) = default;
};

template <class P>
concept partitioned_range = requires(P& p, std::size_t i) {
  { p.parts() } -> std::convertible_to<std::size_t>;
  p.part(i);
  { p.partitioning() } -> std::convertible_to<partition_key>;
};

/// A tensor (or an access specifier over one, Ripple §5.4): the graph's split() of a
/// kernel over it makes one node per block with iterators per cell (strata/tensor.hpp);
/// the tensor layer marks its types with a `tensor_split_tag` member.
template <class A>
concept tensor_argument = requires {
  typename std::remove_cvref_t<A>::tensor_split_tag;
};

/// A contiguous range of T cut into `parts` nearly equal parts (the first `size % parts`
/// parts one element longer). Views, not owners: the data must outlive the graph runs.
template <class T>
class partitioned {
 public:
  partitioned(std::span<T> data, std::size_t parts) : data_(data), parts_(parts) {
    if (parts == 0)
      throw invalid_argument("strata::partitioned: 0 parts requested; expected at least 1");
  }
  partitioned(std::vector<T>& v, std::size_t parts) : partitioned(std::span<T>(v), parts) {}

  std::size_t parts() const noexcept { return parts_; }
  std::span<T> part(std::size_t i) const noexcept {
    auto const base = data_.size() / parts_, extra = data_.size() % parts_;
    auto const begin = i * base + (i < extra ? i : extra);
    return data_.subspan(begin, base + (i < extra ? 1 : 0));
  }
  /// Two partitioned views over the same data (same base and size) with the same number
  /// of parts are the same partitioning: split nodes over them depend part by part.
  partition_key partitioning() const noexcept {
    return {data_.data(), data_.size_bytes(), sizeof(T), parts_, 0};
  }
  std::span<T> data() const noexcept { return data_; }

 private:
  std::span<T> data_;
  std::size_t parts_;
};

template <class T>
partitioned(std::vector<T>&, std::size_t) -> partitioned<T>;

}  // namespace strata
