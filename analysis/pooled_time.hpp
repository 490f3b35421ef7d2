// pooled_time.hpp — time to target measured on every trial that trains at the same speed.
//
// A trial's time to target is one wall-clock reading: on a shared node it moves by several
// percent from run to run (contention, frequency, the neighbour trial), enough to reorder
// schedules that differ only in their learning rate. Trials of dlsweep's trainer whose
// parameters differ only in what a step computes — the LR schedule (base_lr, lr_rule,
// warmup_*, decay*, lr_floor), optimizer scalars (momentum, betas, eps, trust
// coefficients, weight_decay, ...), `epochs` and the warmup/decay timeline (unless a
// batch-size ramp makes the timeline place batch increases) and `seed` — run the same steps
// at the same speed: they form one speed group. For a trial that reached the
// target at step s, its pooled time is the median, over the members of its group whose
// curves pass s (any state: a pruned or diverged trial ran at that speed too), of the wall
// time at which each passed s (linear between evaluation records). One trial's luck no
// longer decides the ranking; trials that reach the target at the same step tie.
// `dlsweep best --by time` and `best --explain` rank by it (docs/math.md#pooled-time).
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/study_data.hpp"

namespace dlsweep::analysis {

/// `params` without the keys that do not change how long a step takes (see above).
nlohmann::json speed_key(const nlohmann::json& params);

/// Wall time at which `curve` passed `step`: linear between the records around it; before
/// the first record, scaled from it (wall ∝ step); the record's own time at a record;
/// nullopt past the last record or for an empty curve.
std::optional<double> wall_at_step(const std::vector<EvalPoint>& curve, std::int64_t step);

struct PooledTime {
  double seconds = 0;  ///< median over the group members that passed the step
  int trials = 0;      ///< how many (1: the trial alone)
};

/// One entry per study.trials (same order): for a trial that reached the target, its pooled
/// time; nullopt otherwise. Without `study.trainer` (a user program, whose parameters we
/// cannot read) every trial is its own group and the pooled time is its own.
std::vector<std::optional<PooledTime>> pooled_times_to_target(const StudyData& study);

}  // namespace dlsweep::analysis
