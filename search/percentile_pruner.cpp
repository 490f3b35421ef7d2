// percentile_pruner.cpp — best-so-far against the completed trials' percentile.
#include "search/percentile_pruner.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace dlsweep::search {

double percentile_of(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double pos = q / 100.0 * double(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(values.size() - 1, lo + 1);
  const double frac = pos - double(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

PercentilePruner::PercentilePruner(PrunerBasics basics, double percentile, std::int64_t startup_trials, bool is_median)
    : b_(basics), percentile_(percentile), startup_(startup_trials), median_(is_median) {}

PruneDecision PercentilePruner::judge(const TrialRecord& trial, const History& h) const {
  PruneDecision out;
  if (trial.curve.empty()) return out;
  out.at = position(trial.curve.back(), b_.by);
  if (out.at + 1e-9 < b_.warmup) return out;
  const auto mine = best_until(trial, b_.by, out.at, h.maximize);
  if (!mine) return out;
  std::vector<double> others;
  for (const auto& t : h.trials) {
    if (t.number == trial.number || t.status != TrialStatus::complete) continue;
    if (auto v = best_until(t, b_.by, out.at, h.maximize)) others.push_back(*v);
  }
  if (others.empty() || static_cast<std::int64_t>(others.size()) < startup_) return out;
  // The bar a trial must reach: the p-th percentile counted from the good end.
  const double bar = percentile_of(others, h.maximize ? 100.0 - percentile_ : percentile_);
  out.prune = h.better(bar, *mine);
  if (out.prune)
    out.reason = median_ ? fmt::format("best {:.4g} is worse than the median {:.4g} of {} completed trial(s) by then",
                                       *mine, bar, others.size())
                         : fmt::format("best {:.4g} is outside the top {:g}% (bar {:.4g}) of {} completed trial(s) by then",
                                       *mine, percentile_, bar, others.size());
  return out;
}

}  // namespace dlsweep::search
