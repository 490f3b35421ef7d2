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

}  // namespace dlsweep::report
