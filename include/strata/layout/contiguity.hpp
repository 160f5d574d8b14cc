// Contiguity (PARRAY §5.2 `stp`/`cnt`) and the strided form of a dimension's offsets.
//
// Most types' offsets are affine in the digits of a mixed-radix split of the flat index:
// off(k) = base + sum_j digit_j(k) * stride_j. `linear(d)` finds that form through
// references, displacements and modulo steps when no carry crosses a digit; a type it
// cannot express (a `func`, a cyclic wrap, a reference that straddles digits) reports
// `ok == false` and copies fall back to evaluating offsets one by one. Two forms over the
// same flat index refine into joint axes (`plan_copy`): the innermost axis with unit
// stride on both sides is the maximal contiguous run.
#pragma once

#include <strata/layout/dims.hpp>

#include <utility>

namespace strata {

inline constexpr int max_axes = 24;

struct axis {
  index_t extent;
  index_t stride;
};

/// off(k) = base + sum of digit_j * axes[j].stride, digits row-major (axes[0] outermost).
struct linear_form {
  bool ok = false;
  index_t base = 0;
  int count = 0;
  axis axes[max_axes] = {};
};

namespace detail {

struct slot_list {
  bool ok = true;
  index_t reg_base = 0;
  index_t fix_base = 0;
  int n = 0;
  struct slot {
    index_t extent;
    index_t stride;
    bool regular;
  } v[max_axes] = {};
  constexpr void push(index_t e, index_t s, bool reg) {
    if (e == 1) return;
    if (n == max_axes) {
      ok = false;
      return;
    }
    v[n++] = {e, s, reg};
  }
};

constexpr linear_form node_form(dim_tree const& t, int n);
constexpr linear_form scope_form(dim_tree const& t, int n);

constexpr void contrib_slots(dim_tree const& t, int n, slot_list& out) {
  dim_node const& d = t.nodes[n];
  if (d.chain_len > 0) {
    linear_form f = scope_form(t, n);
    if (!f.ok) {
      out.ok = false;
      return;
    }
    out.fix_base += f.base;
    for (int a = 0; a < f.count; ++a) out.push(f.axes[a].extent, f.axes[a].stride, false);
    return;
  }
  if (d.children == 0) {
    out.push(d.size, d.stride, true);
    return;
  }
  for (int c = d.first_child; c < d.first_child + d.children; ++c) contrib_slots(t, c, out);
}

/// Maps one regular slot (extent e, stride s in the referred dimension's index space) to
/// slots of the referred dimension R (digits n/w/t), without carries between digits.
constexpr bool map_slot(index_t e, index_t s, linear_form const& r, index_t const* w, index_t* acc,
                        slot_list& out) {
  if (s == 0) {
    out.push(e, 0, true);
    return true;
  }
  int i = 0;
  while (i < r.count && w[i] > s) ++i;
  if (i == r.count || s % w[i] != 0) return false;
  index_t q = s / w[i];
  index_t n = r.axes[i].extent;
  if (acc[i] + q * (e - 1) < n) {
    acc[i] += q * (e - 1);
    out.push(e, q * r.axes[i].stride, true);
    return true;
  }
  // The slot spans this digit and more significant ones: split it (upper part first).
  if (q != 1 || acc[i] != 0 || e % n != 0 || i == 0) return false;
  acc[i] = n - 1;
  if (!map_slot(e / n, w[i - 1], r, w, acc, out)) return false;
  out.push(n, r.axes[i].stride, true);
  return true;
}

/// The regular slots (with reg_base) pass through the referred dimension R of size nr.
constexpr void compose(slot_list& sl, linear_form const& r, index_t nr) {
  if (!r.ok) {
    sl.ok = false;
    return;
  }
  index_t w[max_axes] = {};
  for (int i = r.count - 1; i >= 0; --i)
    w[i] = i == r.count - 1 ? 1 : w[i + 1] * r.axes[i + 1].extent;
  index_t b = positive_mod(sl.reg_base, nr);
  index_t maxv = b;
  for (int k = 0; k < sl.n; ++k)
    if (sl.v[k].regular) {
      if (sl.v[k].stride < 0) {
        sl.ok = false;
        return;
      }
      maxv += (sl.v[k].extent - 1) * sl.v[k].stride;
    }
  if (maxv >= nr) {  // the index wraps around R: not affine
    sl.ok = false;
    return;
  }
  index_t acc[max_axes] = {};
  index_t base = r.base;
  for (int i = 0; i < r.count; ++i) {
    acc[i] = (b / w[i]) % r.axes[i].extent;
    base += acc[i] * r.axes[i].stride;
  }
  slot_list out;
  out.fix_base = sl.fix_base;
  for (int k = 0; k < sl.n && out.ok; ++k) {
    auto const& v = sl.v[k];
    if (!v.regular)
      out.push(v.extent, v.stride, false);
    else if (!map_slot(v.extent, v.stride, r, w, acc, out))
      out.ok = false;
  }
  out.reg_base = base;
  sl = out;
}

constexpr linear_form to_form(slot_list const& sl) {
  linear_form f;
  f.ok = sl.ok;
  if (!sl.ok) return f;
  f.base = sl.reg_base + sl.fix_base;
  for (int k = 0; k < sl.n; ++k) {
    axis a{sl.v[k].extent, sl.v[k].stride};
    // Merge with the previous axis when together they are one regular axis.
    if (f.count > 0 && f.axes[f.count - 1].stride == a.stride * a.extent) {
      f.axes[f.count - 1] = {f.axes[f.count - 1].extent * a.extent, a.stride};
      continue;
    }
    f.axes[f.count++] = a;
  }
  return f;
}

/// Applies node d's chain to the regular slots; afterwards every slot is fixed.
constexpr void apply_chain_form(dim_tree const& t, dim_node const& d, slot_list& sl) {
  for (int s = 0; s < d.chain_len && sl.ok; ++s) {
    dim_step const& st = d.chain[s];
    if (st.kind == dim_step::disp) {
      sl.reg_base += st.value;
    } else if (st.kind == dim_step::mod) {
      linear_form m;
      m.ok = true;
      if (st.value > 1) m.axes[m.count++] = {st.value, 1};
      compose(sl, m, st.value);
    } else if (st.kind == dim_step::ref) {
      int r = static_cast<int>(st.value);
      compose(sl, node_form(t, r), t.nodes[r].size);
    } else {
      sl.ok = false;  // a user function has no strided form
    }
  }
  for (int k = 0; k < sl.n; ++k) sl.v[k].regular = false;
  sl.fix_base += sl.reg_base;
  sl.reg_base = 0;
}

constexpr linear_form scope_form(dim_tree const& t, int n) {
  dim_node const& d = t.nodes[n];
  slot_list sl;
  if (d.pure || d.children == 0)
    sl.push(d.size, 1, true);
  else
    for (int c = d.first_child; c < d.first_child + d.children; ++c) contrib_slots(t, c, sl);
  apply_chain_form(t, d, sl);
  return to_form(sl);
}

constexpr linear_form node_form(dim_tree const& t, int n) {
  dim_node const& d = t.nodes[n];
  if (d.chain_len > 0) return scope_form(t, n);
  slot_list sl;
  contrib_slots(t, n, sl);
  if (d.scope >= 0) {
    apply_chain_form(t, t.nodes[d.scope], sl);
    if (!d.lead) sl.fix_base -= apply_chain(t, t.nodes[d.scope], 0);  // as node_offset
  }
  sl.fix_base += sl.reg_base;
  sl.reg_base = 0;
  return to_form(sl);
}

}  // namespace detail

/// The strided form of a dimension's offsets (ok == false when it has none).
constexpr linear_form linear(dimension const& d) {
  return detail::node_form(d.tree(), d.node());
}

/// PARRAY `stp`: the constant gap between consecutive offsets, 0 if there is none.
constexpr index_t stp(dimension const& d) {
  if (d.size() == 1) return 1;
  linear_form f = linear(d);
  if (f.ok) return f.count == 1 ? f.axes[0].stride : 0;
  index_t step = d(1) - d(0);
  for (index_t i = 2; i < d.size(); ++i)
    if (d(i) - d(i - 1) != step) return 0;
  return step;
}
/// PARRAY `cnt`: whether the offsets are consecutive (`stp == 1`).
constexpr bool cnt(dimension const& d) {
  return stp(d) == 1;
}

/// The smallest and the largest offset of a dimension.
constexpr std::pair<index_t, index_t> offset_range(dimension const& d) {
  linear_form f = linear(d);
  if (f.ok) {
    index_t lo = f.base, hi = f.base;
    for (int a = 0; a < f.count; ++a) {
      index_t span = (f.axes[a].extent - 1) * f.axes[a].stride;
      (span < 0 ? lo : hi) += span;
    }
    return {lo, hi};
  }
  index_t lo = d(0), hi = lo;
  for (index_t i = 1; i < d.size(); ++i) {
    index_t o = d(i);
    lo = o < lo ? o : lo;
    hi = o > hi ? o : hi;
  }
  return {lo, hi};
}

/// One axis of a copy: extent, and the strides on the source and the destination.
struct copy_axis {
  index_t extent;
  index_t src;
  index_t dst;
};

/// The joint strided form of a copy dst[B(k)] = src[A(k)] (axes[0] outermost).
struct copy_plan {
  bool ok = false;
  index_t src_base = 0;
  index_t dst_base = 0;
  int count = 0;
  copy_axis axes[max_axes] = {};
  /// Elements per maximal contiguous run (1 when the innermost axis is strided).
  constexpr index_t run() const {
    if (count == 0) return 1;
    auto const& a = axes[count - 1];
    return a.src == 1 && a.dst == 1 ? a.extent : 1;
  }
};

/// Refines two strided forms of equal size into joint axes; not ok when a radix of one
/// does not divide the other's (the copy then goes element by element).
constexpr copy_plan plan_copy(linear_form const& dst, linear_form const& src) {
  copy_plan p;
  if (!dst.ok || !src.ok) return p;
  p.src_base = src.base;
  p.dst_base = dst.base;
  copy_axis rev[max_axes] = {};
  int n = 0;
  int i = dst.count - 1, j = src.count - 1;
  index_t de = i >= 0 ? dst.axes[i].extent : 1, ds = i >= 0 ? dst.axes[i].stride : 0;
  index_t se = j >= 0 ? src.axes[j].extent : 1, ss = j >= 0 ? src.axes[j].stride : 0;
  while (i >= 0 && j >= 0) {
    if (n == max_axes) return p;
    index_t e = de < se ? de : se;
    if ((de > se ? de : se) % e != 0) return p;
    rev[n++] = {e, ss, ds};
    de /= e;
    se /= e;
    ds *= e;
    ss *= e;
    if (de == 1 && --i >= 0) de = dst.axes[i].extent, ds = dst.axes[i].stride;
    if (se == 1 && --j >= 0) se = src.axes[j].extent, ss = src.axes[j].stride;
  }
  if (i >= 0 || j >= 0) return p;  // sizes differ
  for (int k = n - 1; k >= 0; --k) {
    copy_axis a = rev[k];
    if (p.count > 0) {
      copy_axis& o = p.axes[p.count - 1];
      if (o.src == a.src * a.extent && o.dst == a.dst * a.extent) {
        o = {o.extent * a.extent, a.src, a.dst};
        continue;
      }
    }
    p.axes[p.count++] = a;
  }
  p.ok = true;
  return p;
}

}  // namespace strata
