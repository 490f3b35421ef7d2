// trial_objectives.hpp — what the samplers see of several objectives and of constraints:
// a finished trial's objective vector and constraint values in its search::TrialRecord,
// from the figures its reports gave (engine: TrialCurve::figures; resume: the database's
// trial summary and metric rows). Pure.
#pragma once

#include <map>
#include <string>
#include <vector>

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

/// The first-evaluation check (a first evaluation without the objective stops the trial at
/// once: a misnamed objective fails in seconds, not at the end): what one evaluation record
/// says. A record that reports none of the first objective but some metric the study's
/// other objectives or constraints read (a constraint reported at step 0, as Optuna's
/// examples do) leaves it undecided: the check waits for the next evaluation.
enum class FirstEval { has_objective, undecided, missing };
FirstEval first_eval_check(const StudySpec& spec, const std::map<std::string, double>& metrics);

}  // namespace dlsweep::orch
