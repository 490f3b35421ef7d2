// prune_policy.hpp — the engine's one question to the study's pruner: should this live
// trial stop now? Pure: the engine hands over the trial's params and curve and what it
// keeps of the completed trials; the answer says whether to stop and how to say why.
//
// The engine calls decide_prune() from one place (Engine::maybe_prune) and does the side
// effects itself (control.json, the message, the PRUNED transition when the trial exits).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/study_spec.hpp"
#include "search/median_pruner.hpp"

namespace dlsweep::orch {

/// A COMPLETE trial's curve with its pruner group (the values of pruner.group_by among its
/// params): the yardstick live trials are judged by.
struct CompletedCurve {
  nlohmann::json group;
  search::Curve curve;
};

/// The values of pruner.group_by in `params` (null for an absent one), as an object.
nlohmann::json prune_group(const StudySpec::PrunerSpec& pruner, const nlohmann::json& params);

struct PruneStop {
  std::string note;  ///< the trial's message once PRUNED ("pruned at epoch 3: ...")
  std::string line;  ///< the progress line after "trial N " ("falls behind (...)")
};

/// Whether the trial with `params` and `curve` should stop now; nullopt to let it run.
std::optional<PruneStop> decide_prune(const StudySpec& spec, const nlohmann::json& params, const search::Curve& curve,
                                      const std::vector<CompletedCurve>& completed);

}  // namespace dlsweep::orch
