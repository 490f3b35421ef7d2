"""Stopping: control.json (dlsweep's stop: pruned, cancelled), decided.json (dlsweep has
decided on the records up to a seq: should_stop() answers for the last report), and the end
of a population-based training interval ($DLSWEEP_STOP_AT)."""

from __future__ import annotations

import json
import math
import os
import sys
import time

from . import _state
from .environment import attempt, trial_dir
from .protocol import (CONTROL_FILE, DECIDED_FILE, ENV_DECIDES, ENV_DECISION_WAIT, ENV_STOP_AT, STOP_AT_AXES,
                       ProtocolError)
from .records import _position_on_disk

_DEFAULT_DECISION_WAIT_S = 5.0


def _control() -> dict:
    d = trial_dir()
    if d is None:
        return {}
    try:
        with open(d / CONTROL_FILE, encoding="utf-8") as f:
            c = json.load(f)  # written atomically by dlsweep: never half a file
    except (OSError, ValueError):
        return {}
    return c if isinstance(c, dict) else {}


def stop_at() -> tuple[str, float] | None:
    """Where this run's interval ends, as ("epoch" | "step" | "samples", value), or None.

    dlsweep sets $DLSWEEP_STOP_AT="<axis>:<value>" for a population-based training interval
    (e.g. "epoch:4"): train to that position, report it, save a checkpoint and exit 0; the
    next interval (maybe with other params(), from a copied latest_checkpoint()) goes on from
    there. should_stop() turns true once report() or final() was given a position at or past
    it, or from the start when this attempt's metrics.jsonl already reaches it (a run requeued
    after its interval ended). None outside dlsweep and when the variable is unset or empty."""
    v = os.environ.get(ENV_STOP_AT, "").strip()
    if not v:
        return None
    axis, sep, value = v.partition(":")
    axis = axis.strip()
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not sep or axis not in STOP_AT_AXES or not math.isfinite(number) or number < 0:
        raise ProtocolError(f"{ENV_STOP_AT}={v!r}: expected '<axis>:<value>' with axis one of "
                            f"{', '.join(STOP_AT_AXES)} and a non-negative number, e.g. 'epoch:4'")
    return axis, number


def _interval_ended() -> bool:
    at = stop_at()
    if at is None:
        return False
    _position_on_disk()
    if at[0] not in _state.position:
        return False
    axis, value = at
    return _state.position[axis] >= value - 1e-9 * max(1.0, abs(value))  # epochs summed in floats


def _decided_seq() -> int:
    d = trial_dir()
    if d is None:
        return -1
    try:
        with open(d / DECIDED_FILE, encoding="utf-8") as f:
            c = json.load(f)  # written atomically by dlsweep
    except (OSError, ValueError):
        return -1
    if not isinstance(c, dict) or c.get("attempt") != attempt() or not isinstance(c.get("seq"), int):
        return -1
    return c["seq"]


def _decision_wait_s() -> float:
    try:
        return max(0.0, float(os.environ.get(ENV_DECISION_WAIT, _DEFAULT_DECISION_WAIT_S)))
    except ValueError:
        return _DEFAULT_DECISION_WAIT_S


def _await_decision() -> None:
    """After report(), should_stop() answers for that report: it waits until dlsweep has read
    the record and decided (decided.json names its seq; a stop it decided is in control.json
    before that), when the study has something to decide ($DLSWEEP_DECIDES=1: a pruner, stop at
    the target, PBT). dlsweep reads metrics as they are written (inotify) or every 0.5 s, so the
    wait is normally milliseconds and at most about half a second; the bound (5 s,
    $DLSWEEP_DECISION_WAIT_S) only matters when dlsweep is gone or far behind: then this run
    says so once on stderr and goes on, waiting only briefly until dlsweep answers again."""
    w = _state.writer
    if os.environ.get(ENV_DECIDES) != "1":
        return  # nothing to wait for: the study prunes nothing and stops nothing early
    if w is None or w.last_eval_seq is None or _state.answered_seq >= w.last_eval_seq:
        return
    seq = w.last_eval_seq
    w.sync()
    bound = _decision_wait_s()
    if _state.unanswered_seq is not None:
        if _decided_seq() >= _state.unanswered_seq:
            _state.unanswered_seq = None  # dlsweep answers again
        else:
            bound = min(bound, 0.05)
    deadline = time.monotonic() + bound
    pause = 0.001
    while True:
        got = _decided_seq()
        if got >= seq:
            _state.answered_seq = got
            return
        if _control().get("action") == "stop" or time.monotonic() >= deadline:
            break
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    if _control().get("action") != "stop" and _state.unanswered_seq is None:
        _state.unanswered_seq = seq
        if not _state.said_unanswered:
            _state.said_unanswered = True
            print(f"dlsweep_trial: dlsweep did not answer for record {seq} within {bound:g} s "
                  f"(is its orchestrator running?); going on without waiting for its decisions "
                  f"until it answers", file=sys.stderr, flush=True)


def should_stop() -> bool:
    """True when dlsweep asked this trial to stop (pruned, cancelled: control.json), a
    preemption signal arrived under on_preempt(None), or the last position given to report()
    or final() reached stop_at() (the end of a population-based training interval: save a
    checkpoint and exit 0). After a report() it answers for that report: it waits (normally
    milliseconds, see _await_decision) for dlsweep to have read the record and decided, so a
    trial pruned at epoch N never trains epoch N+1. Cheap enough to call every step."""
    if _state.preempted.is_set():
        return True
    _await_decision()
    return _control().get("action") == "stop" or _interval_ended()


def stop_reason() -> str | None:
    """Why should_stop() is true ("pruned", "cancelled", "preempted", "interval end"), else
    None. A stop dlsweep asked for comes first, then preemption, then the interval's end."""
    c = _control()
    if c.get("action") == "stop":
        return str(c.get("reason") or "stop")
    if _state.preempted.is_set():
        return "preempted"
    return "interval end" if _interval_ended() else None
