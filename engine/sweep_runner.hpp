// sweep_runner.hpp — the sweep's actions that `submit` and `resume` share: the scheduler
// preflight, and running the engine on the study's backend to its end. What the user sees
// of it (summary lines, exit codes) is the command line's: orchestrator/run_sweep.hpp.
#pragma once

#include <cstdint>
#include <functional>

#include "common/result.hpp"
#include "db/storage.hpp"
#include "engine/engine.hpp"
#include "engine/progress.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

/// Would the scheduler accept the study's jobs at all? A Slurm refusal is a study error.
/// Leaves no trace when it fails.
Status preflight(const StudySpec& spec, const EngineOptions& opts);

/// Builds the study's search parts (with its stored warm-start trials), its backend and the
/// engine (progress also logged to the study's orchestrator log), lets `before_run` (may be
/// empty; Engine::restore for resume) prepare it, and runs it to the end. Errors: the
/// study's search parts (bad_input: the study is wrong), the database, the backend, the run.
Result<SweepOutcome> run_study(db::Storage& storage, const StudySpec& spec, std::int64_t study_id,
                               const EngineOptions& opts, Progress& progress,
                               const std::function<Status(Engine&)>& before_run);

}  // namespace dlsweep::orch
