// median_pruner.hpp — the median stopping rule (Golovin et al. 2017, "Google Vizier";
// Optuna's MedianPruner): stop a trial whose objective so far is worse than the median of
// what the completed trials had reached at the same point of training.
//
// "The same point" is the epoch (samples seen / training-set size), not the step: in a
// batch-size sweep a batch-4096 trial takes 16x fewer steps per epoch than a batch-256 one,
// and comparing them at equal steps would prune every small batch. "So far" is the best
// value up to that epoch (monotone, so one noisy evaluation does not prune a trial).
// Pure: the engine feeds it the curves; the same curves give the same verdict.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace dlsweep::search {

/// One trial's objective as reported: (epoch, value) in report order.
struct Curve {
  std::vector<std::pair<double, double>> points;
};

struct MedianRule {
  std::int64_t startup_trials = 5;  ///< completed trials (with a value by that epoch) needed to prune
  double warmup_epochs = 1;         ///< nothing is pruned before this epoch
  bool maximize = true;
};

struct PruneVerdict {
  bool prune = false;
  double epoch = 0;              ///< where the comparison was made (the trial's latest point)
  double value = 0;              ///< the trial's best so far
  double median = 0;             ///< of the completed trials' best by that epoch
  std::size_t compared = 0;      ///< how many completed trials entered the median
};

/// The best value of `c` among its points at epoch <= `epoch` (+1e-9), if any.
std::optional<double> best_by(const Curve& c, double epoch, bool maximize);

/// The verdict for `trial` at its latest point against `completed` curves. No prune when
/// the trial has no point, is before warmup_epochs, or fewer than startup_trials completed
/// curves reach that epoch. Prunes only when strictly worse than the median.
PruneVerdict median_rule(const MedianRule& rule, const Curve& trial, const std::vector<Curve>& completed);

}  // namespace dlsweep::search
