// report_analysis.hpp — the "analysis" part of the report model: the batch-size model of
// analysis/ (fitted S(B) and E(B), B_crit with its interval, the regimes), the points it was
// fitted on, and the gradient noise scale at target compared with B_crit.
//
// Invariant: never fails the report. When the fit is refused (fewer than 3 batch sizes
// reaching the target, no target, ...) the result is {"available": false, "reason": ...}
// with analysis/'s own words, and the charts show the measured points without a fit.
#pragma once

#include <nlohmann/json.hpp>

#include "analysis/study_data.hpp"

namespace dlsweep::report {

/// {"available": true, "method", "b_crit", "b_crit_interval": [lo, hi], "level", "s_min",
///  "e_min", "at_edge", "determined", "undetermined_reason"|null, "to_determine"|null, "rmse_log",
///  "points": [{batch_size, steps, samples, time_s, trials}], "steps_fit"/"samples_fit":
///  [{batch_size, value}], "regimes": [{from, to, regime, label}] (empty unless determined),
///  "noise": {median_at_target, lo, hi, trials, ratio_to_b_crit}, "excluded": n}
/// or {"available": false, "reason", "points": [...]} (points may still be there).
nlohmann::json analysis_model(const analysis::StudyData& study);

/// The batch-size model per value of each categorical parameter (analysis/grouped_fit.hpp:
/// strings and booleans with 2..8 values, e.g. optimizer, lr_rule), what the "B_crit per
/// value" table and chart draw (report/grouped_fit.js): [to_json(GroupedFit), ...], each group
/// with "steps_fit": [{batch_size, value}] (its fitted S(B), empty when it cannot be fitted).
/// Empty when no such parameter varies; `best --explain --group-by P` gives the same numbers.
nlohmann::json grouped_fits_model(const analysis::StudyData& study);

/// Several objectives (analysis/front.hpp), what a Pareto card draws; null for one objective:
/// {"objectives": [{metric, mode}], "front": [{trial, values}], "points": [{trial, values,
///  front, feasible}] (every trial with a value of each objective), "hypervolume": [{trial,
///  value}] (of the feasible COMPLETE trials so far, in trial order)}.
nlohmann::json pareto_model(const analysis::StudyData& study);

}  // namespace dlsweep::report
