"""on_preempt: the warning before a time limit or preemption (Slurm's --signal=USR2, the
SIGTERM of scancel/requeue, dlsweep's own SIGTERM on cancel) saves a checkpoint and exits 75,
or makes should_stop() true."""

from __future__ import annotations

import os
import signal
import sys

from . import _state
from .environment import is_writer, trial_dir
from .protocol import EXIT_FAILURE, EXIT_RESUMABLE, PREEMPT_HANDLER_FILE
from .records import log


def on_preempt(save=None, *, signals=(signal.SIGUSR2, signal.SIGTERM), all_ranks: bool = False):
    """Handles the warning before a time limit or preemption (Slurm's --signal=USR2, the
    SIGTERM of scancel/requeue, dlsweep's own SIGTERM on cancel).

    With `save` (a callable): on the first of `signals`, call save() — on rank 0 only,
    unless all_ranks=True (for sharded checkpoints every rank writes) — then exit 75
    (EXIT_RESUMABLE): dlsweep requeues the trial, which finds its checkpoint (resumed()).
    Further signals during save are ignored.

    Without `save`: the signal only makes should_stop() true, and the training loop saves
    and exits 75 itself at its next step boundary (use this when saving needs collectives
    all ranks must reach together).

    Must be called from the main thread (Python's rule for signal handlers).
    """
    if save is not None and not callable(save):
        raise TypeError("dlsweep_trial.on_preempt: save must be callable (or None)")

    def handler(signum, frame):
        _state.preempted.set()
        if save is None or _state.handler_state["busy"]:
            return
        _state.handler_state["busy"] = True
        name = signal.Signals(signum).name
        try:
            if all_ranks or is_writer():
                save()
                log(f"{name}: checkpoint saved, exiting {EXIT_RESUMABLE} (resumable)")
        except BaseException as e:  # a failed save: no checkpoint, so not resumable
            print(f"dlsweep_trial: {name}: save failed: {e!r}", file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(EXIT_FAILURE)
        sys.stdout.flush()
        sys.stderr.flush()
        sys.exit(EXIT_RESUMABLE)

    for s in signals:
        signal.signal(s, handler)
    if signal.SIGUSR2 in signals and is_writer():
        # Tells dlsweep's Slurm batch script that this program handles the time-limit
        # warning (without this file it is not passed on: Python's default is to die of it).
        d = trial_dir()
        if d is not None:
            try:
                (d / PREEMPT_HANDLER_FILE).write_text(f"{os.getpid()}\n")
            except OSError as e:
                print(f"dlsweep_trial: cannot write {d / PREEMPT_HANDLER_FILE}: {e}", file=sys.stderr, flush=True)
    return handler
