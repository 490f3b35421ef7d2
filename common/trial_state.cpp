#include "common/trial_state.hpp"

namespace dlsweep {

std::string_view to_string(TrialState s) {
  switch (s) {
    case TrialState::waiting: return "WAITING";
    case TrialState::queued: return "QUEUED";
    case TrialState::running: return "RUNNING";
    case TrialState::complete: return "COMPLETE";
    case TrialState::pruned: return "PRUNED";
    case TrialState::failed: return "FAILED";
    case TrialState::cancelled: return "CANCELLED";
  }
  return "UNKNOWN";
}

std::optional<TrialState> parse_trial_state(std::string_view s) {
  for (TrialState t : kAllTrialStates)
    if (to_string(t) == s) return t;
  return std::nullopt;
}

bool is_final(TrialState s) {
  return s == TrialState::complete || s == TrialState::pruned || s == TrialState::cancelled;
}

bool is_active(TrialState s) { return s == TrialState::queued || s == TrialState::running; }

}  // namespace dlsweep
