#include "search/median_pruner.hpp"

#include <algorithm>

namespace dlsweep::search {

std::optional<double> best_by(const Curve& c, double x, bool maximize) {
  std::optional<double> best;
  for (const auto& [at, v] : c.points) {
    if (at > x + 1e-9 || v != v) continue;  // later, or NaN
    if (!best || (maximize ? v > *best : v < *best)) best = v;
  }
  return best;
}

PruneVerdict median_rule(const MedianRule& rule, const Curve& trial, const std::vector<Curve>& completed) {
  PruneVerdict out;
  if (trial.points.empty()) return out;
  out.at = trial.points.back().first;
  if (out.at + 1e-9 < rule.warmup) return out;
  auto mine = best_by(trial, out.at, rule.maximize);
  if (!mine) return out;
  out.value = *mine;
  std::vector<double> others;
  for (const auto& c : completed)
    if (auto v = best_by(c, out.at, rule.maximize)) others.push_back(*v);
  out.compared = others.size();
  if (others.empty() || static_cast<std::int64_t>(others.size()) < rule.startup_trials) return out;
  std::sort(others.begin(), others.end());
  const std::size_t n = others.size();
  out.median = n % 2 ? others[n / 2] : 0.5 * (others[n / 2 - 1] + others[n / 2]);
  out.prune = rule.maximize ? out.value < out.median : out.value > out.median;
  return out;
}

}  // namespace dlsweep::search
