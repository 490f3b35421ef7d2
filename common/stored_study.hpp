// stored_study.hpp — the one typed reading of a stored study (studies.spec_json, written by
// study/'s StudySpec::to_json()) for whoever needs a few of its keys without the whole study
// file: analysis/load (objectives, constraints, trial.ranks, the trainer), the report (ranks;
// a pbt study's population, generations and interval axis, its searched parameters) and the
// verbs that must know whether a study is a pbt study before reading it in full
// (orchestrator/cmd_best_pbt), and a branching study's plan (orchestrator/cmd_best_branch). analysis/ and report/ may not include study/, hence common/.
//
// Keys left out read as their defaults (a stored study writes only what differs from them;
// specs from older versions and hand-made test rows leave out more); a key of the wrong type
// is an error naming the study and the key, never a silent default.
//
// It also holds the one rule for a trial's rank count: its `ranks` parameter (a whole number
// >= 1) when it has one, else the study's trial.ranks (engine/job_builder launches by it;
// analysis/ and the report count rank-seconds by it). Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/multi_objective.hpp"
#include "common/result.hpp"

namespace dlsweep {

/// `search:` of a pbt study (search.algorithm == "pbt"), as far as readers need it.
struct StoredPbt {
  std::int64_t population = 0;
  std::int64_t generations = 0;   ///< 0 when not stored (a spec written before submit completed it)
  std::string interval_by = "epoch";  ///< epoch | step | samples
};

/// `search:` of a branching study (search.algorithm == "branch", common/branch_cbs.hpp), as
/// far as readers need it. `points` is always the resolved ascending list in a stored spec.
struct StoredBranch {
  std::vector<double> points;            ///< p_1 < ... < p_M on the axis
  std::string by = "epoch";              ///< epoch | samples
  std::vector<std::int64_t> batches;     ///< ascending; the first is the trunk's
  double delta = 0;                      ///< how far each branch trains past its point
  double tolerance = 0.01;               ///< relative
  std::int64_t seeds = 2;                ///< seeds per (batch, LR factor) in the base plan
  std::int64_t max_seeds = 0;            ///< 0 when not stored
  std::vector<double> lr_factors{1.0};
  std::string scan;                      ///< upward | all; "" when not stored (studies before the scan)
  double end = 0;                        ///< where training ends on the axis (`search.end`); 0 when not stored
};

struct StoredStudy {
  /// Every objective in file order (`objective`: a map for one, a list for several); empty
  /// when the stored spec has none (then the study row's objective_metric is the objective).
  std::vector<ObjectiveDef> objectives;
  std::optional<double> target;          ///< the first objective's target
  /// The first objective's `rank_by: final`: a trial ranks by its last report, not its best.
  bool rank_final() const { return !objectives.empty() && objectives.front().final; }
  std::vector<ConstraintDef> constraints;  ///< `constraints` (none: empty)
  std::string algorithm = "grid";        ///< search.algorithm
  int ranks = 1;                         ///< trial.ranks: a trial's ranks unless a `ranks` parameter sets them
  bool trainer = false;                  ///< trial.trainer: the trials run dlsweep-train
  std::vector<std::string> searched;     ///< the names of `space`'s dimensions, in order
  std::optional<StoredPbt> pbt;          ///< set exactly when algorithm == "pbt"
  std::optional<StoredBranch> branch;    ///< set exactly when algorithm == "branch"
};

/// Reads the stored spec of study `study` (its name, for errors). Error (bad_input) when it
/// is not a JSON object or a key it reads has the wrong type: "study 'S': its stored spec
/// has trial.ranks = "two", expected a whole number >= 1", where "studies.spec_json: trial.ranks".
Result<StoredStudy> read_stored_study(const nlohmann::json& spec, std::string_view study);
/// As above, from the text of studies.spec_json.
Result<StoredStudy> read_stored_study(const std::string& spec_json, std::string_view study);

/// The one ranks rule: the trial's `ranks` parameter when it is a whole number >= 1 (at most
/// 2^20), else `study_ranks` (trial.ranks; 1 when the study does not say).
int trial_ranks(int study_ranks, const nlohmann::json& params);
inline int trial_ranks(const StoredStudy& study, const nlohmann::json& params) {
  return trial_ranks(study.ranks, params);
}

}  // namespace dlsweep
