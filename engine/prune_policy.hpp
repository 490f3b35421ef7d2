// prune_policy.hpp — the engine's one question to the study's pruner: should this live
// trial stop now? Pure: the engine hands over the trial (params and whole curve so far),
// the study's History and where the new reports start; the answer says whether to stop
// and how to say why. The engine knows no pruner by name: search::make_pruner builds
// whatever the study asked for (median, percentile, threshold, asha, hyperband, any of
// them under group_by).
//
// The engine calls decide_prune() from one place (Engine::maybe_prune) and does the side
// effects itself (control.json, the message, the PRUNED transition when the trial exits).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "engine/state_machine.hpp"
#include "search/history.hpp"
#include "search/pruner.hpp"

namespace dlsweep::orch {

struct PruneStop {
  std::string note;  ///< the trial's message once PRUNED ("pruned at epoch 3 (val_acc): ...")
  std::string line;  ///< the progress line after "trial N " ("falls behind at epoch 3: ...")
};

/// Asks `pruner` about `trial` as it stood after each of its reports from index
/// `first_new` on (pruners that decide at milestones, like asha, decide at the report
/// that reaches one, even when several reports arrive at once); the first stop, if any.
std::optional<PruneStop> decide_prune(const search::Pruner& pruner, const std::string& metric,
                                      const search::TrialRecord& trial, std::size_t first_new,
                                      const search::History& history);

/// The status the samplers and pruners see for a trial in state `st`.
search::TrialStatus history_status(TrialState st);

}  // namespace dlsweep::orch
