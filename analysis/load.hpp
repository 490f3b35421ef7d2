// load.hpp — the only file of analysis/ that reads the database: a study's trials, their
// outcomes (the trial_summary view) and their eval/final curves (current attempt), as a
// StudyData. Read-only; works on a Storage opened with open_readonly().
#pragma once

#include <string>

#include "analysis/batch_trajectory.hpp"
#include "analysis/study_data.hpp"
#include "common/result.hpp"
#include "db/storage.hpp"

namespace dlsweep::analysis {

/// Error (not_found) naming the study when it does not exist.
Result<StudyData> load_study(const db::Storage& storage, const std::string& name);

/// The batch decisions (`log` records with a batch_size: batch_ramp adaptive) of trial
/// `number`'s latest attempt, in record order; empty for a trial whose batch was not decided
/// as it trained.
Result<std::vector<BatchDecision>> load_batch_decisions(const db::Storage& storage, const std::string& study,
                                                        std::int64_t number);

}  // namespace dlsweep::analysis
