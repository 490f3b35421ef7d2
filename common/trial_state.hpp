// trial_state.hpp — the names of a trial's states, shared by the database (which stores
// them as text) and the orchestrator (which owns the transition function).
#pragma once

#include <optional>
#include <string_view>

namespace dlsweep {

enum class TrialState { waiting, queued, running, complete, pruned, failed, cancelled };

/// Lower-case upper name as stored in the database: "WAITING", "RUNNING", ...
std::string_view to_string(TrialState s);
std::optional<TrialState> parse_trial_state(std::string_view s);
/// COMPLETE, PRUNED and CANCELLED never change again; FAILED may move to WAITING on retry.
bool is_final(TrialState s);
/// A trial in QUEUED or RUNNING has a live backend job.
bool is_active(TrialState s);

inline constexpr TrialState kAllTrialStates[] = {
    TrialState::waiting, TrialState::queued, TrialState::running, TrialState::complete,
    TrialState::pruned,  TrialState::failed, TrialState::cancelled};

}  // namespace dlsweep
