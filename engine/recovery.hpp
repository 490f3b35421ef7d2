// recovery.hpp — what `dlsweep resume` does before the engine takes over again:
// re-ingest every metrics file of every trial (idempotent: records are keyed by
// (trial, attempt, seq)). Stopping what a dead orchestrator's local trials left running is
// the backend's (Backend::stop_orphans).
#pragma once

#include <filesystem>
#include <vector>

#include "common/result.hpp"
#include "db/storage.hpp"

namespace dlsweep::orch {

/// Re-reads metrics.attempt-K.jsonl (K < attempt) and metrics.jsonl (the current attempt)
/// into the database. Returns how many records were new. Bad lines are skipped.
Result<std::size_t> reingest_trial(db::Storage& storage, const db::TrialRow& trial);

}  // namespace dlsweep::orch
