// report_model.hpp — the report model: everything the charts of `dlsweep report` (and the
// live view of `dlsweep serve`) draw, as ONE JSON document built from the database.
//
// How `dlsweep serve` uses it: open the database read-only (db::Storage::open_readonly),
// call build_report_model(storage, name) on each request for /api/study/NAME (it only reads,
// never blocks the writer: WAL), send model.dump() as application/json; the page calls
// render(model, root) from report/render.js again with each new model. list_studies_model()
// is the index of every study in the file.
//
// Invariants:
//  - Pure read: one read-only Storage, no other I/O; the same database gives the same model
//    (apart from "generated_at").
//  - Every trial of the study appears in "trials", whatever its state (WAITING ... CANCELLED),
//    with its failure/prune message; none is dropped. A study with 0 trials is a valid model.
//  - Numbers that are not finite never reach the JSON (they become null).
//  - Curves are thinned to about ModelOptions::max_points_per_curve points per trial
//    (the first and last point of every attempt always kept: thin_by_attempt), so 500
//    trials stay a few MB.
//
// Layout (version kModelVersion; render.js reads exactly these keys):
//  { "version", "generated_at",
//    "study": {name, state, objective_metric, objective_mode, objective_target|null,
//              created_at, source_path},
//    "counts": {STATE: n, ...},
//    "param_names": [...],                        every parameter any trial has
//    "trials": [{number, state, attempt, params, value, best_value, steps_to_target,
//                samples_to_target, time_to_target_s, samples_per_s, wall_s, batch_size,
//                ranks, threads, rank_seconds_to_target, message}],   in number order
//    "curves": {"<number>": {"step":[], "samples":[], "wall_s":[], "objective":[],
//                            "lr":[], "noise_scale":[], "samples_per_s":[], "attempt":[]}},
//                                                   parallel arrays, null where a record lacks it; every
//                                                   attempt's eval/final records (a retried trial's earlier
//                                                   attempts too), in attempt then report order, each point
//                                                   tagged with its attempt
//    "batch_over_training": {"trials": [numbers], "curves": {"<number>": {"step":[], "epoch":[],
//                            "batch_size":[], "grad_noise_scale":[], "attempt":[]}}}   the decisions
//                                                   (`log` records with a batch_size) of batch_ramp adaptive trials
//    "batch_space": {present, hide, trials, reason}   whether any trial has a batch size (param or reported);
//                                                   hide: render.js leaves out the batch-size cards and
//                                                   shows `reason` in one line (a study with trials, none with one)
//    "lr_trials": [numbers],                       the best few trials by value (LR chart): the ranked
//                                                  COMPLETE trials first, then the others (analysis/ranking.hpp)
//    "best": {criterion, trial, trials, mean, "by": {"time"|"steps"|"value": {criterion, trial, trials, mean}}} | null
//                                                  the winner of `dlsweep best` (trial) and of `best --explain`
//                                                  (its seed group, trials), by auto and by each `--by`
//    "pareto": [numbers],                          time-to-target vs rank-seconds front
//    "history": [{number, value, best_so_far}],    finished trials in number order
//    "importance": {"method", "target", "trials", "values": [{param, importance, trials, groups, chance}],
//                   "not_rated": [{param, reason}], "note"},   note: why parameters have no bar
//    "noise_scale": {"metric", "trials", "reported", "note"},   note: how to report it, when none did
//    "throughput": {"by_batch": [...], "by_ranks": [...]},  see report_model.cpp
//    "grouped_fits": [{param, epoch_factor, groups: [...], lines}],  S(B) and B_crit per value of each
//                                                  categorical parameter (report_analysis.hpp)
//    "multi_objective": {objectives, front, points, hypervolume} | null   several objectives
//                                                 (report_analysis.hpp pareto_model); absent when analysis fails
//    "branch": {...} | null                       a branching study's critical batch per point, its schedule
//                                                 and the trunk's B_simple (report/branch_cbs_model.hpp)
//    "analysis": {...} | {"available": false, "reason": "..."} }
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "db/storage.hpp"

namespace dlsweep::report {

inline constexpr int kModelVersion = 1;

struct ModelOptions {
  std::size_t max_points_per_curve = 300;  ///< per trial, per curve
  std::size_t lr_trials = 5;               ///< how many of the best trials the LR chart shows
};

/// The model of study `study_name`. Errors: no such study (naming the known ones), or the
/// database could not be read.
Result<nlohmann::json> build_report_model(const db::Storage& storage, const std::string& study_name,
                                          const ModelOptions& options = {});

/// Every study in the database: [{name, state, objective_metric, created_at, counts}], for an
/// index page.
Result<nlohmann::json> list_studies_model(const db::Storage& storage);

}  // namespace dlsweep::report
