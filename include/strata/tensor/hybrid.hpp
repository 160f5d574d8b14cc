// The hybrid 2-D stencil scheme (hybrid-2d-stencil-scheme §4, Fig. 2): one grid cut into
// horizontal strips, one per device (host CPUs, sim devices, CUDA GPUs), of heights set by
// the devices' speeds (§8). Every iteration, each strip computes its two frontier rows
// first and its corpus meanwhile; a frontier is copied into the neighbouring strip's
// padding only if it changed (change flags, §4.1); a global flag ends the solve when
// nothing changes (or every change is below a tolerance). Double buffered. The user gives
// the cell update as one kernel source: `T update(in, extra...)` returns the cell's new
// value from an iterator `in` over the current field (and iterators over extra read-only
// tensors of the same strips, or plain values). With `rebalance`, rows move between
// neighbouring strips during a solve when the strips' measured times diverge (§9's future
// work: dynamic load balancing by re-partitioning).
#pragma once

#include <strata/exec/atomic.hpp>
#include <strata/task/graph.hpp>
#include <strata/tensor/rebalance.hpp>
#include <strata/tensor/split.hpp>
#include <strata/tensor/strip_kernel.hpp>
#include <strata/tensor/strips.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

namespace tensor_detail {
/// An extra tensor as a solve holds it: the caller's when cut as the stencil, else a copy
/// in the stencil's strips, kept in a strip store so that later re-partitions move only
/// the rows that change strips (record cells: copied afresh each time).
template <class U>
struct held_tensor {
  tensor<U, 2> t;
  std::shared_ptr<strip_store<U>> store;
};
template <class A>
inline constexpr bool is_held_tensor = false;
template <class U>
inline constexpr bool is_held_tensor<held_tensor<U>> = true;

}  // namespace tensor_detail

/// What the solve reports after every iteration (hybrid_options::on_iteration).
struct hybrid_progress {
  long iteration = 0;  // 1 for the first sweep of the solve
  double seconds = 0;  // wall time of this iteration
  /// Per strip: how long its device was busy with its kernels (the union of each kernel's
  /// span, from when it could start to its end).
  std::vector<double> strip_seconds;
  std::vector<index_t> cuts;  // the strips' rows: strips + 1 values, 0 .. rows
};

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
  /// Queue each strip's next corpus kernel on its device as soon as the strip's own
  /// kernels of this iteration are queued, to start when they end (§5-6: the corpus in a
  /// stream of its own), so a device does not idle while the iteration's flags travel,
  /// the frontiers are exchanged and the convergence test runs. A corpus so started for
  /// an iteration that does not happen (the solve converged, or stops to re-partition) is
  /// waited for and dropped, its errors with it. After an error the field may hold some
  /// strips' corpus rows of the next iteration (set it again before solving on); false:
  /// every kernel of an iteration is launched after the iteration before has ended
  /// everywhere, and after an error the field is the last iteration that ended.
  bool early_corpus = true;
  /// Dynamic re-partitioning (§9): every `rebalance_every` iterations the strips' times
  /// (their kernels, averaged over those iterations, the first after a cut not counted)
  /// are compared; when the slowest exceeds the fastest by more than `rebalance_threshold`
  /// (a fraction), the cut lines move so that each strip's rows follow its measured speed
  /// (rows per second), the rows going with their data to the neighbouring strip, and the
  /// solve goes on from the same field (rebalanced_cuts gives the new lines). After the
  /// first move, a move is made only when the time it is predicted to save over a window
  /// exceeds what the last move took (so timing noise on a busy machine does not buy
  /// moves that cost more than they gain); while an imbalance does not pay yet, its
  /// window keeps growing, so a lasting one moves the lines once it has cost a move.
  bool rebalance = false;
  long rebalance_every = 8;
  double rebalance_threshold = 0.15;
  /// How far the lines move towards the measured optimum per re-partition (0..1); moves
  /// of less than rows / 256 (at least one row) are not made.
  double rebalance_damping = 0.5;
  /// Rows of room each strip keeps above and below it in its device's memory, so that a
  /// re-partition copies only the rows that change strips (a strip that outgrows its room
  /// is moved once into a new allocation). -1: rows / 16 (at least 4) with `rebalance`
  /// and two or more devices, else 0.
  index_t spare_rows = -1;
  /// Called after every iteration, from the graph's last node (a place to watch the cuts,
  /// or to change a sim device's speed mid-run). An exception from it ends the solve.
  std::function<void(hybrid_progress const&)> on_iteration;
};

