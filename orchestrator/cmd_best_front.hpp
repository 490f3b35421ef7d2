// cmd_best_front.hpp — `dlsweep best` (and `best --explain`) of a study with several
// objectives: its Pareto front (analysis/front.hpp).
#pragma once

#include "analysis/study_data.hpp"
#include "orchestrator/commands.hpp"

namespace dlsweep::orch {

/// Prints the front of `study` as `a` asks (text or json, --explain); the exit code.
int cmd_best_front(const BestArgs& a, const analysis::StudyData& study);

}  // namespace dlsweep::orch
