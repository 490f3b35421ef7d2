// protocol.hpp — the trial protocol: the whole contract between the orchestrator and any
// trial program (dlsweep-train, or a user's script in any language).
//
//   environment  DLSWEEP_TRIAL_DIR, DLSWEEP_TRIAL_ID, DLSWEEP_ATTEMPT, DLSWEEP_STUDY
//   params.json  resolved hyperparameters (a flat JSON object), written before launch
//   metrics.jsonl append-only; one JSON object per line:
//                {"seq":N,"kind":"eval|checkpoint|final|log","step":S,"epoch":E,
//                 "samples":N,"wall_s":T,"metrics":{"name":number,...}}
//                optional "text" (log message, or checkpoint path for kind=checkpoint).
//                seq starts at 0 and increases by one per line within an attempt.
//   control.json written by the orchestrator: {"action":"stop","reason":"pruned"}
//   checkpoints/ the trial's own checkpoint files
//   exit status  0 finished; kExitStopped (75) stopped on request or by signal and can be
//                resumed from its checkpoint; anything else failed.
//
// A torn last line (no trailing newline yet) is not a record until it is complete.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/exit_codes.hpp"
#include "common/result.hpp"

namespace dlsweep::protocol {

inline constexpr const char* kEnvTrialDir = "DLSWEEP_TRIAL_DIR";
inline constexpr const char* kEnvTrialId = "DLSWEEP_TRIAL_ID";
inline constexpr const char* kEnvAttempt = "DLSWEEP_ATTEMPT";
inline constexpr const char* kEnvStudy = "DLSWEEP_STUDY";
/// "1" when the orchestrator makes decisions on a trial's reports (a pruner, stop at the
/// target, population-based training) and writes decided.json after each; "0" otherwise.
inline constexpr const char* kEnvDecides = "DLSWEEP_DECIDES";

inline constexpr const char* kParamsFile = "params.json";
inline constexpr const char* kMetricsFile = "metrics.jsonl";
inline constexpr const char* kControlFile = "control.json";
/// Written by the orchestrator after it has read a trial's records and decided on them
/// (prune, stop at target, PBT interval end): {"attempt": A, "seq": N}, the attempt and the
/// highest record seq decided on. A stop it decided is in control.json before this file says
/// so, so a program that waits for `seq` here after writing record `seq` and then reads
/// control.json gets the decision for that record (dlsweep_trial's should_stop()).
inline constexpr const char* kDecidedFile = "decided.json";
/// Define-by-run: the program appends {"name", "distribution"} requests (suggest_*), dlsweep
/// answers in suggested.json ({name: {"distribution", "value" | "error"}}, written atomically).
inline constexpr const char* kSuggestFile = "suggest.jsonl";
inline constexpr const char* kSuggestedFile = "suggested.json";
inline constexpr const char* kCheckpointDir = "checkpoints";
inline constexpr const char* kStdoutFile = "stdout.log";
inline constexpr const char* kStderrFile = "stderr.log";
/// Created in the trial directory by a program that handles SIGUSR2 (dlsweep_trial's
/// on_preempt): only then does a Slurm time-limit warning reach a `command` trial.
inline constexpr const char* kPreemptHandlerFile = "preempt_handler";
/// Environment: `<study>-<trial number>`, a run name for W&B / TensorBoard.
inline constexpr const char* kEnvRunName = "DLSWEEP_RUN_NAME";

/// Exit status of a trial that finished its work.
inline constexpr int kExitDone = exit_codes::trial::done;
/// Exit status of a trial that stopped on request (control.json) or on SIGTERM/SIGUSR2
/// after writing a checkpoint; it can be resumed. (75 is EX_TEMPFAIL in sysexits.h.)
inline constexpr int kExitStopped = exit_codes::trial::stopped;
/// Exit status of a Slurm batch script whose backend.setup line failed.
inline constexpr int kExitSetupFailed = exit_codes::trial::setup_failed;

enum class RecordKind { eval, checkpoint, final, log };
std::string_view to_string(RecordKind k);
std::optional<RecordKind> parse_record_kind(std::string_view s);

/// One line of metrics.jsonl.
struct Record {
  std::int64_t seq = 0;
  RecordKind kind = RecordKind::eval;
  std::int64_t step = 0;
  double epoch = 0;
  std::int64_t samples = 0;
  double wall_s = 0;
  std::map<std::string, double> metrics;  ///< ordered: serialisation is deterministic
  std::string text;                       ///< log message or checkpoint path; may be empty
};

/// Parses one complete line. Errors name the missing or mistyped field.
Result<Record> parse_record(std::string_view line);
/// One line without the trailing newline.
std::string to_json_line(const Record& r);

/// The control file's content.
struct Control {
  std::string action;  ///< "stop"
  std::string reason;  ///< "pruned", "cancelled", ...
};
std::string to_json(const Control& c);
Result<Control> parse_control(std::string_view text);

}  // namespace dlsweep::protocol