/// What a solve did.
struct hybrid_result {
  long iterations = 0;
  bool converged = false;
  double max_change = 0;           // of the last iteration
  std::size_t frontiers_sent = 0;  // frontier copies between strips
  std::size_t frontiers_skipped = 0;
  std::size_t bytes_sent = 0;
  long repartitions = 0;   // dynamic re-partitions during the solve
  index_t rows_moved = 0;  // rows that changed strips in them
  double seconds = 0;
};

/// A 2-D grid of T split into strips over devices, solved by the hybrid scheme.
template <class T>
class hybrid_stencil {
 public:
  hybrid_stencil(vec<2> extent, hybrid_options<T> o) : o_(std::move(o)), extent_(extent) {
    if (o_.devices.empty())
      throw invalid_argument("hybrid_stencil: no devices; expected at least one place");
    auto const n = o_.devices.size();
    if (!o_.cuts.empty()) {
      check_cuts(o_.cuts);
    } else if (!o_.weights.empty() && o_.weights.size() != n) {
      throw invalid_argument("hybrid_stencil: " + std::to_string(o_.weights.size()) +
                             " weights for " + std::to_string(n) + " devices; expected one each");
    }
    if (!(o_.tolerance >= 0) || std::isinf(o_.tolerance))
      throw invalid_argument("hybrid_stencil: tolerance " + std::to_string(o_.tolerance) +
                             "; expected a finite change >= 0 (0: until nothing changes)");
    if (o_.rebalance_every < 1)
      throw invalid_argument("hybrid_stencil: rebalance_every " +
                             std::to_string(o_.rebalance_every) +
                             "; expected 1 or more iterations between re-partitions");
    tensor_detail::check_rebalance(o_.rebalance_threshold, o_.rebalance_damping);
    if (o_.spare_rows < -1)
      throw invalid_argument("hybrid_stencil: spare_rows " + std::to_string(o_.spare_rows) +
                             "; expected rows >= 0, or -1 for the default");
    build();
  }

  /// The strips' tensor layout: make extra tensors (e.g. elevations) with it.
  tensor_spec<2> const& spec() const noexcept { return spec_; }
  std::vector<place> const& devices() const noexcept { return o_.devices; }
  std::vector<index_t> const& cuts() const { return field().cuts(0); }
  /// The current field (after a solve: the result).
  tensor<T, 2> const& field() const noexcept { return buf_[parity_].get(); }
  hybrid_options<T> const& options() const noexcept { return o_; }

  /// Sets the field from a host array of the grid's extent (row-major), with every
  /// strip's padding (neighbours' rows, the boundary value outside the grid).
  void set(view<T, 2> const& v) {
    for (auto& store : buf_) {
      auto const& b = store.get();
      copy(b, v).wait();
      load_padding(b).wait();
    }
  }
  /// Copies the field into a host view of the grid's extent.
  void get(view<T, 2> const& v) const { copy(v, field()).wait(); }

