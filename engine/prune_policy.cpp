// prune_policy.cpp — the pruner asked report by report; how its verdict is worded.
#include "engine/prune_policy.hpp"

#include <fmt/format.h>

namespace dlsweep::orch {

std::optional<PruneStop> decide_prune(const search::Pruner& pruner, const std::string& metric,
                                      const search::TrialRecord& trial, std::size_t first_new,
                                      const search::History& history) {
  search::TrialRecord upto = trial;
  for (std::size_t n = std::max<std::size_t>(first_new + 1, 1); n <= trial.curve.size(); ++n) {
    upto.curve.assign(trial.curve.begin(), trial.curve.begin() + static_cast<std::ptrdiff_t>(n));
    const auto d = pruner.judge(upto, history);
    if (!d.prune) continue;
    const auto axis = search::axis_name(pruner.axis());
    PruneStop stop;
    stop.note = fmt::format("pruned at {} {:g} ({}, {} pruner): {}", axis, d.at, metric, pruner.name(), d.reason);
    stop.line = fmt::format("falls behind at {} {:g}: {}", axis, d.at, d.reason);
    return stop;
  }
  return std::nullopt;
}

search::TrialStatus history_status(TrialState st) {
  switch (st) {
    case TrialState::complete: return search::TrialStatus::complete;
    case TrialState::pruned: return search::TrialStatus::pruned;
    case TrialState::failed:
    case TrialState::cancelled: return search::TrialStatus::failed;
    default: return search::TrialStatus::running;
  }
}

}  // namespace dlsweep::orch
