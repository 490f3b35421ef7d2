#include "analysis/seed_groups.hpp"

#include <cmath>

namespace dlsweep::analysis {

std::vector<SeedGroup> group_by_seed(const std::vector<TrialData>& trials, const std::vector<std::size_t>& indices) {
  std::vector<SeedGroup> groups;
  for (std::size_t i : indices) {
    auto key = config_key(trials[i].params);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const SeedGroup& g) { return g.config == key; });
    if (it == groups.end()) {
      groups.push_back(SeedGroup{});
      it = groups.end() - 1;
      it->config = std::move(key);
      it->batch = trials[i].batch;
    }
    it->members.push_back(i);
  }
  for (auto& g : groups) {
    std::vector<double> steps, samples, time, best;
    for (std::size_t i : g.members) {
      const auto& t = trials[i];
      if (t.best_value) best.push_back(*t.best_value);
      if (!t.reached()) continue;
      steps.push_back(static_cast<double>(*t.steps_to_target));
      if (t.samples_to_target) samples.push_back(static_cast<double>(*t.samples_to_target));
      time.push_back(*t.time_to_target_s);
    }
    g.reached = steps.size();
    g.all_reached = g.reached == g.members.size() && !g.members.empty();
    g.steps = summarize(steps);
    g.samples = summarize(samples);
    g.time = summarize(time);
    g.best_value = summarize(best);
  }
  return groups;
}

std::optional<double> pooled_log_time_sd(const std::vector<SeedGroup>& groups, const std::vector<TrialData>& trials) {
  double ss = 0, dof = 0;
  for (const auto& g : groups) {
    std::vector<double> logs;
    for (std::size_t i : g.members)
      if (trials[i].reached() && *trials[i].time_to_target_s > 0) logs.push_back(std::log(*trials[i].time_to_target_s));
    if (logs.size() < 2) continue;
    const double m = summarize(logs).mean;
    for (double x : logs) ss += (x - m) * (x - m);
    dof += static_cast<double>(logs.size() - 1);
  }
  if (dof == 0) return std::nullopt;
  return std::sqrt(ss / dof);
}

bool within_noise(const SeedGroup& a, const SeedGroup& b, double log_sd) {
  if (a.time.n == 0 || b.time.n == 0 || a.time.mean <= 0 || b.time.mean <= 0) return false;
  const double se = log_sd * std::sqrt(1.0 / static_cast<double>(a.time.n) + 1.0 / static_cast<double>(b.time.n));
  return std::abs(std::log(b.time.mean / a.time.mean)) <= 2 * se;
}

}  // namespace dlsweep::analysis
