// branch_cbs_model.hpp — the report's view of a branching study (search: {algorithm: branch};
// common/branch_cbs.hpp): the critical batch at each point of the trunk with its interval, the
// schedule that follows it, the trunk's B_simple where it was measured, and every branch with
// the value it reached — what the critical-batch card (report/branch_cbs.js) draws and what
// `dlsweep best --explain` of the same study prints (the same arithmetic: branch_point_answer,
// branch_schedule, ramp_text).
//
// Read from the database as the rest of the report reads it: the links from the `pbt` events
// (common/pbt_link.hpp, each with its BranchRole), the trials' states, and the curves
// (Storage::for_each_curve_point). A branch's value is the last point of its objective curve
// (eval/final records, every attempt, in order) whose position on the study's axis is at or
// past its link's end (end - 1e-9): its final record; none when it never got there.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "common/stored_study.hpp"
#include "db/storage.hpp"

namespace dlsweep::report {

/// null when the study is not a branch study (`spec`: the row's stored study); else
/// {"axis" (epoch | samples), "metric", "mode" (min | max), "points": [p...], "batches": [...],
///  "trunk_batch", "delta", "tolerance", "seeds", "max_seeds", "lr_factors": [...], "scan" ("upward" | "all" | ""),
///  "answers": [{point (1-based), at, lo, hi (null: the reference batch unmeasured), determined,
///               capped, min_seeds, why, schedule_batch (the schedule's batch from `at` on),
///               batches: [{batch, lr_factor, mean, sd, n, worse, se, surely, possibly, trials}]}]
///              one per point, in point order;
///  "schedule": [{at, batch}] (branch_schedule: starts {0, trunk_batch}), "ramp": "0:64,1:128",
///  "noise": [{at, b_simple, trial}]   the trunk's grad_noise_scale reports (> 0), by position;
///  "trunk": [trial numbers]           the trunk's segments in order;
///  "branches": [{trial, point, at, end, batch, lr_factor, seed, round, state, value}] in trial order}.
Result<nlohmann::json> branch_cbs_model(const db::Storage& storage, const db::StudyRow& row, const StoredStudy& spec);

}  // namespace dlsweep::report
