"""outcome.json: the program's own word on how an attempt ended, where its exit status cannot
say it (dlsweep_optuna writes it)."""

from __future__ import annotations

import json
import os
import sys

from .environment import attempt, is_writer, trial_dir
from .protocol import OUTCOME_FILE


def _write_outcome(state: str, reason: str) -> None:
    """outcome.json: {"attempt", "state", "reason"}, written atomically by rank 0: the program's
    own account of how this attempt ended, where the exit status cannot say it — "PRUNED" (it
    stopped itself as pruned: dlsweep_optuna's TrialPruned raised without dlsweep's decision),
    "COMPLETE" (it returned its value after dlsweep advised a prune: Optuna's advisory pruning)."""
    d = trial_dir()
    if d is None or not is_writer():
        return
    tmp = d / f".{OUTCOME_FILE}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps({"attempt": attempt(), "state": state, "reason": reason}) + "\n")
        os.replace(tmp, d / OUTCOME_FILE)
    except OSError as e:
        print(f"dlsweep_trial: cannot write {d / OUTCOME_FILE}: {e}", file=sys.stderr, flush=True)
