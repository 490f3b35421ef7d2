// median_pruner.hpp — the median stopping rule (Golovin et al. 2017, "Google Vizier";
// Optuna's MedianPruner): stop a trial whose objective so far is worse than the median of
// what the completed trials had reached at the same point of training.
//
// "The same point" is a position x on a training axis the study chooses: the epoch
// (samples seen / training-set size) or the step. Neither is neutral across batch sizes —
// at equal epochs a large batch has taken fewer steps and looks behind, at equal steps it
// has seen more data and looks ahead — which is why the engine can also compare each trial
// only with trials of its own batch size (pruner.group_by). "So far" is the best value up
// to x (monotone, so one noisy evaluation does not prune a trial).
// Pure: the engine feeds it the curves; the same curves give the same verdict.
//
// This is the rule of `pruner: {kind: median, compare: best_by_then}` (the completed trials'
// best BY x), kept as its reference; `kind: median` itself is Optuna's MedianPruner, which takes
// the completed trials' value AT x (search/percentile_pruner.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace dlsweep::search {

/// One trial's objective as reported: (x, value) in report order, x = epoch or step.
struct Curve {
  std::vector<std::pair<double, double>> points;
};

struct MedianRule {
  std::int64_t startup_trials = 5;  ///< completed trials (with a value by that x) needed to prune
  double warmup = 1;                ///< nothing is pruned before this x
  bool maximize = true;
};

struct PruneVerdict {
  bool prune = false;
  double at = 0;                 ///< where the comparison was made (the trial's latest x)
  double value = 0;              ///< the trial's best so far
  double median = 0;             ///< of the completed trials' best by that x
  std::size_t compared = 0;      ///< how many completed trials entered the median
};

/// The best value of `c` among its points at x <= `x` (+1e-9), if any.
std::optional<double> best_by(const Curve& c, double x, bool maximize);

/// The verdict for `trial` at its latest point against `completed` curves. No prune when
/// the trial has no point, is before `warmup`, or fewer than startup_trials completed
/// curves have a value by that x. Prunes only when strictly worse than the median.
PruneVerdict median_rule(const MedianRule& rule, const Curve& trial, const std::vector<Curve>& completed);

}  // namespace dlsweep::search
