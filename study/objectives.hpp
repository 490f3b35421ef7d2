// objectives.hpp — the `objective:` section (one map, or a list of maps for several
// objectives) and `constraints:`, read and validated into the StudySpec; and the check that
// a pruner is not asked to prune a study of several objectives.
//
// One objective is read exactly as it always was. A list: each item takes metric and mode;
// the first item is the curve dlsweep follows (a metric the trial reports; it alone may
// carry target and stop_at_target, and it is what the database's objective columns hold);
// the others may also name a derived figure (common/multi_objective.hpp). Any item may say
// `rank_by: best` (default) or `final`: which report of its metric ranks a trial.
// Constraints:
// `{metric: M, max: X}` and/or `min:`, or `{reached_target: true}`.
#pragma once

#include "study/reader.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

/// Reads `objective` and `constraints` of `root` into spec.objective, spec.objectives and
/// spec.constraints. `trainer`: the trial is dlsweep-train (its metric names are known).
void read_objectives(StudyReader& r, const Field& root, bool trainer, StudySpec& spec);

/// A pbt study that writes `rank_by: best`: an error at `objective.rank_by` (pbt ranks an
/// interval by its final report, whatever the study says).
void check_rank_by(StudyReader& r, const Field& root, const StudySpec& spec);

/// With several objectives, a pruner other than `none` is an error at `pruner.kind`.
void check_pruner_objectives(StudyReader& r, const Field& root, const StudySpec& spec);

}  // namespace dlsweep::orch
