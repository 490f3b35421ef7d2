// threshold_pruner.cpp — the latest value against fixed bounds.
#include "search/threshold_pruner.hpp"

#include <cmath>

#include <fmt/format.h>

namespace dlsweep::search {

ThresholdPruner::ThresholdPruner(PrunerBasics basics, std::optional<double> lower, std::optional<double> upper)
    : b_(basics), lower_(lower), upper_(upper) {}

PruneDecision ThresholdPruner::judge(const TrialRecord& trial, const History&) const {
  PruneDecision out;
  if (trial.curve.empty()) return out;
  out.at = position(trial.curve.back(), b_.by);
  if (out.at + 1e-9 < b_.warmup) return out;
  const double v = trial.curve.back().value;
  if (!std::isfinite(v)) {
    out.prune = true;
    out.reason = fmt::format("the value is {}", v);
  } else if (lower_ && v < *lower_) {
    out.prune = true;
    out.reason = fmt::format("{:.4g} is below the lower bound {:g}", v, *lower_);
  } else if (upper_ && v > *upper_) {
    out.prune = true;
    out.reason = fmt::format("{:.4g} is above the upper bound {:g}", v, *upper_);
  }
  return out;
}

}  // namespace dlsweep::search