  /// Re-cuts the strips at `cuts` (rows where strips 1.. start), moving the cells: only
  /// the rows that change strips are copied (from the strip that held them), both buffers,
  /// with the padding rows between strips. Both buffers change, or (on an error) neither.
  void recut(std::vector<index_t> cuts) {
    check_cuts(cuts);
    auto const moving = std::chrono::steady_clock::now();
    std::vector<index_t> full{0};
    full.insert(full.end(), cuts.begin(), cuts.end());
    full.push_back(extent_[0]);
    typename tensor_detail::strip_store<T>::prepared next[2];
    for (int b = 0; b < 2; ++b) {
      next[b] = buf_[b].prepare(full, true);
      set_boundary(next[b].t, boundary::constant<T>{o_.boundary});
    }
    for (int b = 0; b < 2; ++b) buf_[b].commit(std::move(next[b]));
    o_.cuts = std::move(cuts);
    spec_.weights[0].clear();
    for (std::size_t s = 0; s + 1 < full.size(); ++s)
      spec_.weights[0].push_back(static_cast<double>(full[s + 1] - full[s]));
    last_move_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - moving).count();
  }

  /// Runs `update` over the grid until it converges (or max_iterations).
  template <class F, class... A>
  hybrid_result solve(F update, A const&... extra) {
    if (o_.max_iterations < 0)
      throw invalid_argument("hybrid_stencil: max_iterations " + std::to_string(o_.max_iterations) +
                             "; expected 0 or more sweeps");
    return iterate(o_.max_iterations, update, extra...);
  }

  /// At most `iterations` sweeps (fewer if it converges first).
  template <class F, class... A>
  hybrid_result iterate(long iterations, F update, A const&... extra) {
    if (iterations < 0)
      throw invalid_argument("hybrid_stencil::iterate: " + std::to_string(iterations) +
                             " sweeps; expected 0 or more");
    (check_extra(extra), ...);
    // No sweep at all: a pass always runs one (its convergence test follows the sweep).
    if (iterations == 0) return {};
    auto t0 = std::chrono::steady_clock::now();
    // The extra tensors as held for this solve: the caller's, or copies cut into the
    // stencil's strips (after a re-partition, or when made with another spec).
    auto held = std::make_tuple(hold_extra(extra)...);
    hybrid_result total;
    // The first iteration after a re-partition is timed from the end of the one before,
    // so on_iteration's seconds include the move.
    auto iteration_start = std::chrono::steady_clock::now();
    for (;;) {
      auto st = std::apply(
          [&](auto const&... a) {
            return run_pass(iterations - total.iterations, total.iterations, iteration_start,
                            update, unhold(a)...);
          },
          held);
      iteration_start = st->iteration_start;
      auto const& r = st->result;
      total.iterations += r.iterations;
      total.converged = r.converged;
      total.max_change = r.max_change;
      total.frontiers_sent += st->sent;
      total.frontiers_skipped += st->skipped;
      total.bytes_sent += st->bytes;
      if (r.converged || total.iterations >= iterations || st->next_cuts.empty()) break;
      // §9: the strips' times diverged; move rows to the neighbouring strips, with their
      // data, and go on from the same field.
      auto const& old = cuts();
      for (std::size_t k = 1; k + 1 < old.size(); ++k)
        total.rows_moved += std::abs(st->next_cuts[k] - old[k]);
      recut({st->next_cuts.begin() + 1, st->next_cuts.end() - 1});
      std::apply([&](auto&... a) { (recut_extra(a), ...); }, held);
      ++total.repartitions;
    }
    total.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return total;
  }

  /// Measures each device alone on its own strip for `iterations` sweeps and returns
  /// their speeds in cells per second (the seed's Table 1), in device order.
  template <class F, class... A>
  std::vector<double> measure_speeds(int iterations, F update, A const&... extra) {
    if (iterations < 1)
      throw invalid_argument("hybrid_stencil::measure_speeds: " + std::to_string(iterations) +
                             " sweeps; expected 1 or more to time");
    (check_extra(extra), ...);
    auto held = std::make_tuple(hold_extra(extra)...);
    std::vector<double> speeds;
    for (std::size_t s = 0; s < o_.devices.size(); ++s) {
      auto const& blk = field().block(s);
      auto h = blk.extent[0];
      auto sweep = [&] {
        std::apply(
            [&](auto const&... a) {
              return launch_rows(after{}, parity_, s, update, 0, h, flag_corpus, unhold(a)...);
            },
            held)
            .wait();
      };
      sweep();  // warm-up
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iterations; ++i) sweep();
      double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      speeds.push_back(static_cast<double>(h * blk.extent[1]) * iterations / t);
    }
    for (std::size_t s = 0; s < o_.devices.size(); ++s) fill_flags(s, 0.0).wait();
    return speeds;
  }

  /// The cut lines that give each device rows in proportion to `speeds` (§8, "opt. cut").
  std::vector<index_t> cuts_for(std::vector<double> const& speeds) const {
    if (speeds.size() != o_.devices.size())
      throw invalid_argument("hybrid_stencil::cuts_for: " + std::to_string(speeds.size()) +
                             " speeds; expected one per device (" +
                             std::to_string(o_.devices.size()) + ")");
    auto c = tensor_detail::weighted_cuts(extent_[0], speeds, 0);
    return {c.begin() + 1, c.end() - 1};
  }

 private:
  /// Cut lines for strips 1.. : one per device but the first, increasing, inside the grid.
  void check_cuts(std::vector<index_t> const& cuts) const {
    auto const n = o_.devices.size();
    if (cuts.size() != n - 1)
      throw invalid_argument("hybrid_stencil: " + std::to_string(cuts.size()) + " cut lines for " +
                             std::to_string(n) + " devices; expected " + std::to_string(n - 1));
    index_t prev = 0;
    for (auto c : cuts) {
      if (c <= prev || c >= extent_[0])
        throw invalid_argument("hybrid_stencil: cut line " + std::to_string(c) + " outside (" +
                               std::to_string(prev) + ", " + std::to_string(extent_[0]) +
                               "); expected increasing rows that leave every strip a row");
      prev = c;
    }
  }

  index_t spare_rows() const {
    if (o_.spare_rows >= 0) return o_.spare_rows;
    return o_.rebalance && o_.devices.size() > 1 ? std::max<index_t>(4, extent_[0] / 16) : 0;
  }

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
    for (auto& store : buf_) {
      store = tensor_detail::strip_store<T>(o_.devices, spec_, spare_rows());
      set_boundary(store.get(), boundary::constant<T>{o_.boundary});
      fill(store.get(), o_.boundary).wait();
    }
    parity_ = 0;
    flags_.clear();
    for (std::size_t s = 0; s < n; ++s)
      flags_.push_back(tensor<double, 1>(std::vector<place>{o_.devices[s]},
                                         tensor_spec<1>{.extent = {2 * flags_per_set}}));
  }

  template <class A>
  void check_extra(A const& a) const {
    if constexpr (tensor_detail::arg_traits<std::remove_cvref_t<A>>::is_tensor) {
      auto const& t = tensor_detail::arg_traits<std::remove_cvref_t<A>>::get(a);
      if (!(t.extent() == extent_) || t.padding() < spec_.padding)
        throw invalid_argument(
            "hybrid_stencil: an extra tensor of extent " + detail::shape_text(t.extent()) +
            " and padding " + std::to_string(t.padding()) + " for a grid of " +
            detail::shape_text(extent_) +
            "; expected the grid's extent and "
            "padding >= " +
            std::to_string(spec_.padding) + " (create it with spec() and devices())");
    }
  }

  event fill_flags(std::size_t s, double v) { return fill(flags_[s], v); }
  /// Zeroes strip s's flag set `set` (0 or 1) by a copy from the host: on a device a fill
  /// would be a kernel, queued behind the strip's next corpus when that started early.
  event zero_flags(std::size_t s, int set) {
    view<double, 1> src(ptr<double, host_space>(zeros_.data(), 0), vec<1>{flags_per_set});
    return tensor_detail::visit_space(flags_[s].space_of(0), [&](auto sp) {
      return copy(flags_[s].template local_view<decltype(sp)>(0, vec<1>{set * flags_per_set},
                                                              vec<1>{flags_per_set}),
                  src);
    });
  }

  /// When a strip's kernels of one iteration could start and when they ended (ns on the
  /// steady clock): its frontiers' launch and last end, its corpus's launch and end.
  struct strip_clock {
    std::atomic<long long> front_start, front_end, corpus_start, corpus_end;
    void reset() {
      for (auto* a : {&front_start, &corpus_start})
        a->store(std::numeric_limits<long long>::max(), std::memory_order_relaxed);
      for (auto* a : {&front_end, &corpus_end}) a->store(0, std::memory_order_relaxed);
    }
  };

  struct shared {
    explicit shared(std::size_t strips)
        : host_flags(static_cast<std::size_t>(flags_per_set) * strips, 0.0),
          changed_last(2 * strips, 1),
          clocks(new strip_clock[2 * strips]),
          last_end(strips, 0),
          kernels_queued(new std::atomic<int>[strips]),
          front(strips),
          corpus(strips),
          pending(strips),
          has_pending(strips, 0),
          window(strips, 0.0) {
      for (std::size_t k = 0; k < 2 * strips; ++k) clocks[k].reset();
      for (std::size_t k = 0; k < strips; ++k) kernels_queued[k].store(0);
    }
    std::vector<double> host_flags;  // flags_per_set per strip, as on the devices
    std::vector<char> changed_last;  // 2 per strip: the frontier changed last iteration
    hybrid_result result;
    std::atomic<std::size_t> sent{0}, skipped{0}, bytes{0};
    // Per strip and flag set (the iteration's input buffer), the kernels' times, and per
    // strip the end of its last measured iteration: what the dynamic re-partition compares.
    std::unique_ptr<strip_clock[]> clocks;
    std::vector<long long> last_end;
    // Per strip, this iteration: how many of its frontier and corpus nodes have queued
    // their kernels (the second starts the next corpus early).
    std::unique_ptr<std::atomic<int>[]> kernels_queued;
    // Per strip, this iteration: its frontier kernels and its corpus kernel; the next
    // iteration's corpus when it was started early (has_pending).
    std::vector<event> front, corpus, pending;
    std::vector<char> has_pending;
    std::vector<double> window;  // strip seconds summed over the measured iterations
    long measured = 0;
    std::chrono::steady_clock::time_point iteration_start = std::chrono::steady_clock::now();
    std::vector<index_t> next_cuts;  // set when the pass stopped to re-partition
  };

  static long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  static void record_min(std::atomic<long long>& a, long long v) {
    for (long long cur = a.load(std::memory_order_relaxed);
         v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed);) {
    }
  }
  static void record_max(std::atomic<long long>& a, long long v) {
    for (long long cur = a.load(std::memory_order_relaxed);
         v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed);) {
    }
  }
  /// A kernel `e` of strip s launched at `launched`, its times kept in `start` and `end`;
  /// its end is stamped when it completes (continuations run in order, so before the flag
  /// read-back that follows it).
  static event timed(event e, std::shared_ptr<shared> const& st, std::atomic<long long>& start,
                     std::atomic<long long>& end, long long launched) {
    record_min(start, launched);
    e.then([st, &end] { record_max(end, now_ns()); });
    return e;
  }
  /// How long strip s's device was busy with the iteration of flag set `set`: the union
  /// of its frontiers' and its corpus's spans, a corpus started early counted from the end
  /// of the strip's iteration before (it could not start sooner). Resets the set's clock.
  static double busy_seconds(shared& st, std::size_t s, int set, bool has_corpus) {
    auto& c = st.clocks[2 * s + static_cast<std::size_t>(set)];
    long long const f0 = c.front_start.load(std::memory_order_relaxed),
                    f1 = c.front_end.load(std::memory_order_relaxed),
                    c0 = c.corpus_start.load(std::memory_order_relaxed),
                    c1 = c.corpus_end.load(std::memory_order_relaxed);
    long long const busy = tensor_detail::strip_busy_ns(f0, f1, has_corpus, c0, c1, st.last_end[s]);
    st.last_end[s] = has_corpus ? std::max(f1, c1) : f1;
    c.reset();
    return 1e-9 * static_cast<double>(busy);
  }

  /// Called by strip s's frontier and corpus nodes once each has its kernels' event: the
  /// second (an acq_rel count orders the first's event before it) queues the strip's next
  /// corpus after both (early_corpus). It reads only this strip's rows of this iteration,
  /// so it waits for nothing else and starts as soon as they are written.
  template <class F, class... A>
  void queued(std::shared_ptr<shared> const& st, std::size_t s, long limit, F const& update,
              A const&... extra) {
    if (!o_.early_corpus || st->kernels_queued[s].fetch_add(1, std::memory_order_acq_rel) != 1)
      return;
    if (st->result.iterations + 1 >= limit) return;  // no iteration after this one
    int const in = 1 - parity_;
    index_t const h = field().block(s).extent[0];
    auto& c = st->clocks[2 * s + static_cast<std::size_t>(in)];
    st->pending[s] = timed(launch_rows(after(st->front[s], st->corpus[s]), in, s, update, 1, h - 2,
                                       flag_corpus, extra...),
                           st, c.corpus_start, c.corpus_end, now_ns());
    st->has_pending[s] = 1;
  }

  /// Sweeps until convergence, `limit` sweeps, or (with rebalance) a re-partition is due
  /// (then next_cuts holds the new lines). One graph pass per sweep (Fig. 2).
  template <class F, class... A>
  std::shared_ptr<shared> run_pass(long limit, long done_before,
                                   std::chrono::steady_clock::time_point start, F const& update,
                                   A const&... extra) {
    auto const strips = o_.devices.size();
    auto st = std::make_shared<shared>(strips);
    // The first iteration sends every frontier (changed_last starts at 1): the buffer it
    // writes may hold padding from an older iteration (an earlier solve or pass, or the
    // other buffer's history).
    for (std::size_t s = 0; s < strips; ++s) fill_flags(s, 0.0).wait();

    graph g;
    std::vector<node_ref> last;
    for (std::size_t s = 0; s < strips; ++s) {
      index_t const h = field().block(s).extent[0];
      auto front =
          g.add("frontier[" + std::to_string(s) + "]", [this, s, h, limit, update, extra..., st] {
            auto& c = st->clocks[2 * s + static_cast<std::size_t>(parity_)];
            auto const t = now_ns();
            event top = timed(launch_rows(after{}, parity_, s, update, 0, 1, flag_top, extra...),
                              st, c.front_start, c.front_end, t);
            event bottom = h > 1 ? timed(launch_rows(after{}, parity_, s, update, h - 1, 1,
                                                     flag_bottom, extra...),
                                         st, c.front_start, c.front_end, t)
                                 : event();
            st->front[s] = when_all(after(top, bottom));
            if (h > 2) queued(st, s, limit, update, extra...);
            return read_flags(after(st->front[s]), s, flag_top, 3, st->host_flags);
          });
      auto exchange = g.add("exchange[" + std::to_string(s) + "]",
                            [this, s, st] { return send_frontiers(s, *st); });
      front.precede(exchange);
      last.push_back(exchange);
      if (h > 2) {
        auto corpus =
            g.add("corpus[" + std::to_string(s) + "]", [this, s, h, limit, update, extra..., st] {
              if (st->has_pending[s]) {  // started by the iteration before
                st->has_pending[s] = 0;
                st->corpus[s] = std::move(st->pending[s]);
              } else {
                auto& c = st->clocks[2 * s + static_cast<std::size_t>(parity_)];
                st->corpus[s] =
                    timed(launch_rows(after{}, parity_, s, update, 1, h - 2, flag_corpus, extra...),
                          st, c.corpus_start, c.corpus_end, now_ns());
              }
              queued(st, s, limit, update, extra...);
              return read_flags(after(st->corpus[s]), s, flag_corpus, 2, st->host_flags);
            });
        last.push_back(corpus);
      }
    }
    auto end = g.add("iteration", [this, st, done_before] {
      double delta = 0;
      bool changed = false;
      auto const n = o_.devices.size();
      std::vector<double> times(n);
      for (std::size_t s = 0; s < n; ++s) {
        auto const* f = &st->host_flags[static_cast<std::size_t>(flags_per_set) * s];
        changed = changed || f[flag_top] > 0 || f[flag_bottom] > 0 || f[flag_corpus] > 0;
        for (double d : {f[flag_top + 2], f[flag_corpus + 1]})
          if (delta == delta && !(d <= delta)) delta = d;  // a NaN change wins and stays
        times[s] = busy_seconds(*st, s, parity_, field().block(s).extent[0] > 2);
        st->kernels_queued[s].store(0, std::memory_order_relaxed);
      }
      int const done_set = parity_;
      parity_ = 1 - parity_;
      auto& r = st->result;
      ++r.iterations;
      r.max_change = delta;
      r.converged = o_.tolerance > 0 ? delta <= o_.tolerance : !changed;
      auto const stamp = std::chrono::steady_clock::now();
      double const seconds = std::chrono::duration<double>(stamp - st->iteration_start).count();
      st->iteration_start = stamp;
      if (o_.on_iteration)
        o_.on_iteration(hybrid_progress{done_before + r.iterations, seconds, times, cuts()});
      // §9: the first iteration of a pass (cold caches, every frontier sent) is not measured.
      if (o_.rebalance && n > 1 && r.iterations > 1) {
        for (std::size_t s = 0; s < n; ++s) st->window[s] += times[s];
        if (++st->measured >= o_.rebalance_every) {
          auto const& now = cuts();
          auto const worth_moving = [&](std::vector<index_t> const& next) {
            index_t moved = 0;
            for (std::size_t k = 0; k < now.size(); ++k)
              moved = std::max<index_t>(moved, std::abs(next[k] - now[k]));
            return moved >= std::max<index_t>(1, extent_[0] / 256);
          };
          auto next = rebalanced_cuts(now, st->window, o_.rebalance_threshold, o_.rebalance_damping,
                                      last_move_seconds_);
          bool const move = worth_moving(next);
          // An imbalance that does not yet pay for a move keeps its window growing (checked
          // every iteration): a lasting one saves more the longer it is summed, and moves
          // once that exceeds the move's cost; noise averages out and starts a new window.
          bool const pending = !move && last_move_seconds_ > 0 &&
                               worth_moving(rebalanced_cuts(now, st->window, o_.rebalance_threshold,
                                                            o_.rebalance_damping));
          if (move) st->next_cuts = std::move(next);
          if (!pending) {
            st->window.assign(n, 0.0);
            st->measured = 0;
          }
        }
      }
      // This iteration's flags (its input buffer's set) are back: zero them for the
      // iteration after next (the next one's corpus may be running, on the other set).
      // Last, so that nothing is left in flight when on_iteration throws (the next pass
      // clears every flag first).
      std::vector<event> zero;
      for (std::size_t s = 0; s < n; ++s) zero.push_back(zero_flags(s, done_set));
      return when_all(after(zero));
    });
    for (auto& n : last) n.precede(end);
    g.conditional([st, limit] {
      return !st->result.converged && st->result.iterations < limit && st->next_cuts.empty();
    });
    st->iteration_start = start;
    // A corpus started for an iteration that will not run (converged, or a re-partition
    // is due) still writes the other buffer: it ends before the solve goes on, and what
    // it raised is dropped with it. After an error every kernel the pass launched ends
    // before the error leaves (nothing writes the buffers after the solve returns).
    auto quietly = [](event const& e) {
      try {
        e.wait();
      } catch (...) {  // an iteration that does not happen, or the error being thrown
      }
    };
    auto drain = [&st, &quietly](bool all) {
      for (std::size_t s = 0; s < st->pending.size(); ++s) {
        if (st->has_pending[s]) quietly(st->pending[s]);
        st->has_pending[s] = 0;
        if (all) quietly(st->front[s]), quietly(st->corpus[s]);
      }
    };
    try {
      run(g).wait();
    } catch (...) {
      drain(true);
      throw;
    }
    drain(false);
    return st;
  }

  /// What a kernel takes for a held argument (tensor_detail::held_tensor).
  template <class A>
  static auto const& unhold(A const& a) {
    if constexpr (tensor_detail::is_held_tensor<A>)
      return a.t;
    else
      return a;
  }

  /// An extra argument as a solve holds it: a tensor cut into the stencil's strips (the
  /// caller's, padding loaded, or a copy of it), or the plain value.
  template <class A>
  auto hold_extra(A const& a) const {
    using D = std::remove_cvref_t<A>;
    if constexpr (tensor_detail::arg_traits<D>::is_tensor) {
      auto const& t = tensor_detail::arg_traits<D>::get(a);
      load_padding(t).wait();
      tensor_detail::held_tensor<typename std::remove_cvref_t<decltype(t)>::value_type> h{t,
                                                                                          nullptr};
      recut_extra(h);
      return h;
    } else {
      return a;
    }
  }
  template <class A>
  void recut_extra(A& a) const {
    if constexpr (tensor_detail::is_held_tensor<A>) {
      using U = typename decltype(a.t)::value_type;
      if (a.t.same_cells(field())) return;
      if constexpr (cell_traits<U>::is_record) {
        a.t = recut_copy(a.t);
      } else if (a.store && &a.store->get().state() == &a.t.state()) {
        a.store->recut(cuts(), true);
        a.t = a.store->get();
      } else {
        a.store = std::make_shared<tensor_detail::strip_store<U>>(o_.devices, spec_, spare_rows());
        copy_owned(a.store->get(), a.t);
        a.t = a.store->get();
      }
    }
  }
  /// `t` (padding loaded) copied into the stencil's strips, padding included.
  template <class U>
  tensor<U, 2> recut_copy(tensor<U, 2> const& t) const {
    tensor<U, 2> out(o_.devices, spec_);
    copy_owned(out, t);
    return out;
  }
  /// Every block of `out` (cut as the stencil) takes, from each block of `t`, the cells
  /// that block owns — its interior, and its padding on the sides where the grid ends (the
  /// edge values) — that fall in the new block's padded box.
  template <class U>
  void copy_owned(tensor<U, 2> const& out, tensor<U, 2> const& t) const {
    index_t const pad = spec_.padding;
    std::vector<event> done;
    for (std::size_t db = 0; db < out.blocks(); ++db)
      for (std::size_t sb = 0; sb < t.blocks(); ++sb) {
        auto const& d = out.block(db);
        auto const& src = t.block(sb);
        vec<2> own_lo = src.origin, own_ext = src.extent;
        for (std::size_t k = 0; k < 2; ++k) {
          if (own_lo[k] == 0) own_lo[k] -= pad, own_ext[k] += pad;
          if (own_lo[k] + own_ext[k] == extent_[k]) own_ext[k] += pad;
        }
        vec<2> lo{}, ext{};
        if (!tensor_detail::intersect(d.origin - vec<2>{pad, pad},
                                      d.extent + vec<2>{2 * pad, 2 * pad}, own_lo, own_ext, lo,
                                      ext))
          continue;
        done.push_back(
            tensor_detail::copy_box(after{}, out, db, lo - d.origin, t, sb, lo - src.origin, ext));
      }
    when_all(after(done)).wait();
  }

  /// How a strip's rows are cut on `where`. On the host: whole rows in 8 blocks per
  /// thread, not divide_work's 64 (at 4096 rows on 2 threads 16 blocks of 256 rows a sweep,
  /// not 128 of 32, in the same 16 chunks the threads backend hands out: fewer kernel
  /// calls and flag updates, which both threads make on one cache line). Session 57,
  /// `strata bench hybrid-jacobi` host/2 (the CPU-only 4096^2 Jacobi against OpenMP's
  /// static halves): 0.89-0.93 in seven runs with divide_work's cut, 0.93-1.00 in nine
  /// with this one; a stand-alone loop of the same solves read 0.96-0.98 with either, so
  /// what the bench's process adds is not established. Devices (a paced sim device's
  /// launches are cut for its pacing, CUDA) and strips too short for 8 blocks per thread
  /// (frontier rows: divide_work splits a row) keep divide_work's shape.
  static shape<2> strip_division(target const& where, vec<2> region) {
    auto const traits = detail::traits_of(where);
    index_t const blocks = static_cast<index_t>(std::max(traits.threads, 1)) * 8;
    if (where.where.isa() != isa::host || !traits.host || region[0] < blocks)
      return divide_work(where, region);
    index_t const rows = (region[0] + blocks - 1) / blocks;
    constexpr index_t simd = 16;  // as divide_work: rows rounded to whole vectors
    return shape<2>(vec<2>{(region[0] + rows - 1) / rows, 1}, vec<2>{1, 1},
                    vec<2>{rows, (region[1] + simd - 1) / simd * simd});
  }

  /// Launches update over `rows` rows of strip s from `row0`, after `deps`, from buffer
  /// `in` into the other, raising flag `slot` of flag set `in`.
  template <class F, class... A>
  event launch_rows(after const& deps, int in, std::size_t s, F const& update, index_t row0,
                    index_t rows, int slot, A const&... extra) {
    auto const& from = buf_[in].get().block(s);
    auto const& to = buf_[1 - in].get().block(s);
    auto const& where = o_.devices[s];
    vec<2> region{rows, from.extent[1]};
    double* flags = flags_[s].block(0).base + in * flags_per_set;
    return launch(deps, where, strip_division(where, region),
                  tensor_detail::strip_kernel<T, F>{update}, from, to, row0, region, flags, slot,
                  slot == flag_corpus ? flag_corpus + 1 : flag_top + 2,
                  tensor_detail::bind(extra, s)...);
  }

  /// Copies flags [first, first + n) of strip s's set for this iteration (its input
  /// buffer's) to the host, after `deps`.
  event read_flags(after const& deps, std::size_t s, index_t first, index_t n,
                   std::vector<double>& host) {
    view<double, 1> dst(
        ptr<double, host_space>(host.data() + static_cast<index_t>(s) * flags_per_set + first, 0),
        vec<1>{n});
    return tensor_detail::visit_space(flags_[s].space_of(0), [&](auto sp) {
      return copy(deps, dst,
                  flags_[s].template local_view<decltype(sp)>(
                      0, vec<1>{parity_ * flags_per_set + first}, vec<1>{n}));
    });
  }

  /// After strip s's frontier kernels: copies each frontier that changed (this iteration
  /// or the last: the other buffer holds the older value) into the neighbour's padding in
  /// the buffer being written.
  event send_frontiers(std::size_t s, shared& st) {
    auto const& next = buf_[1 - parity_].get();
    auto const strips = o_.devices.size();
    index_t const h = next.block(s).extent[0], w = next.block(s).extent[1];
    std::vector<event> copies;
    for (int side = 0; side < 2; ++side) {
      bool const has_neighbour = side == 0 ? s > 0 : s + 1 < strips;
      // A one-row strip's only row is both frontiers (its flag is the top one).
      bool const now = st.host_flags[static_cast<std::size_t>(flags_per_set) * s +
                                     (h == 1 ? 0 : static_cast<std::size_t>(side))] > 0;
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

  // Per strip in its device's memory, two sets (one per input buffer, so an iteration's
  // corpus started early does not write the flags of the one before): the frontier
  // kernels' flags (top row changed, bottom row changed, their largest change), then the
  // corpus kernel's (changed, largest).
  static constexpr int flag_top = 0, flag_bottom = 1, flag_corpus = 3;
  static constexpr index_t flags_per_set = 5;

  hybrid_options<T> o_;
  vec<2> extent_;
  tensor_spec<2> spec_;
  tensor_detail::strip_store<T> buf_[2];
  // zero_flags' source (before flags_: the flags are freed first, waiting for their copies).
  std::vector<double> zeros_ = std::vector<double>(static_cast<std::size_t>(flags_per_set), 0.0);
  std::vector<tensor<double, 1>> flags_;
  int parity_ = 0;
  double last_move_seconds_ = 0;  // what the last recut of the buffers took (0: none yet)
};

}  // namespace strata
