"""The contract with dlsweep (docs/protocol.md, "The trial protocol"; common/protocol.hpp and
common/exit_codes.hpp): exit statuses, environment variables, the trial directory's files."""

from __future__ import annotations

# Exit statuses of a trial program (common/exit_codes.hpp, namespace trial).
EXIT_DONE = 0         #: finished its work (after reporting the objective)
EXIT_FAILURE = 1      #: runtime failure: may be transient, retried
EXIT_BAD_INPUT = 2    #: rejected its parameters or data: never retried
EXIT_DIVERGED = 3     #: loss became NaN/inf: never retried
EXIT_RESUMABLE = 75   #: stopped on request or by signal after a checkpoint (EX_TEMPFAIL)

ENV_TRIAL_DIR = "DLSWEEP_TRIAL_DIR"
PREEMPT_HANDLER_FILE = "preempt_handler"  # protocol::kPreemptHandlerFile
ENV_TRIAL_ID = "DLSWEEP_TRIAL_ID"
ENV_ATTEMPT = "DLSWEEP_ATTEMPT"
ENV_STUDY = "DLSWEEP_STUDY"
ENV_STOP_AT = "DLSWEEP_STOP_AT"  # "<epoch|step|samples>:<value>": the end of a PBT interval
ENV_DECISION_WAIT = "DLSWEEP_DECISION_WAIT_S"  # should_stop()'s bound on waiting for a decision
ENV_DECIDES = "DLSWEEP_DECIDES"  # "1": dlsweep decides on reports (pruner, target, PBT) and says when
ENV_SUGGEST_WAIT = "DLSWEEP_SUGGEST_WAIT_S"  # suggest_*'s bound on waiting for an answer
STOP_AT_AXES = ("epoch", "step", "samples")
PARAMS_FILE = "params.json"
PARAMS_READ_FILE = "params_read.json"  # which parameters the program read (dlsweep checks it)
METRICS_FILE = "metrics.jsonl"
DECIDED_FILE = "decided.json"  # the orchestrator's "records up to seq N are decided on"
ROTATED_METRICS_FILE = "metrics.attempt-{}.jsonl"  # an earlier attempt's (engine/trial_files)
CONTROL_FILE = "control.json"
CHECKPOINT_DIR = "checkpoints"
SUGGEST_FILE = "suggest.jsonl"     # protocol::kSuggestFile: rank 0 appends one request per line
SUGGESTED_FILE = "suggested.json"  # protocol::kSuggestedFile: dlsweep's answers, written atomically
OUTCOME_FILE = "outcome.json"  # the program's own word on how the trial ended (protocol::kOutcomeFile)


class ProtocolError(RuntimeError):
    """A file of the trial directory is unusable (params.json missing or not an object)."""
