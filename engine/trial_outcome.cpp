#include "engine/trial_outcome.hpp"

#include <fmt/format.h>

#include "common/protocol.hpp"
#include "engine/failure_policy.hpp"

namespace dlsweep::orch {

using sched::JobEventKind;

std::string failure_message(const sched::JobEvent& ev, const std::string& verdict, const std::string& stderr_tail) {
  std::string what;
  if (ev.kind == JobEventKind::lost) what = "lost: " + ev.message;
  else if (ev.kind == JobEventKind::cancelled) what = ev.message.empty() ? verdict : ev.message;
  else what = verdict;
  // The backend's own words ("out of memory (OUT_OF_MEMORY)", "node failure") say more.
  if (ev.kind == JobEventKind::exited && !ev.message.empty() && ev.message.find("exit") == std::string::npos) {
    // "killed by signal 12 (User defined signal 2)" already starts with the verdict "killed
    // by signal 12": said once, not "killed by signal 12 (killed by signal 12 (...))".
    if (ev.message.rfind(what, 0) == 0) what = ev.message;
    else what += " (" + ev.message + ")";
  }
  if (!stderr_tail.empty()) what += "; stderr: " + stderr_tail;
  return what;
}

std::string diverged_phrase(const std::string& metric) {
  return fmt::format("diverged (objective {} NaN/inf at its end)", metric);
}

ProgramWord take_program_outcome(const std::optional<std::string>& text, int attempt, const std::string& file) {
  ProgramWord w;
  if (!text) return w;
  auto parsed = protocol::parse_program_outcome(*text);
  if (!parsed) {
    w.warning = fmt::format("{}: {}; ignored: the trial ends as its exit status and records say (fix: {})", file,
                            parsed.error().what, parsed.error().fix);
    return w;
  }
  if (parsed->attempt == attempt) w.outcome = std::move(*parsed);
  return w;
}

TerminalDecision decide_terminal(const sched::JobEvent& ev, const TerminalFacts& f) {
  TerminalDecision d;
  d.mark_started = f.state == TrialState::queued && ev.kind == JobEventKind::exited;
  if (ev.kind == JobEventKind::exited && ev.signal == 0) d.exit_code = ev.exit_code;
  const bool ok = ev.kind == JobEventKind::exited && ev.signal == 0 && ev.exit_code == protocol::kExitDone;
  // Asked to stop: the state of the ask, whatever the exit (a script that breaks out of its
  // loop exits 0, a torchrun over stopped workers exits 1, a cancelled job dies by signal).
  const bool asked = !f.stop_reason.empty();
  const bool retries_left = f.max_retries > f.attempt;
  // The program's own word (outcome.json), on a clean exit of its own attempt only.
  const protocol::ProgramOutcome* word = ok && f.program && f.program->attempt == f.attempt ? &*f.program : nullptr;
  const bool self_pruned = word && word->state == protocol::ProgramState::pruned && !asked;
  const bool prune_advised_but_complete =
      word && word->state == protocol::ProgramState::complete && asked && f.stop_reason == "pruned";

  if (asked && f.stop_reason == kStopAtTarget) {
    // It reached the target (that is why it was asked), so it has the objective.
    d.outcome = Outcome::complete;
    d.event = TrialEvent::completed;
    d.why = "stopped at the target";
  } else if (asked && f.stop_reason == kStopIntervalEnd) {
    d.outcome = Outcome::complete;
    d.event = TrialEvent::completed;
    d.why = "stopped at its interval's end";
  } else if (asked && f.stop_reason == kStopNoObjective) {
    d.outcome = Outcome::no_objective;
    d.event = TrialEvent::failed;
    d.deterministic = true;
    d.failure = missing_objective(f.metric, f.reported).value_or("objective " + f.metric + " was never reported");
    d.why = d.failure + "; stopped at its first evaluation" + (retries_left ? std::string(" — ") + kNotRetried : "");
  } else if (asked && f.stop_reason == "pruned" && !prune_advised_but_complete) {
    d.outcome = Outcome::pruned;
    d.event = TrialEvent::pruned;
    d.why = f.prune_note.empty() ? "pruned" : f.prune_note;
  } else if (asked && !prune_advised_but_complete) {
    d.outcome = Outcome::cancelled;
    d.event = TrialEvent::cancel;
    d.why = f.stop_reason;
  } else if (self_pruned) {
    // It stopped itself as pruned (an objective's own TrialPruned): as final as dlsweep's prune.
    d.outcome = Outcome::pruned;
    d.event = TrialEvent::pruned;
    d.why = fmt::format("pruned by the program itself ({}: {})", protocol::kOutcomeFile,
                        word->reason.empty() ? "PRUNED" : word->reason);
  } else if (ok) {
    // A clean exit without the objective is no result: the study cannot rank it; nor is
    // one whose objective ended NaN/inf. Both are deterministic: the same program with the
    // same params reports the same again.
    std::optional<std::string> bad = missing_objective(f.metric, f.reported);
    if (!bad && f.objective_nonfinite) bad = diverged_phrase(f.metric);
    if (!bad) {
      d.outcome = Outcome::complete;
      d.event = TrialEvent::completed;
      d.why = prune_advised_but_complete
                  ? fmt::format("finished although a prune was advised ({}: {})", protocol::kOutcomeFile,
                                word->reason.empty() ? "COMPLETE" : word->reason)
                  : "finished";
    } else {
      d.outcome = Outcome::no_objective;
      d.event = TrialEvent::failed;
      d.deterministic = true;
      d.failure = *bad;
      d.why = *bad;
      // The objective may be in that last line: a program that wrote its record without
      // '\n' reported it to nobody. Say so, or "never reported" reads as a lie.
      if (!f.unterminated_line.empty())
        d.why += fmt::format("; the last line of {} has no newline at its end, so it was not read ({}) (fix: end "
                             "every record with a newline and flush)",
                             protocol::kMetricsFile, f.unterminated_line);
      if (retries_left) d.why += std::string(" — ") + kNotRetried;
    }
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
