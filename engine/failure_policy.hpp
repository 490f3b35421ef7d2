// failure_policy.hpp — what a trial's end means: whether a failure may go away on a retry,
// and whether a clean exit really delivered what the study asked for.
//
// Retry table (README, "Failures and retries"); the exit codes are common/exit_codes.hpp:
//   killed by a signal, lost job, node failure, time limit, cancelled by the scheduler,
//   exit 75 unasked, exit 1 or any other code not listed below     -> transient: retried
//   exit 2 (bad parameters), 3 (diverged), 126/127 (program or script missing or not
//   executable), a program the backend cannot start at all          -> deterministic: not retried
// Retrying a deterministic failure re-runs the same params with the same seed: it fails
// the same way and only burns machine time.
//
// Pure: no I/O, no clock.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "schedulers/backend.hpp"

namespace dlsweep::orch {

/// Appended to the message of a failed trial that had retries left but was not retried
/// (resume reads it back and does not retry it either).
inline constexpr const char* kNotRetried = "not retried: it would fail the same way";

struct FailureVerdict {
  bool retry = true;   ///< may be transient: retry while retries are left
  std::string why;     ///< the short phrase for the message ("diverged (exit 3)")
};

/// Classifies an unsuccessful end of a job (not a clean exit 0, not a requested stop).
/// `cannot_start`: the backend reported that the program could not be started at all.
FailureVerdict classify_failure(sched::JobEventKind kind, int exit_code, int signal, bool cannot_start);

/// A trial that exited 0 but never reported its objective in an eval/final record failed:
/// returns "objective val_acc was never reported (it reported: acc, loss)", or nullopt
/// when `reported` (metric names of its eval/final records) holds the objective.
std::optional<std::string> missing_objective(const std::string& metric, const std::set<std::string>& reported);

/// What trial.fail_fast compares: a failure's phrase as it is (it holds the exit code:
/// "exit code 1", "killed by signal 9") and the program's last stderr line as
/// failure_message_shape() gives it. Two trials failed the same way when these are equal.
std::string failure_signature(const std::string& failure, std::string_view last_stderr_line);

/// A failure message with what differs from one trial of a study to the next taken out, so
/// that one cause reads the same in every trial: a path through a trial directory up to it
/// (`/home/u/proj/runs/s/trial-0003/params.json` -> `<trial>/params.json`) and every number
/// (`rank 3`, `0.25`, `1e-3`, `0x7f3a` -> `N`). Words stay: `No module named 'torchx'` and
/// `No module named 'torchy'` differ.
std::string failure_message_shape(std::string_view line);

/// The fix printed when trial.fail_fast stopped a sweep because `why`. `resume` runs the study
/// as it was recorded, its trial.command included: when the trials could not even start the
/// program (a missing script or command, exit 126/127, Python's "can't open file") the study
/// file is at fault and the fix is to correct it and `submit --replace`; otherwise fix the
/// program and `resume --rerun failed,cancelled`, naming the study-file route too. `db` empty:
/// no --db in the commands; `study_file` empty: "STUDY_FILE".
std::string fail_fast_fix(const std::string& why, const std::string& db, const std::string& study,
                          const std::string& study_file);

}  // namespace dlsweep::orch
