// trial_outcome.hpp — what the end of a trial's job means for the trial: the decision
// half of Engine::on_terminal. Pure (no I/O, no clock): the engine gathers the facts
// (the job event, the trial's state, whether it was asked to stop, what it reported, the
// tail of its stderr, its outcome.json), this picks the state-machine event and the words;
// the engine then applies the transition and prints.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "common/program_outcome.hpp"
#include "common/trial_state.hpp"
#include "engine/state_machine.hpp"
#include "schedulers/backend.hpp"

namespace dlsweep::orch {

struct TerminalFacts {
  TrialState state = TrialState::running;
  int attempt = 0;
  int max_retries = 0;
  std::string stop_reason;            ///< non-empty when the engine asked it to stop
  std::string prune_note;             ///< why the pruner stopped it
  std::string metric;                 ///< the objective metric
  std::set<std::string> reported;     ///< metric names of its eval/final records
  std::string stderr_tail;            ///< last lines of stderr.log ("" if none)
  /// The last eval/final record that named the objective gave NaN/inf (recorded as null).
  bool objective_nonfinite = false;
  /// metrics.jsonl ends in a line without its newline (never read: a torn line); its start.
  std::string unterminated_line;
  /// outcome.json of this attempt, well-formed (take_program_outcome): the program's own word.
  /// Heeded only on a clean exit (0); another attempt's is ignored.
  std::optional<protocol::ProgramOutcome> program;
};

enum class Outcome { complete, no_objective, pruned, cancelled, failed };

/// The stop reason (control.json "reason") of a trial asked to stop because it reached the
/// objective's target (objective.stop_at_target): it ends COMPLETE, not cancelled.
inline constexpr const char* kStopAtTarget = "target reached";

/// The stop reason of a PBT trial asked to stop at its interval's end (engine_pbt.cpp): it
/// ends COMPLETE, like one that stopped there on its own.
inline constexpr const char* kStopIntervalEnd = "interval end";

/// The stop reason of a trial whose first evaluation lacked the objective metric: it can
/// never count, so it is stopped at once and ends FAILED (not retried).
inline constexpr const char* kStopNoObjective = "objective missing";

/// The failure phrase of a trial whose objective was NaN/inf at its end.
std::string diverged_phrase(const std::string& metric);

struct TerminalDecision {
  Outcome outcome = Outcome::failed;
  bool mark_started = false;          ///< a QUEUED trial that exited: record `started` first
  TrialEvent event = TrialEvent::failed;
  std::string why;                    ///< the transition's reason
  std::optional<int> exit_code;
  bool deterministic = false;         ///< retrying cannot help
  std::string failure;                ///< failed/no_objective: the short phrase to count
};

/// A trial that dlsweep asked to stop ends in the state of the ask — PRUNED for a prune,
/// CANCELLED for a cancel, COMPLETE for stop_at_target, FAILED for a missing objective —
/// whatever its exit code (0, 75, a launcher's 1, a signal), and is never retried.
/// The program's word (outcome.json, exit 0 only) changes two cases: PRUNED when nothing was
/// asked (it pruned itself) ends PRUNED, never retried; COMPLETE after a prune was asked (the
/// ask was advice, as Optuna's pruning is) ends as an unasked clean exit would — COMPLETE with
/// its objective, FAILED without it (or NaN/inf). Any other ask keeps its state.
TerminalDecision decide_terminal(const sched::JobEvent& ev, const TerminalFacts& f);

/// What the engine takes from a trial directory's outcome.json (common/program_outcome.hpp)
/// at the end of `attempt`, given the file's text (nullopt: no file): the program's word when
/// the file is well-formed and names this attempt; nothing for another attempt's file
/// (stale: a retry never sees the previous attempt's word); nothing and a `warning` (naming
/// `file`, what is wrong and the fix) for a damaged one: the trial then ends as it would
/// without the file.
struct ProgramWord {
  std::optional<protocol::ProgramOutcome> outcome;
  std::string warning;
};
ProgramWord take_program_outcome(const std::optional<std::string>& text, int attempt, const std::string& file);

/// The failure text: what the backend said, the verdict and the stderr tail.
std::string failure_message(const sched::JobEvent& ev, const std::string& verdict, const std::string& stderr_tail);

}  // namespace dlsweep::orch
