// The hybrid stencil's kernel over a strip's rows (hybrid-2d-stencil-scheme §4.1): the
// user's cell update, and the strip's change flags raised as it goes (whether a cell
// changed, the largest change), reduced branch-free so the row loop vectorizes.
#pragma once

#include <strata/exec/atomic.hpp>
#include <strata/tensor/cell_rows.hpp>
#include <strata/tensor/iterator.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace strata::tensor_detail {

/// Updates rows [row0, row0 + region[0]) of a strip: out = update(in, extra...), and
/// raises the strip's flags: flags[slot] = 1 if a cell changed, flags[delta_slot] = the
/// largest change. Frontier and corpus kernels use slots of their own (hybrid_stencil::
/// flag_*), so each node reads back exactly what its own kernels wrote.
template <class T, class F>
struct strip_kernel {
  F f;
  template <class Self, class... A>
  STRATA_FN void operator()(Self const& self, tensor_block<T, 2> in, tensor_block<T, 2> out,
                            index_t row0, vec<2> region, double* flags, int slot, int delta_slot,
                            A const&... a) const {
    auto r = self.element_chunk(region);
    bool changed = false;
    double delta = 0;
    for (index_t i = 0; i < r.extent[0]; ++i) {
      vec<2> at{row0 + r.first[0] + i, r.first[1]};
      row(r.extent[1], changed, delta, tensor_iterator<T, 2>(in, at), out.address(at), a.at(at)...);
    }
    if (changed) atomic_max(flags + slot, 1.0);
    // atomic_max skips a NaN (every comparison with it is false); exchanged in, it stays,
    // as every later atomic_max then compares with the NaN.
    if (delta != delta)
      atomic_exchange(flags + delta_slot, delta);
    else if (delta > 0)
      atomic_max(flags + delta_slot, delta);
  }
  template <class... I>
  STRATA_FN void row(index_t len, bool& changed, double& delta, tensor_iterator<T, 2> in,
                     T* __restrict__ out, I... it) const {
    if constexpr (std::is_arithmetic_v<T>) {
      // A branch per cell on "did it change" kept this loop scalar (0.85 of an OpenMP
      // Jacobi that reduces its change with `omp simd`): the change is reduced branch-free
      // instead (change_bits), and `out` is restrict (the other buffer), so it vectorizes.
      std::uint64_t top = 0;
      for (index_t k = 0; k < len; ++k) {
        T const old = *in;
        T const v = call_value(in, it...);
        out[k] = v;
        std::uint64_t const bits = change_bits(old, v);
        top = bits > top ? bits : top;
        in.next_in_row();
        (next_in_row(it), ...);
      }
      add_change(top, changed, delta);
    } else {
      for (index_t k = 0; k < len; ++k) {  // cells with no order: changed or not
        T const old = *in;
        T const v = call_value(in, it...);
        out[k] = v;
        if (v != old) changed = true;
        in.next_in_row();
        (next_in_row(it), ...);
      }
    }
  }
  /// A cell's change as an integer: the bits of |v - old|, 0 where v == old (also
  /// infinity to infinity, whose difference is NaN). Non-negative doubles' bits order like
  /// their values and a NaN's lie above infinity's, so the largest change is an integer
  /// max reduction, which vectorizes without -ffast-math (a double one does not). A cell
  /// that changed counts at least 1 (the smallest subnormal) where the difference rounds
  /// to 0 in double (integers above 2^53, subnormals flushed to zero), so "changed" is
  /// exactly "some v != old".
  STRATA_FN static std::uint64_t change_bits(T old, T v) {
    double const d = std::fabs(static_cast<double>(v) - static_cast<double>(old));
    std::uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    bits |= static_cast<std::uint64_t>(bits == 0);
    return bits & -static_cast<std::uint64_t>(v != old);
  }
  /// Folds a row's largest change_bits into the thread's flags (a NaN change stays).
  STRATA_FN static void add_change(std::uint64_t top, bool& changed, double& delta) {
    if (top == 0) return;
    changed = true;
    double d;
    std::memcpy(&d, &top, sizeof d);
    if (delta == delta && !(d <= delta)) delta = d;
  }
  template <class... I>
  STRATA_FN T call_value(tensor_iterator<T, 2> in, I... it) const {
    return f(in, it...);
  }
};

}  // namespace strata::tensor_detail
