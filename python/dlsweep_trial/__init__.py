"""dlsweep_trial: the trial protocol of dlsweep for Python training scripts.

Standard library only: ``pip install ./python`` from a dlsweep checkout, or copy the
directory python/dlsweep_trial/ next to your script. Three lines make a script a dlsweep trial::

    import dlsweep_trial as dt
    p = dt.params({"lr": 0.1, "batch_size": 256})     # params.json (defaults outside dlsweep)
    dt.report(step=s, epoch=e, samples=n, val_acc=acc)  # after each evaluation

and, for preemption and requeue on Slurm::

    dt.on_preempt(lambda: torch.save(state, dt.checkpoint_dir() / "last.pt"))
    last = dt.latest_checkpoint()       # None on a first run, and on a rerun that saved nothing
    if last is not None: state = torch.load(last)
    ...
    if dt.should_stop(): break          # pruned or cancelled by dlsweep (control.json),
                                        # or the end of a PBT interval (dt.stop_at())

Load what latest_checkpoint() returns, not a fixed name guarded by resumed(): resumed() is
also true when an earlier run left only records (killed before its first save).

The contract (docs/protocol.md, "The trial protocol"; common/protocol.hpp): dlsweep sets
DLSWEEP_TRIAL_DIR, DLSWEEP_TRIAL_ID, DLSWEEP_ATTEMPT and DLSWEEP_STUDY; the trial reads
params.json, appends one JSON object per line to metrics.jsonl ({"seq", "kind", "step",
"epoch", "samples", "wall_s", "metrics"}), polls control.json, keeps its checkpoints in
checkpoints/, and exits 0 when done or 75 when stopped with a checkpoint (resumable).

Distributed runs (torch.distributed / DDP, torchrun, srun, mpirun): only the global rank 0
writes metrics.jsonl; on every other rank report(), final() and log() do nothing, so the
same script runs unchanged on one rank or many. The rank is taken from an initialised
torch.distributed, else from RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID.

Outside dlsweep (no DLSWEEP_TRIAL_DIR) params() returns the defaults and the reporting
calls do nothing but warn once on stderr, so the script still runs by hand.

The modules, one concept each: protocol (exit statuses, variables, file names), environment
(the trial's identity, the rank), parameters, records (metrics.jsonl), control (should_stop),
checkpoints, preemption (on_preempt), distributions and suggest (define-by-run), outcome;
_state holds all of the library's mutable state.
"""

from __future__ import annotations

import signal
import time

from . import _state
from .checkpoints import checkpoint_dir, latest_checkpoint, resumed
from .control import should_stop, stop_at, stop_reason
from .distributions import _float_distribution
from .environment import RANK_VARIABLES, attempt, is_writer, rank, run_name, study, trial_dir, trial_id
from .outcome import _write_outcome
from .parameters import params
from .preemption import on_preempt
from .protocol import (CHECKPOINT_DIR, CONTROL_FILE, DECIDED_FILE, ENV_ATTEMPT, ENV_DECIDES, ENV_DECISION_WAIT,
                       ENV_STOP_AT, ENV_STUDY, ENV_SUGGEST_WAIT, ENV_TRIAL_DIR, ENV_TRIAL_ID, EXIT_BAD_INPUT,
                       EXIT_DIVERGED, EXIT_DONE, EXIT_FAILURE, EXIT_RESUMABLE, METRICS_FILE, OUTCOME_FILE,
                       PARAMS_FILE, PARAMS_READ_FILE, PREEMPT_HANDLER_FILE, ROTATED_METRICS_FILE, STOP_AT_AXES,
                       SUGGEST_FILE, SUGGESTED_FILE, ProtocolError)
from .records import _start_of, checkpointed, final, log, report
from .suggest import SuggestError, SuggestTimeout, suggest_categorical, suggest_float, suggest_int, suggested

__all__ = [
    "EXIT_DONE", "EXIT_FAILURE", "EXIT_BAD_INPUT", "EXIT_DIVERGED", "EXIT_RESUMABLE",
    "params", "report", "final", "log", "checkpointed", "should_stop", "stop_reason", "stop_at",
    "checkpoint_dir", "latest_checkpoint", "on_preempt", "resumed", "rank", "is_writer", "trial_dir",
    "trial_id", "attempt", "study", "run_name", "ProtocolError",
    "suggest_float", "suggest_int", "suggest_categorical", "suggested", "SuggestError", "SuggestTimeout",
]

__version__ = "0.1.0"


def load_study(study_name=None, storage="sweep.db"):
    """A finished or running study's results, read-only, under Optuna's names: the module
    dlsweep_results (python/dlsweep_results.py; `pip install ./python` installs both)."""
    try:
        import dlsweep_results
    except ImportError:
        raise ImportError("load_study() is in dlsweep_results.py: `pip install ./python` from a dlsweep "
                          "checkout, or copy python/dlsweep_results.py next to the dlsweep_trial/ "
                          "directory") from None
    return dlsweep_results.load_study(study_name=study_name, storage=storage)


_reset_for_tests = _state.reset


def _start_next_trial() -> None:
    """A process kept imported between trials (dlsweep_optuna --serve in a pilot worker) starts
    the next one as a new process would: cached state forgotten, the clock (wall_s) and the
    record of what the trial starts from taken afresh, default signal dispositions."""
    _state.reset()
    _state.start_time = time.time()
    for s in (signal.SIGUSR2, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)
    if trial_dir() is not None:
        _start_of(trial_dir())


if trial_dir() is not None:  # what this run starts from, before it saves anything itself
    _start_of(trial_dir())
