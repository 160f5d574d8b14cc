// The hybrid 2-D stencil scheme (hybrid-2d-stencil-scheme §4, Fig. 2): one grid cut into
// horizontal strips, one per device (host CPUs, sim devices, CUDA GPUs), of heights set by
// the devices' speeds (§8). Every iteration, each strip computes its two frontier rows
// first and its corpus meanwhile; a frontier is copied into the neighbouring strip's
// padding only if it changed (change flags, §4.1); a global flag ends the solve when
// nothing changes (or every change is below a tolerance). Double buffered. The user gives
// the cell update as one kernel source: `T update(in, extra...)` returns the cell's new
// value from an iterator `in` over the current field (and iterators over extra read-only
// tensors of the same strips, or plain values).
#pragma once

#include <strata/task/graph.hpp>
#include <strata/tensor/split.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

template <class T>
struct hybrid_options {
  /// The strips' places, top to bottom (a host place stands for all its PUs).
  std::vector<place> devices;
  /// Where strips 1.. start (devices.size() - 1 rows, increasing); empty: by `weights`.
  std::vector<index_t> cuts;
  /// Relative speeds of the devices (empty: equal). Ignored when `cuts` are given.
  std::vector<double> weights;
  /// The value of every cell outside the grid (Dirichlet boundary; +inf for path costs).
  T boundary{};
  /// Stop once an iteration changes no cell by more than this (0: once nothing changes).
  double tolerance = 0;
  long max_iterations = 1L << 40;
  /// Send a frontier only when it changed (the scheme's point); false sends every one.
  bool skip_unchanged_frontiers = true;
};

/// What a solve did.
struct hybrid_result {
  long iterations = 0;
  bool converged = false;
  double max_change = 0;           // of the last iteration
  std::size_t frontiers_sent = 0;  // frontier copies between strips
  std::size_t frontiers_skipped = 0;
  std::size_t bytes_sent = 0;
  double seconds = 0;
};

namespace tensor_detail {

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
    auto r = self.elements(region);
    bool changed = false;
    double delta = 0;
    for (index_t i = 0; i < r.extent[0]; ++i) {
      vec<2> at{row0 + r.first[0] + i, r.first[1]};
      row(r.extent[1], changed, delta, tensor_iterator<T, 2>(in, at), out.address(at), a.at(at)...);
    }
    if (changed) atomic_max(flags + slot, 1.0);
    if (delta > 0) atomic_max(flags + delta_slot, delta);
  }
  template <class... I>
  STRATA_FN void row(index_t len, bool& changed, double& delta, tensor_iterator<T, 2> in, T* out,
                     I... it) const {
    for (index_t k = 0; k < len; ++k) {
      T const old = *in;
      T const v = call_value(in, it...);
      out[k] = v;
      if (v != old) {
        changed = true;
        if constexpr (std::is_arithmetic_v<T>) {
          double d = static_cast<double>(v) - static_cast<double>(old);
          d = d < 0 ? -d : d;
          if (!(d <= delta)) delta = d;  // also an infinite change
        }
      }
      in.next_in_row();
      (next_in_row(it), ...);
    }
  }
  template <class... I>
  STRATA_FN T call_value(tensor_iterator<T, 2> in, I... it) const {
    return f(in, it...);
  }
};

}  // namespace tensor_detail

/// A 2-D grid of T split into strips over devices, solved by the hybrid scheme.
template <class T>
class hybrid_stencil {
 public:
  hybrid_stencil(vec<2> extent, hybrid_options<T> o) : o_(std::move(o)), extent_(extent) {
    if (o_.devices.empty())
      throw invalid_argument("hybrid_stencil: no devices; expected at least one place");
    auto const n = o_.devices.size();
    if (!o_.cuts.empty()) {
      if (o_.cuts.size() != n - 1)
        throw invalid_argument("hybrid_stencil: " + std::to_string(o_.cuts.size()) +
                               " cut lines for " + std::to_string(n) + " devices; expected " +
                               std::to_string(n - 1));
      index_t prev = 0;
      for (auto c : o_.cuts) {
        if (c <= prev || c >= extent[0])
          throw invalid_argument("hybrid_stencil: cut line " + std::to_string(c) + " outside (" +
                                 std::to_string(prev) + ", " + std::to_string(extent[0]) +
                                 "); expected increasing rows that leave every strip a row");
        prev = c;
      }
    } else if (!o_.weights.empty() && o_.weights.size() != n) {
      throw invalid_argument("hybrid_stencil: " + std::to_string(o_.weights.size()) +
                             " weights for " + std::to_string(n) + " devices; expected one each");
    }
    build();
  }

