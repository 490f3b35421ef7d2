// trial_objectives.hpp — what the samplers see of several objectives and of constraints:
// a finished trial's objective vector and constraint values in its search::TrialRecord,
// from the figures its reports gave (engine: TrialCurve::figures; resume: the database's
// trial summary and metric rows). Pure.
#pragma once

#include "common/multi_objective.hpp"
#include "search/history.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

/// The History's directions, `constrained` and `rank_final` (objective.rank_by) for the study
/// (one objective: directions stays empty, the single-objective History as before).
void set_directions(search::History& h, const StudySpec& spec);

/// Sets rec.values (several objectives; empty when a value is unknown) and
/// rec.constraints (when the study has constraints) from `figures`.
void fill_objectives(search::TrialRecord& rec, const StudySpec& spec, const TrialFigures& figures);

/// The reported metrics the objectives and constraints read, besides the first objective
/// (what resume must load to rebuild the figures).
std::vector<std::string> extra_metrics(const StudySpec& spec);

}  // namespace dlsweep::orch
