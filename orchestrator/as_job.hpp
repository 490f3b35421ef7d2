// as_job.hpp — `dlsweep submit --as-job STUDY` and `dlsweep resume STUDY --as-job`: login nodes kill long-running processes,
// so the orchestrator itself goes to Slurm as a small job of its own (one task, one CPU,
// 1 GB, the study's partition/account/qos; SlurmBackend::submit_orchestrator) that runs
// `dlsweep submit` there, and `resume` when it is requeued. Its output goes to
// <runs_dir>/<study>.orchestrator/stderr.log. The study is validated here first, so a bad
// study never costs a queue wait.
#pragma once

#include <filesystem>
#include <string>

#include "study/spec.hpp"

namespace dlsweep::orch {

/// Returns dlsweep's exit code; prints the job id on stdout.
int submit_as_job(const StudySpec& spec, const std::string& db, const std::string& study_file,
                  const std::filesystem::path& runs_dir);

/// `dlsweep resume STUDY --as-job`: the same job for a study the database holds (its job runs
/// `dlsweep resume`, as a requeued --as-job orchestrator does). `study_file`: the stored
/// source path (the script's fallback, never used while the study exists).
/// Whether `spec`'s backend can run the orchestrator as a job (a batch scheduler); the error
/// names `where` and the fix. Checked before anything is written.
Status needs_batch_scheduler(const StudySpec& spec, const std::string& where);

int resume_as_job(const StudySpec& spec, const std::string& db, const std::string& name,
                  const std::filesystem::path& runs_dir, const std::string& study_file);

}  // namespace dlsweep::orch
