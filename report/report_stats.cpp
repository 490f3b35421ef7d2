// report_stats.cpp — see report_stats.hpp.
#include "report/report_stats.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace dlsweep::report {

std::vector<std::int64_t> pareto_front(const std::vector<ParetoPoint>& points) {
  std::vector<ParetoPoint> p;
  for (const auto& x : points)
    if (std::isfinite(x.time_s) && std::isfinite(x.compute)) p.push_back(x);
  std::sort(p.begin(), p.end(), [](const ParetoPoint& a, const ParetoPoint& b) {
    if (a.compute != b.compute) return a.compute < b.compute;
    if (a.time_s != b.time_s) return a.time_s < b.time_s;
    return a.number < b.number;
  });
  std::vector<std::int64_t> out;
  double best_time = INFINITY, best_compute = NAN;
  for (const auto& x : p) {
    // Sorted by compute: x is dominated iff an earlier point has time <= x.time and is
    // strictly better on one of the two. Equal on both is not domination.
    const bool dominated = x.time_s > best_time || (x.time_s == best_time && x.compute > best_compute);
    if (!dominated) out.push_back(x.number);
    if (x.time_s < best_time) {
      best_time = x.time_s;
      best_compute = x.compute;
    }
  }
  return out;
}

namespace {

std::string group_key(const nlohmann::json& v) { return v.dump(); }

// The rows with a finite objective and a value, and each one's group: its value, or for
// numbers with more than max_bins distinct values an equal-count bin by rank.
struct Grouped {
  std::vector<ImportanceInput> rows;
  std::vector<std::size_t> group;
  std::size_t groups = 0;
};

Grouped group_rows(const std::vector<ImportanceInput>& rows, std::size_t max_bins) {
  Grouped g;
  for (const auto& x : rows)
    if (std::isfinite(x.objective) && !x.value.is_null()) g.rows.push_back(x);
  auto& r = g.rows;
  auto& group = g.group;
  group.resize(r.size());
  const bool numeric = std::all_of(r.begin(), r.end(), [](const ImportanceInput& x) {
    return x.value.is_number() && std::isfinite(x.value.get<double>());
  });
  std::map<std::string, std::size_t> distinct;
  for (const auto& x : r) distinct.emplace(group_key(x.value), distinct.size());
  if (numeric && distinct.size() > std::max<std::size_t>(max_bins, 1)) {
    std::vector<std::size_t> order(r.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return r[a].value.get<double>() < r[b].value.get<double>(); });
    // Equal-count bins by rank; equal values always share a bin (the first one's).
    for (std::size_t i = 0; i < order.size(); ++i) {
      std::size_t bin = i * max_bins / order.size();
      if (i > 0 && r[order[i]].value.get<double>() == r[order[i - 1]].value.get<double>()) bin = group[order[i - 1]];
      group[order[i]] = bin;
    }
  } else {
    for (std::size_t i = 0; i < r.size(); ++i) group[i] = distinct.at(group_key(r[i].value));
  }
  g.groups = std::set<std::size_t>(group.begin(), group.end()).size();
  return g;
}

std::optional<double> eta_squared(const Grouped& g) {
  const auto& r = g.rows;
  if (r.size() < 3) return std::nullopt;
  double mean = 0;
  for (const auto& x : r) mean += x.objective;
  mean /= static_cast<double>(r.size());
  std::map<std::size_t, std::pair<double, std::size_t>> sums;
  double total = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    auto& [s, n] = sums[g.group[i]];
    s += r[i].objective;
    ++n;
    total += (r[i].objective - mean) * (r[i].objective - mean);
  }
  if (sums.size() < 2 || !(total > 0)) return std::nullopt;
  double between = 0;
  for (const auto& [k, sn] : sums) {
    const double m = sn.first / static_cast<double>(sn.second);
    between += static_cast<double>(sn.second) * (m - mean) * (m - mean);
  }
  return std::clamp(between / total, 0.0, 1.0);
}

}  // namespace

std::optional<double> correlation_ratio(const std::vector<ImportanceInput>& rows, std::size_t max_bins) {
  return eta_squared(group_rows(rows, max_bins));
}

