#include "engine/state_machine.hpp"

#include <fmt/format.h>

namespace dlsweep::orch {

std::string_view to_string(TrialEvent e) {
  switch (e) {
    case TrialEvent::launch: return "launch";
    case TrialEvent::started: return "started";
    case TrialEvent::completed: return "completed";
    case TrialEvent::pruned: return "pruned";
    case TrialEvent::failed: return "failed";
    case TrialEvent::lost: return "lost";
    case TrialEvent::requeued: return "requeued";
    case TrialEvent::retry: return "retry";
    case TrialEvent::cancel: return "cancel";
    case TrialEvent::rerun: return "rerun";
  }
  return "?";
}

Result<Transition> next_state(TrialState from, int attempt, TrialEvent event, int max_retries) {
  using S = TrialState;
  using E = TrialEvent;
  auto reject = [&](std::string why = {}) {
    return fail(fmt::format("event '{}' is not allowed in state {}{}", to_string(event), to_string(from),
                            why.empty() ? "" : " (" + why + ")"),
                "trial state machine");
  };
  // The user may run a cancelled or failed trial again; nothing else reopens a final state.
  if (event == E::rerun) {
    if (from == S::cancelled || from == S::failed) return Transition{S::waiting, attempt + 1};
    return reject("only CANCELLED or FAILED trials can be re-run");
  }
  if (is_final(from)) return reject("finished states are final");
  switch (event) {
    case E::launch:
      if (from == S::waiting) return Transition{S::queued, attempt};
      return reject();
    case E::started:
      if (from == S::queued) return Transition{S::running, attempt};
      return reject();
    case E::completed:
      if (from == S::running) return Transition{S::complete, attempt};
      return reject();
    case E::pruned:
      if (from == S::running) return Transition{S::pruned, attempt};
      return reject();
    case E::failed:
    case E::lost:
      if (is_active(from)) return Transition{S::failed, attempt};
      return reject();
    case E::requeued:
      if (is_active(from)) return Transition{S::queued, attempt};
      return reject();
    case E::retry:
      if (from != S::failed) return reject();
      if (attempt >= max_retries)
        return reject(fmt::format("attempt {} of {} retries used", attempt, max_retries));
      return Transition{S::waiting, attempt + 1};
    case E::cancel:
      if (from == S::waiting || is_active(from)) return Transition{S::cancelled, attempt};
      return reject();
    case E::rerun: break;  // handled above
  }
  return reject();
}

}  // namespace dlsweep::orch
