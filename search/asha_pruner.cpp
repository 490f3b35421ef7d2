// asha_pruner.cpp — rung decisions at the report that reaches a rung; brackets by number.
#include "search/asha_pruner.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "search/random_sampler.hpp"

namespace dlsweep::search {

namespace {

constexpr double kEps = 1e-9;

// Index of the first point at or past `r`, if any.
std::optional<std::size_t> first_reaching(const TrialRecord& t, Axis axis, double r) {
  for (std::size_t i = 0; i < t.curve.size(); ++i)
    if (position(t.curve[i], axis) + kEps >= r) return i;
  return std::nullopt;
}

// Best value among points 0..i.
std::optional<double> best_through(const TrialRecord& t, std::size_t i, bool maximize) {
  std::optional<double> best;
  for (std::size_t j = 0; j <= i && j < t.curve.size(); ++j) {
    const double v = t.curve[j].value;
    if (std::isnan(v)) continue;
    if (!best || (maximize ? v > *best : v < *best)) best = v;
  }
  return best;
}

// What a trial brings to a rung reached at point i: its best value so far, or (rank_by
// final) the value it reported there.
std::optional<double> rung_value(const TrialRecord& t, std::size_t i, const History& h) {
  if (!h.rank_final) return best_through(t, i, h.maximize);
  if (i >= t.curve.size() || std::isnan(t.curve[i].value)) return std::nullopt;
  return t.curve[i].value;
}

}  // namespace

AshaPruner::AshaPruner(PrunerBasics basics, AshaOptions options) : b_(basics), o_(options) {}

double AshaPruner::rung(std::int64_t k) const {
  return o_.min_resource * std::pow(o_.reduction_factor, double(o_.min_early_stopping_rate + k));
}

PruneDecision AshaPruner::judge(const TrialRecord& trial, const History& h) const {
  PruneDecision out;
  if (trial.curve.empty()) return out;
  const std::size_t last = trial.curve.size() - 1;
  out.at = position(trial.curve[last], b_.by);
  if (out.at + kEps < b_.warmup) return out;
  if (std::isnan(trial.curve[last].value)) {
    out.prune = true;
    out.reason = "the value is nan";
    return out;
  }
  for (std::int64_t k = 0; k < 64; ++k) {
    const double r = rung(k);
    if (r > out.at + kEps) break;
    if (o_.max_resource && r + kEps >= *o_.max_resource) break;
    if (first_reaching(trial, b_.by, r) != last) continue;  // decided at an earlier report
    const auto mine = rung_value(trial, last, h);
    if (!mine) continue;
    std::vector<double> values{*mine};
    for (const auto& t : h.trials) {
      if (t.number == trial.number) continue;
      if (auto c = first_reaching(t, b_.by, r))
        if (auto v = rung_value(t, *c, h)) values.push_back(*v);
    }
    const std::size_t n = values.size();
    auto keep = static_cast<std::size_t>(std::floor(double(n) / o_.reduction_factor));
    if (keep == 0) keep = 1;  // fewer than η so far: only the best goes on
    std::sort(values.begin(), values.end(), [&](double a, double b) { return h.better(a, b); });
    const double bar = values[keep - 1];
    if (h.better(bar, *mine)) {
      out.prune = true;
      out.reason = fmt::format("at rung {} ({} {:g}) its {} {:.4g} is not in the top {} of the {} trial(s) that "
                               "reached it (bar {:.4g})",
                               k, axis_name(b_.by), r, h.rank_final ? "value" : "best", *mine, keep, n, bar);
      return out;
    }
  }
  return out;
}

HyperbandPruner::HyperbandPruner(PrunerBasics basics, double min_resource, double max_resource, double eta)
    : b_(basics) {
  const auto n = static_cast<std::int64_t>(std::floor(std::log(max_resource / min_resource) / std::log(eta) + 1e-9)) + 1;
  std::int64_t total = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    brackets_.emplace_back(basics, AshaOptions{min_resource, eta, i, max_resource});
    const std::int64_t s = n - 1 - i;
    total += static_cast<std::int64_t>(std::ceil(double(n) * std::pow(eta, double(s)) / double(s + 1)));
    budget_.push_back(total);
  }
}

std::size_t HyperbandPruner::bracket_of(std::int64_t number) const {
  const auto h = SplitMix64::mix(static_cast<std::uint64_t>(number) ^ 0x4b9eb7a1d2c3ULL);
  const auto slot = static_cast<std::int64_t>(h % static_cast<std::uint64_t>(budget_.back()));
  return static_cast<std::size_t>(std::upper_bound(budget_.begin(), budget_.end(), slot) - budget_.begin());
}

PruneDecision HyperbandPruner::judge(const TrialRecord& trial, const History& h) const {
  const std::size_t b = bracket_of(trial.number);
  History mine;
  mine.maximize = h.maximize;
  mine.rank_final = h.rank_final;
  for (const auto& t : h.trials)
    if (bracket_of(t.number) == b) mine.trials.push_back(t);
  auto d = brackets_[b].judge(trial, mine);
  if (d.prune) d.reason = fmt::format("bracket {}: {}", b, d.reason);
  return d;
}

}  // namespace dlsweep::search
