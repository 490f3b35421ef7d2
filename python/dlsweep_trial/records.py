"""metrics.jsonl: the trial's records (report, final, log, checkpointed), appended as whole
lines by global rank 0, numbered and timed across requeues and resuming retries, and the
position (step, epoch, samples) the trial last reported."""

from __future__ import annotations

import json
import math
import os
import pathlib
import signal
import sys
import threading
import time

from . import _state
from .checkpoints import _find_checkpoint, checkpoint_dir
from .environment import attempt, is_writer, trial_dir
from .protocol import CHECKPOINT_DIR, ENV_TRIAL_DIR, METRICS_FILE, ROTATED_METRICS_FILE


def _scan_records(data: bytes) -> tuple[int, float | None, bool]:
    """(next seq, the largest finite wall_s or None, whether any record) of whole lines."""
    next_seq, wall, had = 0, None, False
    for line in data.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("seq"), int):
            continue
        had = True
        next_seq = max(next_seq, rec["seq"] + 1)
        w = rec.get("wall_s")
        if isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w):
            wall = float(w) if wall is None else max(wall, float(w))
    return next_seq, wall, had


def _earlier_attempt_wall(d: pathlib.Path) -> float | None:
    """The last wall_s recorded by the latest earlier attempt that recorded one: dlsweep
    renames each finished attempt's metrics.jsonl to metrics.attempt-<N>.jsonl."""
    for n in range(attempt() - 1, -1, -1):
        try:
            data = (d / ROTATED_METRICS_FILE.format(n)).read_bytes()
        except OSError:
            continue
        wall = _scan_records(data[:data.rfind(b"\n") + 1])[1]
        if wall is not None:
            return wall
    return None


def _start_of(d: pathlib.Path) -> tuple[pathlib.Path, bool, float | None]:
    """What this run found when it started in `d` (_state.start_state), taken once."""
    if _state.start_state is None or _state.start_state[0] != d:
        try:
            ck = _find_checkpoint(d / CHECKPOINT_DIR, "*") is not None
        except OSError:
            ck = False
        _state.start_state = (d, ck, _earlier_attempt_wall(d) if ck else None)
    return _state.start_state


