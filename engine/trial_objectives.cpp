// trial_objectives.cpp — objective vectors and constraint values into the History.
#include "engine/trial_objectives.hpp"

#include <algorithm>

namespace dlsweep::orch {

void set_directions(search::History& h, const StudySpec& spec) {
  h.directions.clear();
  if (spec.multi_objective())
    for (const auto& o : spec.objective_defs()) h.directions.push_back(o.maximize);
  h.constrained = !spec.constraints.empty();
  h.rank_final = spec.objective.rank_final();
}

void fill_objectives(search::TrialRecord& rec, const StudySpec& spec, const TrialFigures& figures) {
  rec.values.clear();
  if (spec.multi_objective())
    if (auto v = objective_values(spec.objective_defs(), figures)) rec.values = std::move(*v);
  rec.constraints = spec.constraints.empty() ? std::vector<double>{} : constraint_values(spec.constraints, figures);
}

std::vector<std::string> extra_metrics(const StudySpec& spec) {
  std::vector<std::string> out;
  auto add = [&](const std::string& m) {
    if (m.empty() || m == spec.objective.metric || is_derived_figure(m)) return;
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  };
  if (spec.multi_objective())
    for (const auto& o : spec.objectives) add(o.metric);
  for (const auto& c : spec.constraints) add(c.metric);
  return out;
}

FirstEval first_eval_check(const StudySpec& spec, const std::map<std::string, double>& metrics) {
  if (metrics.contains(spec.objective.metric)) return FirstEval::has_objective;
  for (const auto& m : extra_metrics(spec))
    if (metrics.contains(m)) return FirstEval::undecided;
  return FirstEval::missing;
}

}  // namespace dlsweep::orch