  /// The strips' tensor layout: make extra tensors (e.g. elevations) with it.
  tensor_spec<2> const& spec() const noexcept { return spec_; }
  std::vector<place> const& devices() const noexcept { return o_.devices; }
  std::vector<index_t> const& cuts() const { return field().cuts(0); }
  /// The current field (after a solve: the result).
  tensor<T, 2> const& field() const noexcept { return buf_[parity_]; }
  hybrid_options<T> const& options() const noexcept { return o_; }

  /// Sets the field from a host array of the grid's extent (row-major), with every
  /// strip's padding (neighbours' rows, the boundary value outside the grid).
  void set(view<T, 2> const& v) {
    for (auto& b : buf_) {
      copy(b, v).wait();
      load_padding(b).wait();
    }
  }
  /// Copies the field into a host view of the grid's extent.
  void get(view<T, 2> const& v) const { copy(v, field()).wait(); }

  /// Re-cuts the strips at `cuts` (rows where strips 1.. start), moving the cells.
  void recut(std::vector<index_t> cuts) {
    auto old = field();
    o_.cuts = std::move(cuts);
    hybrid_stencil next(extent_, o_);  // checks the cuts
    for (auto& b : next.buf_) {
      copy(b, old).wait();
      load_padding(b).wait();
    }
    *this = std::move(next);
  }

  /// Runs `update` over the grid until it converges (or max_iterations).
  template <class F, class... A>
  hybrid_result solve(F update, A const&... extra) {
    return iterate(o_.max_iterations, update, extra...);
  }

  /// At most `iterations` sweeps (fewer if it converges first).
  template <class F, class... A>
  hybrid_result iterate(long iterations, F update, A const&... extra) {
    auto const strips = o_.devices.size();
    (check_extra(extra), ...);
    (load_extra(extra), ...);
    auto st = std::make_shared<shared>();
    st->host_flags.assign(flags_per_strip * strips, 0.0);
    // The first iteration sends every frontier: the buffer it writes may hold padding from
    // an older iteration (an earlier solve, or the other buffer's history).
    st->changed_last.assign(2 * strips, 1);
    for (std::size_t s = 0; s < strips; ++s) fill_flags(s, 0.0).wait();

    graph g;
    std::vector<node_ref> last;
    for (std::size_t s = 0; s < strips; ++s) {
      index_t const h = field().block(s).extent[0];
      auto front = g.add("frontier[" + std::to_string(s) + "]", [this, s, h, update, extra..., st] {
        event top = launch_rows(s, update, 0, 1, flag_top, extra...);
        event bottom = h > 1 ? launch_rows(s, update, h - 1, 1, flag_bottom, extra...) : event();
        return read_flags(after(top, bottom), s, flag_top, 3, st->host_flags);
      });
      auto exchange = g.add("exchange[" + std::to_string(s) + "]",
                            [this, s, st] { return send_frontiers(s, *st); });
      front.precede(exchange);
      last.push_back(exchange);
      if (h > 2) {
        auto corpus =
            g.add("corpus[" + std::to_string(s) + "]", [this, s, h, update, extra..., st] {
              event e = launch_rows(s, update, 1, h - 2, flag_corpus, extra...);
              return read_flags(after(e), s, flag_corpus, 2, st->host_flags);
            });
        last.push_back(corpus);
      }
    }
    auto end = g.add("iteration", [this, st] {
      double delta = 0;
      bool changed = false;
      for (std::size_t s = 0; s < o_.devices.size(); ++s) {
        auto const* f = &st->host_flags[flags_per_strip * s];
        changed = changed || f[flag_top] > 0 || f[flag_bottom] > 0 || f[flag_corpus] > 0;
        delta = std::max({delta, f[flag_top + 2], f[flag_corpus + 1]});
      }
      parity_ = 1 - parity_;
      auto& r = st->result;
      ++r.iterations;
      r.max_change = delta;
      r.converged = o_.tolerance > 0 ? delta <= o_.tolerance : !changed;
      std::vector<event> zero;
      for (std::size_t s = 0; s < o_.devices.size(); ++s) zero.push_back(fill_flags(s, 0.0));
      return when_all(after(zero));
    });
    for (auto& n : last) n.precede(end);
    g.conditional(
        [st, iterations] { return !st->result.converged && st->result.iterations < iterations; });
    auto t0 = std::chrono::steady_clock::now();
    run(g).wait();
    auto& r = st->result;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.frontiers_sent = st->sent;
    r.frontiers_skipped = st->skipped;
    r.bytes_sent = st->bytes;
    return r;
  }

