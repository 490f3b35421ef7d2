// percentile_pruner.hpp — `median` and `percentile`: Optuna's MedianPruner and PercentilePruner
// (Golovin et al. 2017), decision for decision. A trial is pruned when its best intermediate
// value so far is worse than the p-th percentile (counted from the good end) of the values
// the COMPLETE trials reported at the same position — the same step of `by` — as its latest
// report. `percentile: 25` keeps trials in the top quarter; median is 50. Percentiles
// interpolate linearly between order statistics and skip NaN (numpy's nanpercentile).
//
// Optuna's options, under dlsweep's names (by: step makes the position Optuna's step):
//   startup_trials (n_startup_trials, 5)  nothing is pruned until this many trials are COMPLETE
//   warmup         (n_warmup_steps, 0)    nothing is pruned at a position below this
//   interval       (interval_steps, 1)    judged only at the first report of each interval
//                                         of this length after warmup
//   min_trials     (n_min_trials, 1)      completed trials that reported at this position
//                                         needed to judge
// and Optuna's edge cases: a trial whose every report is NaN is pruned; NaN among the others'
// values is skipped; a position none of the completed trials reported at prunes nothing.
//
// `compare: best_by_then` is dlsweep's own variant, for axes whose positions do not line up
// across trials (samples and wall_s, where it is the default; epochs of different batch
// sizes): each completed trial counts with its best value by that position, startup_trials
// counts the completed trials that have one, and every report is judged unless `interval` is
// given. Optuna has no counterpart; on aligned positions it prunes more (a completed curve's
// best by step x is never below its value at x).
#pragma once

#include <optional>

#include "search/pruner.hpp"

namespace dlsweep::search {

/// What the completed trials are compared with at the trial's latest position x.
enum class PercentileCompare {
  same_point,    ///< Optuna: each completed trial's value reported at x
  best_by_then,  ///< dlsweep: each completed trial's best value at positions <= x
};

struct PercentileOptions {
  double percentile = 50;
  std::int64_t startup_trials = 5;
  double interval = 1;              ///< 0: every report is judged
  std::int64_t min_trials = 1;
  PercentileCompare compare = PercentileCompare::same_point;
};

class PercentilePruner final : public Pruner {
 public:
  PercentilePruner(PrunerBasics basics, PercentileOptions options, bool is_median);
  PruneDecision judge(const TrialRecord& trial, const History& history) const override;
  std::string name() const override { return median_ ? "median" : "percentile"; }
  Axis axis() const override { return b_.by; }

 private:
  PrunerBasics b_;
  PercentileOptions o_;
  bool median_;
};

/// numpy.percentile(values, q) with linear interpolation; `values` non-empty, no NaN.
double percentile_of(std::vector<double> values, double q);

/// Optuna's _is_first_in_interval_step: whether the report at `x` is the first of its interval
/// (intervals of `interval` from `warmup` on), given the positions of the trial's reports.
bool first_in_interval(double x, const std::vector<double>& positions, double warmup, double interval);

/// The value `t` reported at position x on `axis` (its first report there), if any.
std::optional<double> value_at(const TrialRecord& t, Axis axis, double x);

}  // namespace dlsweep::search
