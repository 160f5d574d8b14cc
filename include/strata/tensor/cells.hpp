// What a tensor cell is (Ripple §4.2-4.3, §5.2): a plain trivially copyable value, or a
// record of named fields stored AoS, SoA or AoSoA(N) through the layout layer's record
// maps. `tensor<float, 2>` holds floats; `tensor<records<particle, soa>, 2>` holds
// particles with one array per component over each block's padded box. Kernels see the
// same iterator either way: `*it` is a T& for plain cells and a record proxy for records
// (`it->get<position>(0)`, `(*it)[mass{}]`), so one kernel source serves every layout.
#pragma once

#include <strata/config.hpp>
#include <strata/layout/record.hpp>
#include <strata/vec.hpp>

#include <cstddef>
#include <type_traits>

namespace strata {

/// Tensor cells that are records of description D in layout L (aos, soa or aosoa<N>).
template <record_desc D, class L = aos>
struct records {
  using desc = D;
  using layout = L;
};

/// A pointer-like position in a block of records: element `i` of a layout-L store of
/// `pitch` elements at `base`. Arithmetic moves the element index, so the tensor's
/// iterator steps through records as it steps through plain cells.
template <record_desc D, class L>
class record_ptr {
 public:
  using reference = record_ref<D, L>;

  record_ptr() = default;
  STRATA_FN constexpr record_ptr(std::byte* base, index_t i, index_t pitch) noexcept
      : base_(base), i_(i), pitch_(pitch) {}

  STRATA_FN reference operator*() const noexcept { return reference(base_, i_, pitch_); }
  STRATA_FN reference operator[](index_t k) const noexcept {
    return reference(base_, i_ + k, pitch_);
  }
  /// `it->get<F>()`: the proxy behind an arrow.
  struct arrow {
    reference r;
    STRATA_FN reference* operator->() noexcept { return &r; }
  };
  STRATA_FN arrow operator->() const noexcept { return {**this}; }

  STRATA_FN record_ptr operator+(index_t k) const noexcept {
    return record_ptr(base_, i_ + k, pitch_);
  }
  STRATA_FN record_ptr& operator+=(index_t k) noexcept {
    i_ += k;
    return *this;
  }
  STRATA_FN record_ptr& operator++() noexcept {
    ++i_;
    return *this;
  }
  STRATA_FN std::byte* base() const noexcept { return base_; }
  STRATA_FN index_t index() const noexcept { return i_; }
  STRATA_FN index_t pitch() const noexcept { return pitch_; }

 private:
  std::byte* base_ = nullptr;
  index_t i_ = 0;
  index_t pitch_ = 0;
};

/// How a tensor stores cells of type T: `pointer` to a cell, the bytes a box of `count`
/// cells takes, and the first cell of such a box at `storage`.
template <class T>
struct cell_traits {
  static constexpr bool is_record = false;
  using pointer = T*;
  using value_type = std::remove_const_t<T>;
  static constexpr std::size_t alignment = alignof(T);
  static constexpr std::size_t bytes(index_t count) {
    return static_cast<std::size_t>(count) * sizeof(T);
  }
  STRATA_FN static pointer at(void* storage, index_t) noexcept { return static_cast<T*>(storage); }
};

template <record_desc D, class L>
struct cell_traits<records<D, L>> {
  static constexpr bool is_record = true;
  using map = detail::record_map<L, D>;
  using desc = D;
  using layout = L;
  using pointer = record_ptr<D, L>;
  using value_type = record_value<D>;
  // SoA arrays and AoSoA blocks start on cache lines (record.hpp): so must the store.
  static constexpr std::size_t alignment = 64;
  /// The element pitch of a store of `count` cells (SoA: between component arrays).
  static constexpr index_t pitch(index_t count) { return map::pitch_for(count); }
  static constexpr std::size_t bytes(index_t count) { return map::bytes_for(count); }
  STRATA_FN static pointer at(void* storage, index_t count) noexcept {
    return pointer(static_cast<std::byte*>(storage), 0, map::pitch_for(count));
  }
};

template <class T>
inline constexpr bool is_record_cell_v = cell_traits<T>::is_record;

}  // namespace strata