  /// Measures each device alone on its own strip for `iterations` sweeps and returns
  /// their speeds in cells per second (the seed's Table 1), in device order.
  template <class F, class... A>
  std::vector<double> measure_speeds(int iterations, F update, A const&... extra) {
    (check_extra(extra), ...);
    std::vector<double> speeds;
    for (std::size_t s = 0; s < o_.devices.size(); ++s) {
      auto const& blk = field().block(s);
      auto h = blk.extent[0];
      launch_rows(s, update, 0, h, flag_corpus, extra...).wait();  // warm-up
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i)
        launch_rows(s, update, 0, h, flag_corpus, extra...).wait();
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      speeds.push_back(static_cast<double>(h * blk.extent[1]) * iterations / t);
    }
    for (std::size_t s = 0; s < o_.devices.size(); ++s) fill_flags(s, 0.0).wait();
    return speeds;
  }

  /// The cut lines that give each device rows in proportion to `speeds` (§8, "opt. cut").
  std::vector<index_t> cuts_for(std::vector<double> const& speeds) const {
    auto c = tensor_detail::weighted_cuts(extent_[0], speeds, 0);
    return {c.begin() + 1, c.end() - 1};
  }

 private:
  void build() {
    auto const n = o_.devices.size();
    spec_ = tensor_spec<2>{.extent = extent_, .partitions = {n, 1}, .padding = 1};
    if (!o_.cuts.empty()) {
      std::vector<double> heights;
      index_t prev = 0;
      for (auto c : o_.cuts) {
        heights.push_back(static_cast<double>(c - prev));
        prev = c;
      }
      heights.push_back(static_cast<double>(extent_[0] - prev));
      spec_.weights[0] = heights;
    } else if (!o_.weights.empty()) {
      spec_.weights[0] = o_.weights;
    }
    for (auto& b : buf_) {
      b = tensor<T, 2>(o_.devices, spec_);
      set_boundary(b, boundary::constant<T>{o_.boundary});
      fill(b, o_.boundary).wait();
    }
    parity_ = 0;
    flags_.clear();
    for (std::size_t s = 0; s < n; ++s)
      flags_.push_back(tensor<double, 1>(std::vector<place>{o_.devices[s]},
                                         tensor_spec<1>{.extent = {index_t{flags_per_strip}}}));
  }

  template <class A>
  void check_extra(A const& a) const {
    if constexpr (tensor_detail::arg_traits<std::remove_cvref_t<A>>::is_tensor) {
      auto const& t = tensor_detail::arg_traits<std::remove_cvref_t<A>>::get(a);
      if (!t.same_cells(field()))
        throw invalid_argument("hybrid_stencil: an extra tensor of extent " +
                               detail::shape_text(t.extent()) +
                               " is not cut into the stencil's strips; create it with "
                               "spec() and devices()");
    }
  }

  event fill_flags(std::size_t s, double v) { return fill(flags_[s], v); }

  struct shared {
    std::vector<double> host_flags;  // flags_per_strip per strip, as on the devices
    std::vector<char> changed_last;  // 2 per strip: the frontier changed last iteration
    hybrid_result result;
    std::atomic<std::size_t> sent{0}, skipped{0}, bytes{0};
  };

  template <class A>
  void load_extra(A const& a) const {
    if constexpr (tensor_detail::arg_traits<std::remove_cvref_t<A>>::is_tensor)
      load_padding(tensor_detail::arg_traits<std::remove_cvref_t<A>>::get(a)).wait();
  }

  /// Launches update over `rows` rows of strip s from `row0`, raising flag `slot`.
  template <class F, class... A>
  event launch_rows(std::size_t s, F const& update, index_t row0, index_t rows, int slot,
                    A const&... extra) {
    auto const& in = buf_[parity_].block(s);
    auto const& out = buf_[1 - parity_].block(s);
    auto const& where = o_.devices[s];
    vec<2> region{rows, in.extent[1]};
    double* flags = flags_[s].block(0).base;
    return launch(where, divide_work(where, region), tensor_detail::strip_kernel<T, F>{update}, in,
                  out, row0, region, flags, slot,
                  slot == flag_corpus ? flag_corpus + 1 : flag_top + 2,
                  tensor_detail::bind(extra, s)...);
  }

  /// Copies flags [first, first + n) of strip s to the host, after `deps`.
  event read_flags(after const& deps, std::size_t s, index_t first, index_t n,
                   std::vector<double>& host) {
    view<double, 1> dst(ptr<double, host_space>(host.data() + flags_per_strip * s + first, 0),
                        vec<1>{n});
    return tensor_detail::visit_space(flags_[s].space_of(0), [&](auto sp) {
      return copy(deps, dst,
                  flags_[s].template local_view<decltype(sp)>(0, vec<1>{first}, vec<1>{n}));
    });
  }

  /// After strip s's frontier kernels: copies each frontier that changed (this iteration
  /// or the last: the other buffer holds the older value) into the neighbour's padding in
  /// the buffer being written.
  event send_frontiers(std::size_t s, shared& st) {
    auto const& next = buf_[1 - parity_];
    auto const strips = o_.devices.size();
    index_t const h = next.block(s).extent[0], w = next.block(s).extent[1];
    std::vector<event> copies;
    for (int side = 0; side < 2; ++side) {
      bool const has_neighbour = side == 0 ? s > 0 : s + 1 < strips;
      // A one-row strip's only row is both frontiers (its flag is the top one).
      bool const now =
          st.host_flags[flags_per_strip * s + (h == 1 ? 0 : static_cast<std::size_t>(side))] > 0;
      char& before = st.changed_last[2 * s + static_cast<std::size_t>(side)];
      bool const send = !o_.skip_unchanged_frontiers || now || before;
      before = now;
      if (!has_neighbour) continue;
      if (!send) {
        ++st.skipped;
        continue;
      }
      std::size_t const nb = side == 0 ? s - 1 : s + 1;
      index_t const from = side == 0 ? 0 : h - 1;
      index_t const to = side == 0 ? next.block(nb).extent[0] : -1;
      copies.push_back(tensor_detail::copy_box(after{}, next, nb, vec<2>{to, 0}, next, s,
                                               vec<2>{from, 0}, vec<2>{1, w}));
      ++st.sent;
      st.bytes += static_cast<std::size_t>(w) * sizeof(T);
    }
    return when_all(after(copies));
  }

  // Per strip in its device's memory: the frontier kernels' flags (top row changed,
  // bottom row changed, their largest change), then the corpus kernel's (changed, largest).
  static constexpr int flag_top = 0, flag_bottom = 1, flag_corpus = 3;
  static constexpr std::size_t flags_per_strip = 5;

  hybrid_options<T> o_;
  vec<2> extent_;
  tensor_spec<2> spec_;
  tensor<T, 2> buf_[2];
  std::vector<tensor<double, 1>> flags_;
  int parity_ = 0;
};

}  // namespace strata
