// sweep_runner.hpp — what `submit` and `resume` share: the database lock that keeps the
// orchestrator the only writer, and running the engine on the study's backend.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/result.hpp"
#include "db/storage.hpp"
#include "engine/engine.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

/// Takes the lock on DB.lock (a POSIX record lock: this process's alone, not inherited by
/// children, held until the process exits) and writes "host pid" into it; fails if another
/// process holds it (the error names its host and pid) or the filesystem's locks do not
/// work (the error names the filesystem and the fix: db/db_lock.hpp). Returns the lock
/// file's descriptor, which must stay open (closing it drops the lock).
Result<int> lock_database(const std::string& db);

/// lock_database, then the database opened read-write: what an orchestrator (submit,
/// resume) starts with. The lock stays held until the process exits.
Result<std::unique_ptr<db::Storage>> open_as_orchestrator(const std::string& db);

/// Where `dlsweep-train` is: $DLSWEEP_TRAIN, else beside this executable, else on PATH.
std::string locate_train_binary();

/// Where dlsweep-train is for an embedded-trainer study ("" for command studies); an error
/// with the fix when it cannot be found.
Result<std::string> train_binary_for(const StudySpec& spec);

/// Would the scheduler accept the study's jobs at all? A Slurm refusal is a study error.
/// Leaves no trace when it fails.
Status preflight(const StudySpec& spec, const EngineOptions& opts);

/// Runs the engine to the end on the study's backend and returns dlsweep's exit code.
/// `before_run` (may be empty) prepares the engine, e.g. Engine::restore for resume.
int run_sweep(db::Storage& storage, const StudySpec& spec, std::int64_t study_id, const EngineOptions& opts,
              const std::string& db, const std::function<Status(Engine&)>& before_run);

}  // namespace dlsweep::orch
