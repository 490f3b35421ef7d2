// target_table.hpp — steps, samples and time to the target per batch size (Shallue et al.
// 2018's steps-to-result; docs/math.md#steps-to-target-per-batch-size).
//
// Rule: only COMPLETE trials with a single batch size (no batch_ramp) enter the table; every
// other trial is listed in `excluded` with the reason. Within a batch size the trials are
// grouped by seed (seed_groups.hpp) and the row's best is the group with the fewest mean
// steps to target among groups whose every member reached it (ties: lower mean time). A
// batch size where no group reached the target has a row with reached == 0 and no best:
// it is shown as "not reached", never dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/seed_groups.hpp"
#include "analysis/study_data.hpp"

namespace dlsweep::analysis {

struct Exclusion {
  std::int64_t trial = 0;       ///< trial number
  std::string reason;           ///< "FAILED: diverged at step 40", "batch_ramp: no single batch size"
};

struct BatchRow {
  std::int64_t batch = 0;
  std::size_t trials = 0;                 ///< COMPLETE trials at this batch
  std::size_t reached = 0;                ///< of which reached the target
  std::optional<std::size_t> best_group;  ///< index into TargetTable::groups
  std::optional<Stat> steps, samples, time;  ///< of the best group
  std::vector<std::int64_t> best_trials;  ///< trial numbers of the best group
  std::string best_config;                ///< describe_params of the best group
};

struct TargetTable {
  std::optional<double> target;
  std::vector<SeedGroup> groups;   ///< every seed group of COMPLETE single-batch trials
  std::vector<BatchRow> rows;      ///< ascending batch
  std::vector<Exclusion> excluded; ///< trials that are not in the table, and why
  /// Rows whose best reached the target: the points the batch-size model is fitted on.
  std::vector<const BatchRow*> reaching_rows() const;
};

TargetTable target_table(const StudyData& study);

}  // namespace dlsweep::analysis
