// percentile_pruner.hpp — `median` and `percentile`: stop a trial whose best value so
// far is worse than the p-th percentile (in the good direction) of what the COMPLETE
// trials had reached by the same position (Golovin et al. 2017; Optuna's MedianPruner /
// PercentilePruner). `percentile: 25` keeps trials in the top quarter; median is 50.
// Percentiles interpolate linearly between order statistics (numpy's default), so the
// median of an even count is the mean of the middle two.
//
// Options: startup_trials (default 5: completed trials with a value by then needed before
// anything is pruned), percentile (percentile only, required, in (0, 100)).
#pragma once

#include "search/pruner.hpp"

namespace dlsweep::search {

class PercentilePruner final : public Pruner {
 public:
  PercentilePruner(PrunerBasics basics, double percentile, std::int64_t startup_trials, bool is_median);
  PruneDecision judge(const TrialRecord& trial, const History& history) const override;
  std::string name() const override { return median_ ? "median" : "percentile"; }
  Axis axis() const override { return b_.by; }

 private:
  PrunerBasics b_;
  double percentile_;
  std::int64_t startup_;
  bool median_;
};

/// numpy.percentile(values, q) with linear interpolation; `values` non-empty.
double percentile_of(std::vector<double> values, double q);

}  // namespace dlsweep::search
