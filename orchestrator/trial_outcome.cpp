#include "orchestrator/trial_outcome.hpp"

#include "common/protocol.hpp"
#include "orchestrator/failure_policy.hpp"

namespace dlsweep::orch {

using sched::JobEventKind;

std::string failure_message(const sched::JobEvent& ev, const std::string& verdict, const std::string& stderr_tail) {
  std::string what;
  if (ev.kind == JobEventKind::lost) what = "lost: " + ev.message;
  else if (ev.kind == JobEventKind::cancelled) what = ev.message.empty() ? verdict : ev.message;
  else what = verdict;
  // The backend's own words ("out of memory (OUT_OF_MEMORY)", "node failure") say more.
  if (ev.kind == JobEventKind::exited && !ev.message.empty() && ev.message.find("exit") == std::string::npos)
    what += " (" + ev.message + ")";
  if (!stderr_tail.empty()) what += "; stderr: " + stderr_tail;
  return what;
}

TerminalDecision decide_terminal(const sched::JobEvent& ev, const TerminalFacts& f) {
  TerminalDecision d;
  d.mark_started = f.state == TrialState::queued && ev.kind == JobEventKind::exited;
  if (ev.kind == JobEventKind::exited && ev.signal == 0) d.exit_code = ev.exit_code;
  const bool ok = ev.kind == JobEventKind::exited && ev.signal == 0 && ev.exit_code == protocol::kExitDone;
  const bool stopped_on_request =
      !f.stop_reason.empty() && (ev.kind == JobEventKind::cancelled ||
                                 (ev.kind == JobEventKind::exited && ev.exit_code == protocol::kExitStopped));
  const bool retries_left = f.max_retries > f.attempt;

  // A clean exit without the objective is no result: the study cannot rank it.
  std::optional<std::string> no_objective;
  if (ok) no_objective = missing_objective(f.metric, f.reported);
  if (ok && !no_objective) {
    d.outcome = Outcome::complete;
    d.event = TrialEvent::completed;
    d.why = f.stop_reason == kStopAtTarget ? "stopped at the target" : "finished";
  } else if (stopped_on_request && f.stop_reason == kStopAtTarget) {
    // It reached the target (that is why it was asked), so it has the objective.
    d.outcome = Outcome::complete;
    d.event = TrialEvent::completed;
    d.why = "stopped at the target";
  } else if (no_objective) {
    // Deterministic: the same program with the same params reports the same metrics.
    d.outcome = Outcome::no_objective;
    d.event = TrialEvent::failed;
    d.deterministic = true;
    d.failure = *no_objective;
    d.why = *no_objective + (retries_left ? std::string(" — ") + kNotRetried : "");
  } else if (stopped_on_request && f.stop_reason == "pruned") {
    d.outcome = Outcome::pruned;
    d.event = TrialEvent::pruned;
    d.why = f.prune_note.empty() ? "pruned" : f.prune_note;
  } else if (stopped_on_request) {
    d.outcome = Outcome::cancelled;
    d.event = TrialEvent::cancel;
    d.why = f.stop_reason;
  } else {
    // Exit 2 (bad parameters), 3 (diverged), a missing program repeat on every retry with
    // the same params and seed: retrying only burns machine time (failure_policy.hpp).
    const FailureVerdict verdict = classify_failure(ev.kind, ev.exit_code, ev.signal, ev.cannot_start);
    d.outcome = Outcome::failed;
    d.event = ev.kind == JobEventKind::lost ? TrialEvent::lost : TrialEvent::failed;
    d.deterministic = !verdict.retry;
    d.failure = verdict.why;
    d.why = failure_message(ev, verdict.why, f.stderr_tail);
    if (!verdict.retry && retries_left) d.why += std::string(" — ") + kNotRetried;
  }
  return d;
}

}  // namespace dlsweep::orch
