// job_builder.hpp — turns a trial of a study into the JobSpec a backend runs: the
// program (dlsweep-train or the study's command with {study_dir}/{trial_dir} expanded as
// plain text — no shell ever sees these words), the protocol's environment, resources.
#pragma once

#include <cstdint>
#include <filesystem>

#include "study/spec.hpp"
#include "schedulers/backend.hpp"

namespace dlsweep::orch {

/// `trial_id` is the database id (what the backend's events carry back); `number` is the
/// trial number the user sees, exported as DLSWEEP_TRIAL_ID on every backend. `params`: the
/// trial's parameters; a `ranks` parameter sets the trial's rank count (else trial.ranks).
/// Whether the orchestrator can stop a trial on one of its reports (a pruner, stop at the
/// target, population-based training): then it tells the trial (DLSWEEP_DECIDES=1) and writes
/// decided.json after each decision, which dlsweep_trial's should_stop() waits for.
bool decides_on_reports(const StudySpec& spec);

sched::JobSpec build_job(const StudySpec& spec, const std::filesystem::path& train_binary, std::int64_t trial_id,
                         std::int64_t number, int attempt, const std::filesystem::path& trial_dir,
                         const nlohmann::json& params = nlohmann::json::object());

/// Params that give the largest trial shape of the study (its most `ranks`), for the Slurm
/// preflight; {} when ranks is not searched.
nlohmann::json largest_shape_params(const StudySpec& spec);

/// The trial's rank count: its `ranks` parameter if it has one, else trial.ranks (the one
/// rule, dlsweep::trial_ranks in common/stored_study.hpp, which analysis/ and the report use).
int trial_ranks(const StudySpec& spec, const nlohmann::json& params);

}  // namespace dlsweep::orch
