// run_sweep.hpp — the command-line side of running a sweep, shared by `submit` and
// `resume`: where dlsweep-train is, and running the study (engine/sweep_runner.hpp) to its
// end with the summary lines and the exit code the user sees.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/result.hpp"
#include "db/storage.hpp"
#include "engine/engine.hpp"
#include "study/spec.hpp"

namespace dlsweep::orch {

/// Where `dlsweep-train` is: $DLSWEEP_TRAIN, else beside this executable, else on PATH.
std::string locate_train_binary();

/// Where dlsweep-train is for an embedded-trainer study ("" for command studies); an error
/// with the fix when it cannot be found.
Result<std::string> train_binary_for(const StudySpec& spec);

/// Runs the engine to the end on the study's backend and returns dlsweep's exit code.
/// `before_run` (may be empty) prepares the engine, e.g. Engine::restore for resume.
int run_sweep(db::Storage& storage, const StudySpec& spec, std::int64_t study_id, const EngineOptions& opts,
              const std::string& db, const std::function<Status(Engine&)>& before_run);

}  // namespace dlsweep::orch
