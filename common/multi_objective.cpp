// multi_objective.cpp — derived figures, objective vectors, constraint values.
#include "common/multi_objective.hpp"

#include "common/objective.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace dlsweep {

namespace {
constexpr std::string_view kDerived[] = {"time_to_target_s", "steps_to_target", "samples_to_target", "rank_seconds",
                                         "samples_per_s"};
}

std::span<const std::string_view> derived_figures() { return kDerived; }

bool is_derived_figure(std::string_view name) {
  return std::find(std::begin(kDerived), std::end(kDerived), name) != std::end(kDerived);
}

bool needs_target(std::string_view name) {
  return name == "time_to_target_s" || name == "steps_to_target" || name == "samples_to_target";
}

void TrialFigures::add_metric(const std::string& name, double value) {
  if (!std::isfinite(value)) return;
  auto [it, fresh] = metrics.try_emplace(name, MetricRange{value, value, value});
  if (fresh) return;
  it->second.last = value;
  it->second.min = std::min(it->second.min, value);
  it->second.max = std::max(it->second.max, value);
}

std::optional<double> figure(const TrialFigures& t, const std::string& name, bool maximize, bool best) {
  if (name == "time_to_target_s") return t.time_to_target_s;
  if (name == "steps_to_target") return t.steps_to_target;
  if (name == "samples_to_target") return t.samples_to_target;
  if (name == "rank_seconds") {
    if (!t.wall_s) return std::nullopt;
    return double(t.ranks) * *t.wall_s;
  }
  auto it = t.metrics.find(name);
  if (name == "samples_per_s" && it == t.metrics.end()) {
    if (t.last_samples && t.last_eval_wall_s && *t.last_eval_wall_s > 0) return *t.last_samples / *t.last_eval_wall_s;
    return std::nullopt;
  }
  if (it == t.metrics.end()) return std::nullopt;
  if (!best) return it->second.last;
  return maximize ? it->second.max : it->second.min;
}

std::optional<std::vector<double>> objective_values(const std::vector<ObjectiveDef>& objectives, const TrialFigures& t) {
  std::vector<double> out;
  for (const auto& o : objectives) {
    auto v = figure(t, o.metric, o.maximize, /*best=*/!o.final);
    if (!v || !std::isfinite(*v)) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

std::vector<double> constraint_values(const std::vector<ConstraintDef>& constraints, const TrialFigures& t) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> out;
  for (const auto& c : constraints) {
    if (c.reached_target) {
      out.push_back(t.steps_to_target ? 0.0 : 1.0);
      continue;
    }
    auto v = figure(t, c.metric, true, /*best=*/false);
    if (!v || !std::isfinite(*v)) { out.push_back(inf); continue; }
    double viol = -inf;
    if (c.max) viol = std::max(viol, *v - *c.max);
    if (c.min) viol = std::max(viol, *c.min - *v);
    out.push_back(std::isinf(viol) ? 0.0 : viol);
  }
  return out;
}

std::string describe(const ConstraintDef& c) {
  if (c.reached_target) return "reached target";
  if (c.min && c.max) return fmt::format("{} <= {} <= {}", *c.min, c.metric, *c.max);
  if (c.max) return fmt::format("{} <= {}", c.metric, *c.max);
  if (c.min) return fmt::format("{} >= {}", c.metric, *c.min);
  return c.metric;
}

}  // namespace dlsweep
