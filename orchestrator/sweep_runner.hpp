// sweep_runner.hpp — what `submit` and `resume` share: the database lock that keeps the
// orchestrator the only writer, and running the engine on the study's backend.
#pragma once

#include <functional>
#include <string>

#include "common/result.hpp"
#include "db/storage.hpp"
#include "orchestrator/engine.hpp"
#include "orchestrator/study_spec.hpp"

namespace dlsweep::orch {

/// Takes the advisory lock DB.lock (held until the process exits); fails if another
/// orchestrator holds it. Returns the lock's file descriptor.
Result<int> lock_database(const std::string& db);

/// Runs the engine to the end on the study's backend and returns dlsweep's exit code.
/// `before_run` (may be empty) prepares the engine, e.g. Engine::restore for resume.
int run_sweep(db::Storage& storage, const StudySpec& spec, std::int64_t study_id, const EngineOptions& opts,
              const std::string& db, const std::function<Status(Engine&)>& before_run);

}  // namespace dlsweep::orch
