// state_machine.hpp — the trial state machine: the ONLY way a trial's state may change.
//
//   WAITING --launch--> QUEUED --started--> RUNNING --completed--> COMPLETE
//                                             |--pruned--> PRUNED
//   QUEUED|RUNNING --failed/lost--> FAILED --retry (retries left)--> WAITING (attempt+1)
//   QUEUED|RUNNING --requeued--> QUEUED (same attempt, resumes from its checkpoint)
//   WAITING|QUEUED|RUNNING --cancel--> CANCELLED
//   CANCELLED|FAILED --rerun--> WAITING (attempt+1): only on the user's request
//                               (`dlsweep resume --rerun cancelled,failed`), same params
//   COMPLETE, PRUNED are final; CANCELLED accepts nothing but rerun.
//
// A pure function of (state, attempt, event, max_retries): no I/O, no clock. The engine
// applies its result through Storage::transition, which records the event in the same
// transaction (flux-core's split between deciding a transition and doing side effects).
#pragma once

#include <string_view>

#include "common/result.hpp"
#include "common/trial_state.hpp"

namespace dlsweep::orch {

enum class TrialEvent { launch, started, completed, pruned, failed, lost, requeued, retry, cancel, rerun };

std::string_view to_string(TrialEvent e);

struct Transition {
  TrialState to;
  int attempt;  ///< the attempt after the transition (retry increments it)
};

/// The next state, or an error naming the state and event when the event is not allowed
/// there (e.g. `started` on a COMPLETE trial, or `retry` with no retries left).
Result<Transition> next_state(TrialState from, int attempt, TrialEvent event, int max_retries);

}  // namespace dlsweep::orch