ImportanceRating rate_importance(const std::vector<ImportanceInput>& rows, std::size_t max_bins) {
  const Grouped g = group_rows(rows, max_bins);
  ImportanceRating out;
  out.trials = g.rows.size();
  out.groups = g.groups;
  if (out.trials > 1) out.chance = static_cast<double>(out.groups - 1) / static_cast<double>(out.trials - 1);
  if (out.groups < 2) {
    out.why_not = fmt::format("its {} COMPLETE trial{} with a value share one value", out.trials, out.trials == 1 ? "" : "s");
  } else if (out.trials < kMinTrialsPerGroup * out.groups) {
    out.why_not = fmt::format("{} trials in {} groups, fewer than {} per group: eta^2 would be near 1 whatever the "
                              "objective (expected {:.2g} with no effect at all); needs at least {} trials",
                              out.trials, out.groups, kMinTrialsPerGroup, out.chance, kMinTrialsPerGroup * out.groups);
  } else if (!(out.eta2 = eta_squared(g))) {
    out.why_not = "the objective does not vary over these trials";
  }
  return out;
}

std::vector<BatchBest> best_per_batch(const std::vector<BatchTrial>& trials) {
  std::map<double, BatchBest> by;
  auto take = [](std::optional<double>& best, std::optional<std::int64_t>& who, const std::optional<double>& v,
                 std::int64_t number) {
    if (!v || !std::isfinite(*v)) return;
    if (!best || *v < *best || (*v == *best && number < *who)) {
      best = *v;
      who = number;
    }
  };
  for (const auto& t : trials) {
    if (!std::isfinite(t.batch) || t.batch <= 0) continue;
    auto& b = by[t.batch];
    b.batch = t.batch;
    ++b.trials;
    if (t.steps || t.samples || t.time_s) ++b.reached;
    take(b.steps, b.steps_trial, t.steps, t.number);
    take(b.samples, b.samples_trial, t.samples, t.number);
    take(b.time_s, b.time_trial, t.time_s, t.number);
  }
  std::vector<BatchBest> out;
  for (auto& [k, v] : by) out.push_back(v);
  return out;
}

std::vector<ScalingSeries> scaling_over_ranks(const std::vector<ThroughputTrial>& trials) {
  std::map<std::pair<double, double>, std::map<double, std::pair<double, std::size_t>>> by;
  for (const auto& t : trials) {
    if (!std::isfinite(t.samples_per_s) || t.samples_per_s <= 0 || !(t.ranks >= 1) || !std::isfinite(t.ranks))
      continue;
    auto& [sum, n] = by[{t.batch, t.threads}][t.ranks];
    sum += t.samples_per_s;
    ++n;
  }
  std::vector<ScalingSeries> out;
  for (const auto& [key, per_ranks] : by) {
    ScalingSeries s{key.first, key.second, {}};
    const double base_ranks = per_ranks.begin()->first;
    const double base = per_ranks.begin()->second.first / static_cast<double>(per_ranks.begin()->second.second);
    for (const auto& [ranks, sn] : per_ranks) {
      ScalingPoint p;
      p.ranks = ranks;
      p.trials = sn.second;
      p.samples_per_s = sn.first / static_cast<double>(sn.second);
      p.speedup = p.samples_per_s / base;
      p.efficiency = *p.speedup * base_ranks / ranks;
      s.points.push_back(p);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::size_t> thin_by_attempt(const std::vector<int>& attempts, std::size_t cap) {
  const std::size_t n = attempts.size();
  std::vector<std::size_t> keep;
  if (n == 0) return keep;
  if (cap < 2 || n <= cap) {
    for (std::size_t i = 0; i < n; ++i) keep.push_back(i);
    return keep;
  }
  for (std::size_t k = 0; k < cap; ++k) keep.push_back(k * (n - 1) / (cap - 1));
  for (std::size_t i = 0; i < n; ++i)  // each attempt's first and last point
    if (i == 0 || i + 1 == n || attempts[i] != attempts[i - 1] || attempts[i] != attempts[i + 1]) keep.push_back(i);
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  return keep;
}

}  // namespace dlsweep::report
