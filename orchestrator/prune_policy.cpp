#include "orchestrator/prune_policy.hpp"

#include <fmt/format.h>

namespace dlsweep::orch {

nlohmann::json prune_group(const StudySpec::PrunerSpec& pruner, const nlohmann::json& params) {
  nlohmann::json g = nlohmann::json::object();
  for (const auto& k : pruner.group_by) g[k] = params.contains(k) ? params[k] : nlohmann::json();
  return g;
}

std::optional<PruneStop> decide_prune(const StudySpec& spec, const nlohmann::json& params, const search::Curve& curve,
                                      const std::vector<CompletedCurve>& completed) {
  if (spec.pruner.kind != "median") return std::nullopt;
  const search::MedianRule rule{spec.pruner.startup_trials, spec.pruner.warmup, spec.objective.mode == "max"};
  const nlohmann::json group = prune_group(spec.pruner, params);
  std::vector<search::Curve> peers;
  for (const auto& c : completed)
    if (c.group == group) peers.push_back(c.curve);
  const auto v = search::median_rule(rule, curve, peers);
  if (!v.prune) return std::nullopt;
  std::string among;
  for (const auto& [k, val] : group.items()) among += fmt::format("{}{}={}", among.empty() ? " with " : ", ", k, val.dump());
  PruneStop stop;
  stop.note = fmt::format("pruned at {} {:g}: best {} {:.4g} is worse than the median {:.4g} of {} completed "
                          "trial(s){} by then",
                          spec.pruner.by, v.at, spec.objective.metric, v.value, v.median, v.compared, among);
  stop.line = fmt::format("falls behind ({} {:g}: {:.4g}, median {:.4g})", spec.pruner.by, v.at, v.value, v.median);
  return stop;
}

}  // namespace dlsweep::orch
