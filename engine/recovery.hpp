// recovery.hpp — what `dlsweep resume` does before the engine takes over again:
// re-ingest every metrics file of every trial (idempotent: records are keyed by
// (trial, attempt, seq)), and make sure no process of a trial whose orchestrator died is
// still running before that trial is requeued (local backend).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <vector>

#include "common/result.hpp"
#include "db/storage.hpp"

namespace dlsweep::orch {

/// Re-reads metrics.attempt-K.jsonl (K < attempt) and metrics.jsonl (the current attempt)
/// into the database. Returns how many records were new. Bad lines are skipped.
Result<std::size_t> reingest_trial(db::Storage& storage, const db::TrialRow& trial);

/// Processes whose environment says they belong to this trial dir (DLSWEEP_TRIAL_DIR):
/// the trial program and anything it started. Reads /proc; skips what it cannot read.
std::vector<pid_t> find_trial_processes(const std::filesystem::path& trial_dir);

/// SIGTERM to each process's group, then SIGKILL to what is left after `grace_s`.
/// Returns how many processes were found alive at the start.
std::size_t stop_processes(const std::vector<pid_t>& pids, double grace_s);

}  // namespace dlsweep::orch
