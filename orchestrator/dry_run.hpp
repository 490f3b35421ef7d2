// dry_run.hpp — `dlsweep submit --dry-run`: everything a submission would launch, written
// to <runs_dir>/<study>.dry-run/ for inspection (Slurm: the batch script and its index
// file; local: the command lines), with nothing submitted and nothing in the database.
#pragma once

#include <filesystem>

#include "study/spec.hpp"

namespace dlsweep::orch {

/// Returns dlsweep's exit code; prints what it wrote to stderr. `db`: the database the study
/// would be submitted to ("" unknown), so a warm start from this study itself is refused as
/// submit refuses it.
int dry_run(const StudySpec& spec, const std::filesystem::path& runs_dir, const std::filesystem::path& train_binary,
            const std::string& db = "");

}  // namespace dlsweep::orch