class _Writer:
    """Appends whole lines to metrics.jsonl. Numbering (seq) and wall_s continue a file left
    by an earlier run of the same attempt (a requeue after preemption); a new attempt that
    found a checkpoint when it started (a retry resuming) continues wall_s from the last
    record of the attempt before it, so a resumed curve never goes back in time."""

    def __init__(self, path: pathlib.Path):
        self.path = path
        self.lock = threading.RLock()
        self.next_seq, self.wall_offset, self.had_records = self._scan()
        if not self.had_records:
            _, checkpoint_at_start, earlier_wall = _start_of(path.parent)
            if checkpoint_at_start and earlier_wall is not None:
                self.wall_offset = max(earlier_wall, 0.0)
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def _scan(self) -> tuple[int, float, bool]:
        """(next seq, wall_s to continue from, whether records exist); cuts a torn last line."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return 0, 0.0, False
        complete = data.rfind(b"\n") + 1
        if complete < len(data):  # a run killed mid-write: the torn line is no record
            with open(self.path, "r+b") as f:
                f.truncate(complete)
        next_seq, wall, had = _scan_records(data[:complete])
        return next_seq, max(wall, 0.0) if wall is not None else 0.0, had

    def write(self, kind: str, step, epoch, samples, wall_s, metrics: dict, text: str | None):
        with self.lock:
            seq = self.next_seq  # taken first: a signal handler reporting meanwhile gets seq+1
            self.next_seq += 1
            rec = {"seq": seq, "kind": kind, "step": step, "epoch": epoch, "samples": samples,
                   "wall_s": wall_s if wall_s is not None else self.wall_offset + time.time() - _state.start_time,
                   "metrics": metrics}
            if text is not None:
                rec["text"] = text
            line = (json.dumps(rec, allow_nan=False) + "\n").encode("utf-8")
            view = memoryview(line)
            while view:  # one write() normally; a short write is continued, never left torn
                n = os.write(self.fd, view)
                view = view[n:]
            if kind == "eval":
                self.last_eval_seq = seq
                self.synced = False

    last_eval_seq: int | None = None
    synced = True

    def sync(self) -> None:
        """Makes the records written so far visible to an orchestrator on another host (a
        shared filesystem writes back appended data late otherwise). Once per eval record."""
        with self.lock:
            if not self.synced:
                self.synced = True
                try:
                    os.fsync(self.fd)
                except OSError:
                    pass


def _get_writer() -> _Writer | None:
    if not is_writer():
        return None
    d = trial_dir()
    if d is None:
        if not _state.warned_outside:
            _state.warned_outside = True
            print(f"dlsweep_trial: {ENV_TRIAL_DIR} is not set: metrics are not recorded "
                  "(running outside dlsweep)", file=sys.stderr, flush=True)
        return None
    if _state.writer is None or _state.writer.path != d / METRICS_FILE:
        _state.writer = _Writer(d / METRICS_FILE)
    return _state.writer


def _number(name: str, v) -> float | int | None:
    if not isinstance(name, str) or not name:
        raise TypeError(f"dlsweep_trial: metric names must be non-empty strings, got {name!r}")
    if isinstance(v, bool):
        return 1 if v else 0
    if isinstance(v, int):
        return v
    try:
        f = float(v)  # numpy scalars, 0-dim torch tensors (call .item() on GPU tensors first)
    except (TypeError, ValueError):
        raise TypeError(f"dlsweep_trial: metric {name!r} must be a number, got "
                        f"{type(v).__name__} {v!r}") from None
    return f if math.isfinite(f) else None  # NaN/inf are stored as SQL NULL


def _int(name: str, v) -> int:
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(float("inf"))
        raise TypeError(f"dlsweep_trial: {name} must be a whole number, got {v!r}") from None


def _float(name: str, v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):  # OverflowError: float(10**400)
        raise TypeError(f"dlsweep_trial: {name} must be a number, got {v!r}") from None
    if not math.isfinite(f):
        raise ValueError(f"dlsweep_trial: {name} must be finite, got {v!r}")
    return f


def _record(kind: str, step, epoch, samples, wall_s, metrics: dict, text=None) -> None:
    w = _get_writer()
    if w is None:
        return
    m = {k: _number(k, v) for k, v in metrics.items()}
    w.write(kind, _int("step", step), _float("epoch", epoch), _int("samples", samples),
            None if wall_s is None else _float("wall_s", wall_s), m, text)


def report(*, step: int, epoch: float = 0.0, samples: int = 0, wall_s: float | None = None,
           **metrics) -> None:
    """Records one evaluation: `report(step=940, epoch=4.0, samples=240640, val_acc=0.87)`.

    step: optimizer steps so far; epoch: passes over the data (fractional); samples:
    training samples seen so far (time- and samples-to-target use them). wall_s defaults to
    seconds since this module was imported, continued after a rerun that resumes: from the
    last record of this attempt (a requeue), or, for a retry that found a checkpoint when it
    started, from the last record of the attempt before (a lower bound of the time spent:
    what ran after that record is not counted; a checkpointed() after each save keeps the
    gap small; on_preempt(save) records one itself). Metric values are
    numbers (NaN/inf are recorded as null). Only global rank 0 writes.
    """
    _note_position(step, epoch, samples)
    _record("eval", step, epoch, samples, wall_s, metrics)


def final(*, step: int = 0, epoch: float = 0.0, samples: int = 0, wall_s: float | None = None,
          **metrics) -> None:
    """Records the final result (kind "final"); exit 0 afterwards.

    From here on the time-limit warning (SIGUSR2) is ignored: the work is done, and Python
    resets its own handlers to the default action (death) while it shuts down, so a warning
    arriving during the exit would otherwise turn a finished trial into a failed one."""
    _note_position(step, epoch, samples)
    _record("final", step, epoch, samples, wall_s, metrics)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)


def _here(step, epoch, samples) -> tuple:
    """The position a record without one is given: what the caller passed, else where the
    trial last reported (this run's report()/final(), or this attempt's metrics.jsonl), else 0."""
    if step is None or epoch is None or samples is None:
        _position_on_disk()
    position = _state.position
    return (position.get("step", 0) if step is None else step,
            position.get("epoch", 0.0) if epoch is None else epoch,
            position.get("samples", 0) if samples is None else samples)


def log(text: str, *, step: int | None = None, epoch: float | None = None, samples: int | None = None) -> None:
    """A free-text note in the trial's record (kind "log"), at the position given or, by
    default, where the trial last reported."""
    _record("log", *_here(step, epoch, samples), None, {}, str(text))


def checkpointed(path=None, *, step: int | None = None, epoch: float | None = None,
                 samples: int | None = None) -> None:
    """Notes that a checkpoint was written (kind "checkpoint", text = its path), at the
    position given or, by default, where the trial last reported (a checkpoint saved after
    report(step=940, epoch=4) is recorded at step 940, epoch 4)."""
    _record("checkpoint", *_here(step, epoch, samples), None, {}, str(path if path is not None else checkpoint_dir()))


def _note_position(step, epoch, samples) -> None:
    try:
        _state.position.update(step=int(step), epoch=float(epoch), samples=int(samples))
    except (TypeError, ValueError, OverflowError):
        pass  # _record raises the clear error


def _position_on_disk() -> None:
    """Before this run reported anything: where this attempt's metrics.jsonl already got to (a
    run requeued after it reached its interval's end, e.g. on a node failure, must not train
    past it). Read once; the last whole record with a position counts."""
    if _state.position or _state.position_checked:
        return
    _state.position_checked = True
    d = trial_dir()
    if d is None:
        return
    try:
        data = (d / METRICS_FILE).read_bytes()
    except OSError:
        return
    for line in reversed(data[:data.rfind(b"\n") + 1].splitlines()):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("kind") in ("eval", "final"):
            _note_position(rec.get("step"), rec.get("epoch"), rec.get("samples"))
            if _state.position:
                return
