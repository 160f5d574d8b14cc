// Dynamic re-partitioning of the hybrid stencil's strips (hybrid-2d-stencil-scheme §9,
// future work: "dynamic load balancing by re-partitioning"): from the strips' measured
// times, new cut lines that give each strip rows in proportion to its speed, moved part of
// the way, and only when the move pays for itself. Used by hybrid_stencil (hybrid.hpp);
// public, so a driver of its own can re-cut the same way.
#pragma once

#include <strata/error.hpp>
#include <strata/tensor/geometry.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace strata {

namespace tensor_detail {

// Re-partitioning's knobs (hybrid_options, rebalanced_cuts): a NaN threshold made every
// window move the lines, and a NaN damping rounded to the smallest integer and packed the
// strips into one row each, silently (an outside probe).
inline void check_rebalance(double threshold, double damping) {
  if (!(threshold >= 0))
    throw invalid_argument("hybrid_stencil: rebalance_threshold " + std::to_string(threshold) +
                           "; expected a fraction >= 0 (how far the slowest strip's time may "
                           "exceed the fastest's)");
  if (!(damping >= 0 && damping <= 1))
    throw invalid_argument("hybrid_stencil: rebalance_damping " + std::to_string(damping) +
                           "; expected 0 to 1 (how far the lines move per re-partition)");
}
/// How long a strip's device was busy with one iteration's kernels (ns on one clock): the
/// union of its frontier kernels' span [front_start, front_end] and, with a corpus, the
/// corpus's [max(corpus_start, last_end), corpus_end] — a corpus queued early (its launch
/// before the strip's previous iteration ended, hybrid_options::early_corpus) cannot start
/// before that end. What dynamic re-partitioning compares, so idle gaps are not counted.
inline long long strip_busy_ns(long long front_start, long long front_end, bool has_corpus,
                               long long corpus_start, long long corpus_end, long long last_end) {
  long long busy = std::max(0LL, front_end - front_start);
  if (has_corpus) {
    long long const c0 = std::max(corpus_start, last_end);
    long long const corpus = std::max(0LL, corpus_end - c0);
    long long const overlap =
        std::max(0LL, std::min(corpus_end, front_end) - std::max(c0, front_start));
    busy += corpus - std::min(overlap, corpus);
  }
  return busy;
}

}  // namespace tensor_detail

/// The cut lines (strips + 1 values, 0 .. rows) after a dynamic re-partition
/// (hybrid-2d-stencil-scheme §9): `cuts` itself while the strips' `seconds` stay within
/// `threshold` of each other (slowest <= (1 + threshold) * fastest), or when a time is not
/// a positive finite number; else lines moved `damping` of the way (1: all the way) to
/// those that give each strip rows in proportion to its measured speed, rows / seconds
/// (every strip keeps a row at least). A threshold that is NaN or negative, or a damping
/// outside [0, 1], is invalid_argument (+inf: never move). With `move_seconds` > 0 the
/// lines also stay unless the move pays for itself: the slowest strip's time minus the
/// slowest predicted at the new lines (each strip's rows / its measured speed) exceeds it.
inline std::vector<index_t> rebalanced_cuts(std::vector<index_t> const& cuts,
                                            std::vector<double> const& seconds, double threshold,
                                            double damping = 1.0, double move_seconds = 0) {
  tensor_detail::check_rebalance(threshold, damping);
  if (!(move_seconds >= 0))
    throw invalid_argument("rebalanced_cuts: move_seconds " + std::to_string(move_seconds) +
                           "; expected the time a move takes, >= 0");
  if (cuts.size() < 3 || seconds.size() + 1 != cuts.size()) return cuts;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (auto t : seconds) {
    if (!(t > 0) || !std::isfinite(t)) return cuts;
    lo = std::min(lo, t);
    hi = std::max(hi, t);
  }
  if (hi <= (1 + threshold) * lo) return cuts;
  std::vector<double> speeds;
  for (std::size_t s = 0; s < seconds.size(); ++s)
    speeds.push_back(static_cast<double>(cuts[s + 1] - cuts[s]) / seconds[s]);
  auto target = tensor_detail::weighted_cuts(cuts.back(), speeds, 0);
  // Strip times are not quite proportional to rows (launches and flag read-backs cost
  // the same for any height): moving part of the way keeps small grids from oscillating.
  auto const n = cuts.size() - 1;
  for (std::size_t k = 1; k < n; ++k) {
    auto c = cuts[k] +
             static_cast<index_t>(std::llround(damping * static_cast<double>(target[k] - cuts[k])));
    target[k] = std::clamp(c, target[k - 1] + 1, cuts.back() - static_cast<index_t>(n - k));
  }
  if (move_seconds > 0) {
    double predicted = 0;
    for (std::size_t s = 0; s < n; ++s)
      predicted = std::max(predicted, static_cast<double>(target[s + 1] - target[s]) / speeds[s]);
    if (hi - predicted <= move_seconds) return cuts;
  }
  return target;
}

}  // namespace strata
