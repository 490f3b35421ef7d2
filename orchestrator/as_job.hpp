// as_job.hpp — `dlsweep submit --as-job STUDY`: login nodes kill long-running processes,
// so the orchestrator itself goes to Slurm as a small job of its own (one task, one CPU,
// the study's partition/account/qos) that runs `dlsweep submit` there. The study is
// validated here first, so a bad study never costs a queue wait.
#pragma once

#include <filesystem>
#include <string>

#include "study/spec.hpp"

namespace dlsweep::orch {

/// Returns dlsweep's exit code; prints the job id on stdout.
int submit_as_job(const StudySpec& spec, const std::string& db, const std::string& study_file,
                  const std::filesystem::path& runs_dir);

}  // namespace dlsweep::orch
