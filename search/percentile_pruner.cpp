// percentile_pruner.cpp — Optuna's PercentilePruner.prune (optuna/pruners/_percentile.py, 3.1)
// over dlsweep's curves, and the best-by-then variant.
#include "search/percentile_pruner.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace dlsweep::search {

namespace {

/// Positions on an axis are doubles (epochs are sums of fractions): equal within this.
bool same_position(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

}  // namespace

double percentile_of(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double pos = q / 100.0 * double(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(values.size() - 1, lo + 1);
  const double frac = pos - double(lo);
  return values[lo] + (values[hi] - values[lo]) * frac;
}

bool first_in_interval(double x, const std::vector<double>& positions, double warmup, double interval) {
  if (interval <= 0) return true;
  // The pruning position at or below x: warmup + k·interval (a hair of slack for float sums).
  const double k = std::floor((x - warmup) / interval + 1e-9);
  const double nearest_lower = warmup + k * interval;
  double second_last = -1;  // the latest earlier report at another position
  for (double p : positions)
    if (!same_position(p, x) && p > second_last) second_last = p;
  return second_last < nearest_lower && !same_position(second_last, nearest_lower);
}

std::optional<double> value_at(const TrialRecord& t, Axis axis, double x) {
  for (const auto& p : t.curve)
    if (same_position(position(p, axis), x)) return p.value;  // the first report there, as Optuna keeps it
  return std::nullopt;
}

PercentilePruner::PercentilePruner(PrunerBasics basics, PercentileOptions options, bool is_median)
    : b_(basics), o_(options), median_(is_median) {}

PruneDecision PercentilePruner::judge(const TrialRecord& trial, const History& h) const {
  PruneDecision out;
  if (trial.curve.empty()) return out;
  const bool optuna = o_.compare == PercentileCompare::same_point;
  std::vector<const TrialRecord*> completed;
  for (const auto& t : h.trials)
    if (t.number != trial.number && t.status == TrialStatus::complete) completed.push_back(&t);
  if (completed.empty() || (optuna && static_cast<std::int64_t>(completed.size()) < o_.startup_trials)) return out;

  const double x = out.at = position(trial.curve.back(), b_.by);
  if (x + 1e-9 * std::max(1.0, std::abs(x)) < b_.warmup) return out;
  std::vector<double> positions;
  positions.reserve(trial.curve.size());
  for (const auto& p : trial.curve) positions.push_back(position(p, b_.by));
  if (!first_in_interval(x, positions, b_.warmup, o_.interval)) return out;

  const auto mine = best_until(trial, b_.by, x, h.maximize);  // best over its reports (NaN skipped)
  if (!mine) {
    if (!optuna) return out;
    out.prune = true;  // Optuna prunes a trial whose every report is NaN
    out.reason = fmt::format("every report so far is NaN, at {} {:g}", axis_name(b_.by), x);
    return out;
  }

  std::vector<double> others;
  std::size_t reported = 0;  // Optuna's n_min_trials counts a NaN report too
  for (const auto* t : completed) {
    const auto v = optuna ? value_at(*t, b_.by, x) : best_until(*t, b_.by, x, h.maximize);
    if (!v) continue;
    ++reported;
    if (!std::isnan(*v)) others.push_back(*v);
  }
  if (static_cast<std::int64_t>(reported) < o_.min_trials || others.empty()) return out;
  if (!optuna && static_cast<std::int64_t>(others.size()) < o_.startup_trials) return out;

  // The bar a trial must reach: the p-th percentile counted from the good end.
  const double bar = percentile_of(others, h.maximize ? 100.0 - o_.percentile : o_.percentile);
  out.prune = h.better(bar, *mine);
  if (!out.prune) return out;
  const std::string where = optuna ? fmt::format("reported at {} {:g}", axis_name(b_.by), x) : "by then";
  out.reason = median_ ? fmt::format("best {:.4g} is worse than the median {:.4g} of {} completed trial(s) {}", *mine,
                                     bar, others.size(), where)
                       : fmt::format("best {:.4g} is outside the top {:g}% (bar {:.4g}) of {} completed trial(s) {}",
                                     *mine, o_.percentile, bar, others.size(), where);
  return out;
}

}  // namespace dlsweep::search
