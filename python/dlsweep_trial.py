"""dlsweep_trial: the trial protocol of dlsweep for Python training scripts.

Standard library only, one file: ``pip install ./python`` from a dlsweep checkout, or copy
this file next to your script. Three lines make a script a dlsweep trial::

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
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import signal
import sys
import threading
import time

__all__ = [
    "EXIT_DONE", "EXIT_FAILURE", "EXIT_BAD_INPUT", "EXIT_DIVERGED", "EXIT_RESUMABLE",
    "params", "report", "final", "log", "checkpointed", "should_stop", "stop_reason", "stop_at",
    "checkpoint_dir", "latest_checkpoint", "on_preempt", "resumed", "rank", "is_writer", "trial_dir",
    "trial_id", "attempt", "study", "run_name", "ProtocolError",
    "suggest_float", "suggest_int", "suggest_categorical", "suggested", "SuggestError", "SuggestTimeout",
]

__version__ = "0.1.0"

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
STOP_AT_AXES = ("epoch", "step", "samples")
PARAMS_FILE = "params.json"
METRICS_FILE = "metrics.jsonl"
DECIDED_FILE = "decided.json"  # the orchestrator's "records up to seq N are decided on"
ROTATED_METRICS_FILE = "metrics.attempt-{}.jsonl"  # an earlier attempt's (engine/trial_files)
CONTROL_FILE = "control.json"
CHECKPOINT_DIR = "checkpoints"

# Environment variables that carry the global rank, most specific launcher first: torchrun
# (and users of torch.distributed) set RANK; mpirun sets OMPI_COMM_WORLD_RANK (Open MPI) or
# PMI_RANK (MPICH, Intel MPI); srun --mpi=pmix sets PMIX_RANK; srun sets SLURM_PROCID. A
# torchrun started by srun once per node sees SLURM_PROCID = node index, so RANK wins.
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")

_START = time.time()  # wall_s counts from the import of this module (about program start)


class ProtocolError(RuntimeError):
    """A file of the trial directory is unusable (params.json missing or not an object)."""


def trial_dir() -> pathlib.Path | None:
    """The trial directory ($DLSWEEP_TRIAL_DIR), or None outside dlsweep."""
    d = os.environ.get(ENV_TRIAL_DIR)
    return pathlib.Path(d) if d else None


def _env_int(name: str, default: int | None) -> int | None:
    v = os.environ.get(name, "").strip()
    try:
        return int(v) if v else default
    except ValueError:
        return default


def trial_id() -> int | None:
    """The trial's number (as `dlsweep status` shows it), or None outside dlsweep."""
    return _env_int(ENV_TRIAL_ID, None)


def attempt() -> int:
    """0 for the first launch, +1 per retry (a requeue keeps the attempt)."""
    return _env_int(ENV_ATTEMPT, 0)


def study() -> str | None:
    """The study's name, or None outside dlsweep."""
    return os.environ.get(ENV_STUDY) or None


def run_name() -> str | None:
    """`<study>-<trial number>`, for W&B/TensorBoard run names ($DLSWEEP_RUN_NAME if set)."""
    if os.environ.get("DLSWEEP_RUN_NAME"):
        return os.environ["DLSWEEP_RUN_NAME"]
    s, n = study(), trial_id()
    return f"{s}-{n}" if s is not None and n is not None else None


def rank() -> int:
    """This process's global rank: 0 when not distributed."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None:
        try:
            if dist.is_available() and dist.is_initialized():
                return int(dist.get_rank())
        except Exception:  # an odd torch build: fall back to the environment
            pass
    for name in RANK_VARIABLES:
        r = _env_int(name, None)
        if r is not None:
            return r
    return 0


def is_writer() -> bool:
    """True on the one process that writes metrics.jsonl (global rank 0)."""
    return rank() == 0


# ---------------------------------------------------------------------------------------
# params.json

_params_cache: dict | None = None


def params(defaults: dict | None = None) -> dict:
    """The trial's hyperparameters: `defaults` updated with params.json.

    Outside dlsweep (no DLSWEEP_TRIAL_DIR) returns a copy of `defaults` (or {}), so the
    script runs by hand. Inside, a missing or malformed params.json raises ProtocolError.
    """
    global _params_cache
    out = dict(defaults or {})
    d = trial_dir()
    if d is None:
        return out
    if _params_cache is None:
        path = d / PARAMS_FILE
        try:
            with open(path, encoding="utf-8") as f:
                loaded = json.load(f)
        except FileNotFoundError:
            raise ProtocolError(f"{path}: missing (dlsweep writes it before launch; "
                                f"is {ENV_TRIAL_DIR} right?)") from None
        except (OSError, ValueError) as e:
            raise ProtocolError(f"{path}: cannot read it as JSON: {e}") from None
        if not isinstance(loaded, dict):
            raise ProtocolError(f"{path}: expected a JSON object, got {type(loaded).__name__}")
        _params_cache = loaded
    out.update(_params_cache)
    return _TrackedParams(out, set(_params_cache), set(out) - set(_params_cache))


PARAMS_READ_FILE = "params_read.json"  # which parameters the program read (dlsweep checks it)
_params_read: set = set()
_params_defaulted: set = set()


def _note_read(keys, from_file: set, defaulted: set) -> None:
    """Records that the program read `keys` (params_read.json, rewritten atomically when a key
    is read for the first time), so dlsweep can name a study parameter nobody read (a typo in
    the study, read by the script under another name with a default)."""
    new_read = {k for k in keys if k in from_file} - _params_read
    new_def = {k for k in keys if k in defaulted} - _params_defaulted
    if not new_read and not new_def:
        return
    _params_read.update(new_read)
    _params_defaulted.update(new_def)
    d = trial_dir()
    if d is None or not is_writer():
        return
    tmp = d / f".{PARAMS_READ_FILE}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps({"read": sorted(_params_read), "defaulted": sorted(_params_defaulted)}))
        os.replace(tmp, d / PARAMS_READ_FILE)
    except OSError:
        pass  # a read-only trial directory: dlsweep then does not check


class _TrackedParams(dict):
    """params()' dict: notes which keys the program reads. Reading every key at once (iterating,
    items(), copying, json.dumps, **p) counts as reading them all."""

    def __init__(self, data: dict, from_file: set, defaulted: set):
        super().__init__(data)
        self._from_file = from_file
        self._defaulted = defaulted

    def _note(self, keys) -> None:
        _note_read(keys, self._from_file, self._defaulted)

    def __getitem__(self, key):
        self._note((key,))
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._note((key,))
        return super().get(key, default)

    def __contains__(self, key):
        self._note((key,))
        return super().__contains__(key)

    def _all(self):
        self._note(tuple(super().keys()))

    def __iter__(self):
        self._all()
        return super().__iter__()

    def keys(self):
        self._all()
        return super().keys()

    def items(self):
        self._all()
        return super().items()

    def values(self):
        self._all()
        return super().values()

    def copy(self):
        self._all()
        return dict(super().items())

    def pop(self, key, *default):
        self._note((key,))
        return super().pop(key, *default)

    def setdefault(self, key, default=None):
        self._note((key,))
        return super().setdefault(key, default)


# ---------------------------------------------------------------------------------------
# metrics.jsonl

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


# What this run found when it started (taken at import, before the program saves anything of
# its own): (trial dir, a checkpoint was there, the last wall_s of the latest earlier attempt).
_start_state: tuple[pathlib.Path, bool, float | None] | None = None


def _start_of(d: pathlib.Path) -> tuple[pathlib.Path, bool, float | None]:
    global _start_state
    if _start_state is None or _start_state[0] != d:
        try:
            ck = _find_checkpoint(d / CHECKPOINT_DIR, "*") is not None
        except OSError:
            ck = False
        _start_state = (d, ck, _earlier_attempt_wall(d) if ck else None)
    return _start_state


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
                   "wall_s": wall_s if wall_s is not None else self.wall_offset + time.time() - _START,
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


_writer: _Writer | None = None
_warned_outside = False


def _get_writer() -> _Writer | None:
    global _writer, _warned_outside
    if not is_writer():
        return None
    d = trial_dir()
    if d is None:
        if not _warned_outside:
            _warned_outside = True
            print(f"dlsweep_trial: {ENV_TRIAL_DIR} is not set: metrics are not recorded "
                  "(running outside dlsweep)", file=sys.stderr, flush=True)
        return None
    if _writer is None or _writer.path != d / METRICS_FILE:
        _writer = _Writer(d / METRICS_FILE)
    return _writer


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
    return (_position.get("step", 0) if step is None else step,
            _position.get("epoch", 0.0) if epoch is None else epoch,
            _position.get("samples", 0) if samples is None else samples)


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


# ---------------------------------------------------------------------------------------
# control.json, checkpoints, preemption

_preempted = threading.Event()


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


# The last position report() or final() was given in this process (every rank keeps it).
_position: dict = {}


def _note_position(step, epoch, samples) -> None:
    try:
        _position.update(step=int(step), epoch=float(epoch), samples=int(samples))
    except (TypeError, ValueError, OverflowError):
        pass  # _record raises the clear error


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


def _position_on_disk() -> None:
    """Before this run reported anything: where this attempt's metrics.jsonl already got to (a
    run requeued after it reached its interval's end, e.g. on a node failure, must not train
    past it). Read once; the last whole record with a position counts."""
    global _position_checked
    if _position or _position_checked:
        return
    _position_checked = True
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
            if _position:
                return


_position_checked = False


def _interval_ended() -> bool:
    at = stop_at()
    if at is None:
        return False
    _position_on_disk()
    if at[0] not in _position:
        return False
    axis, value = at
    return _position[axis] >= value - 1e-9 * max(1.0, abs(value))  # epochs summed in floats


# Waiting for dlsweep's decision on the last report (_await_decision).
_DEFAULT_DECISION_WAIT_S = 5.0
_answered_seq = -1       # the highest seq dlsweep said it decided on (decided.json)
_unanswered_seq = None   # the seq whose wait ran out (dlsweep unreachable): short waits until it answers
_said_unanswered = False


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
    global _answered_seq, _unanswered_seq, _said_unanswered
    w = _writer
    if os.environ.get(ENV_DECIDES) != "1":
        return  # nothing to wait for: the study prunes nothing and stops nothing early
    if w is None or w.last_eval_seq is None or _answered_seq >= w.last_eval_seq:
        return
    seq = w.last_eval_seq
    w.sync()
    bound = _decision_wait_s()
    if _unanswered_seq is not None:
        if _decided_seq() >= _unanswered_seq:
            _unanswered_seq = None  # dlsweep answers again
        else:
            bound = min(bound, 0.05)
    deadline = time.monotonic() + bound
    pause = 0.001
    while True:
        got = _decided_seq()
        if got >= seq:
            _answered_seq = got
            return
        if _control().get("action") == "stop" or time.monotonic() >= deadline:
            break
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    if _control().get("action") != "stop" and _unanswered_seq is None:
        _unanswered_seq = seq
        if not _said_unanswered:
            _said_unanswered = True
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
    if _preempted.is_set():
        return True
    _await_decision()
    return _control().get("action") == "stop" or _interval_ended()


def stop_reason() -> str | None:
    """Why should_stop() is true ("pruned", "cancelled", "preempted", "interval end"), else
    None. A stop dlsweep asked for comes first, then preemption, then the interval's end."""
    c = _control()
    if c.get("action") == "stop":
        return str(c.get("reason") or "stop")
    if _preempted.is_set():
        return "preempted"
    return "interval end" if _interval_ended() else None


def checkpoint_dir() -> pathlib.Path:
    """The trial's checkpoints/ directory (created if missing). It outlives requeues and
    retries of the trial. Outside dlsweep: ./checkpoints."""
    d = trial_dir()
    p = (d if d is not None else pathlib.Path.cwd()) / CHECKPOINT_DIR
    p.mkdir(parents=True, exist_ok=True)
    return p


def _natural(name: str) -> list:
    """Sort key: "epoch-10.pt" after "epoch-9.pt"."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name) if t]


def _find_checkpoint(ck: pathlib.Path, pattern: str) -> pathlib.Path | None:
    best, best_key = None, None
    try:
        entries = list(ck.glob(pattern)) if ck.is_dir() else []
    except (OSError, ValueError):
        return None
    for e in entries:
        name = e.name
        if name.startswith(".") or name.endswith(_UNFINISHED_SUFFIXES) or e.parent != ck:
            continue
        try:
            mtime = e.stat().st_mtime_ns
        except OSError:  # removed meanwhile, or a dangling link
            continue
        key = (mtime, _natural(name))
        if best_key is None or key > best_key:
            best, best_key = e, key
    return best


_UNFINISHED_SUFFIXES = (".tmp", ".partial", ".incomplete")


def latest_checkpoint(pattern: str = "*") -> pathlib.Path | None:
    """The checkpoint to resume from: the newest entry of checkpoint_dir() (file, or
    directory for sharded checkpoints) whose name matches `pattern` (a glob: "*.pt"), or
    None when there is none — on a first run, and on a rerun whose earlier run saved
    nothing (killed before its first save). Newest: latest modification time, then the
    name read with numbers as numbers ("epoch-10.pt" after "epoch-9.pt"). Names starting
    with "." or ending in .tmp, .partial or .incomplete are skipped: a save in progress
    that writes a temporary name and renames it (torch.save to "last.pt.tmp", then
    os.replace) leaves only such a name when it is killed midway.

    Outside dlsweep (no DLSWEEP_TRIAL_DIR) None, like resumed(): a script run by hand
    starts from scratch. Use it as `if (last := dt.latest_checkpoint()): torch.load(last)`.
    """
    d = trial_dir()
    if d is None:
        return None
    return _find_checkpoint(d / CHECKPOINT_DIR, pattern)


def resumed() -> bool:
    """True when an earlier run of this trial left something to resume from: a checkpoint
    (latest_checkpoint() is not None), records in this attempt's metrics.jsonl, or a Slurm
    requeue (SLURM_RESTART_COUNT > 0). Call it before the first report(). It may be true
    with no checkpoint at all (a run killed before its first save): to load one, use
    latest_checkpoint(), which says which, or None."""
    d = trial_dir()
    if d is None:
        return False
    if (_env_int("SLURM_RESTART_COUNT", 0) or 0) > 0:
        return True
    if _find_checkpoint(d / CHECKPOINT_DIR, "*") is not None:
        return True
    if _writer is not None:
        return _writer.had_records
    try:
        with open(d / METRICS_FILE, "rb") as f:
            return any(line.strip() for line in f)
    except OSError:
        return False


_handler_state = {"busy": False}


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
        _preempted.set()
        if save is None or _handler_state["busy"]:
            return
        _handler_state["busy"] = True
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


# ---------------------------------------------------------------------------------------
# Define-by-run: suggest_float / suggest_int / suggest_categorical (Optuna's signatures)

SUGGEST_FILE = "suggest.jsonl"     # protocol::kSuggestFile: rank 0 appends one request per line
SUGGESTED_FILE = "suggested.json"  # protocol::kSuggestedFile: dlsweep's answers, written atomically
ENV_SUGGEST_WAIT = "DLSWEEP_SUGGEST_WAIT_S"
_DEFAULT_SUGGEST_WAIT_S = 120.0
_suggested: dict = {}  # name -> (distribution, value) answered in this process
_local_rng = None


class SuggestError(ValueError):
    """dlsweep refused a suggest_* call (it contradicts the study file's declaration of the
    name, or an earlier trial's call for it), or did not answer in time. Uncaught, the program
    exits 2 (EXIT_BAD_INPUT): a deterministic failure, never retried."""


class SuggestTimeout(SuggestError):
    """dlsweep did not answer a suggest_* call within $DLSWEEP_SUGGEST_WAIT_S (its orchestrator
    is gone). Uncaught, the program exits 1 (EXIT_FAILURE): transient, retried while the study's
    max_retries allows."""


def _suggest_wait_s() -> float:
    try:
        return max(0.0, float(os.environ.get(ENV_SUGGEST_WAIT, _DEFAULT_SUGGEST_WAIT_S)))
    except ValueError:
        return _DEFAULT_SUGGEST_WAIT_S


def _float_distribution(low, high, step, log) -> dict:
    for what, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"suggest_float: {what} must be a finite number, got {v!r}")
    low, high = float(low), float(high)
    if step is not None and log:
        raise ValueError("suggest_float: the parameter `step` is not supported when `log` is true")
    if low > high:
        raise ValueError(f"suggest_float: low <= high must hold, got low={low!r}, high={high!r}")
    if log and low <= 0.0:
        raise ValueError(f"suggest_float: low > 0 must hold when log=True, got low={low!r}")
    if step is not None:
        if isinstance(step, bool) or not isinstance(step, (int, float)) or not step > 0:
            raise ValueError(f"suggest_float: step > 0 must hold, got step={step!r}")
        step = float(step)
        high = low + math.floor((high - low) / step + 1e-9) * step  # Optuna adjusts high so
    return {"type": "float", "low": low, "high": high, "log": bool(log), "step": step}


def _int_distribution(low, high, step, log) -> dict:
    for what, v in (("low", low), ("high", high), ("step", step)):
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                continue
            raise ValueError(f"suggest_int: {what} must be an int, got {v!r}")
    low, high, step = int(low), int(high), int(step)
    if step <= 0:
        raise ValueError(f"suggest_int: step > 0 must hold, got step={step}")
    if log and step != 1:
        raise ValueError("suggest_int: the parameter `step` > 1 is not supported when `log` is true")
    if low > high:
        raise ValueError(f"suggest_int: low <= high must hold, got low={low}, high={high}")
    if log and low < 1:
        raise ValueError(f"suggest_int: low >= 1 must hold when log=True, got low={low}")
    high = low + (high - low) // step * step
    return {"type": "int", "low": low, "high": high, "log": bool(log), "step": step}


def _categorical_distribution(choices) -> dict:
    choices = list(choices)
    if not choices:
        raise ValueError("suggest_categorical: choices must contain one or more elements")
    for c in choices:
        if c is not None and not isinstance(c, (bool, int, float, str)):
            raise ValueError(f"suggest_categorical: choices must be None, bool, int, float or str, got {c!r} "
                             f"of type {type(c).__name__}")
    return {"type": "categorical", "choices": choices}


def _local_draw(dist: dict):
    """Outside dlsweep: a draw from the distribution with random.Random($DLSWEEP_SEED or
    unseeded), so the script runs by hand."""
    global _local_rng
    import random
    if _local_rng is None:
        seed = os.environ.get("DLSWEEP_SEED")
        _local_rng = random.Random(int(seed) if seed and seed.strip().lstrip("-").isdigit() else None)
    r = _local_rng
    if dist["type"] == "categorical":
        return r.choice(dist["choices"])
    low, high, step, log = dist["low"], dist["high"], dist["step"], dist["log"]
    if dist["type"] == "int":
        if log:
            v = int(round(math.exp(r.uniform(math.log(low - 0.5 if low > 0.5 else low), math.log(high + 0.5)))))
            return min(max(v, low), high)
        return low + r.randrange((high - low) // step + 1) * step
    if step is not None:
        return min(high, low + r.randrange(int(round((high - low) / step)) + 1) * step)
    if log:
        return math.exp(r.uniform(math.log(low), math.log(high)))
    return r.uniform(low, high)


def _read_suggested(d: pathlib.Path) -> dict:
    try:
        with open(d / SUGGESTED_FILE, encoding="utf-8") as f:
            c = json.load(f)  # written atomically by dlsweep
    except (OSError, ValueError):
        return {}
    return c if isinstance(c, dict) else {}


def _same(a, b) -> bool:
    return json.loads(json.dumps(a)) == json.loads(json.dumps(b))


def _suggest(name: str, dist: dict):
    if not isinstance(name, str) or not name:
        raise ValueError(f"suggest: the name must be a non-empty str, got {name!r}")
    if name in _suggested:
        prev_dist, value = _suggested[name]
        if _same(prev_dist, dist):
            return value  # Optuna: the same call again gives the same value
        raise SuggestError(f"suggest '{name}': called again with another distribution ({dist} after {prev_dist})")
    d = trial_dir()
    if d is None:
        value = _local_draw(dist)
        _suggested[name] = (dist, value)
        return value
    # Every rank waits for dlsweep's answer in suggested.json; rank 0 alone asks (dlsweep
    # removes both files when it launches the trial, so an answer there is for this launch).
    if is_writer():
        line = json.dumps({"name": name, "distribution": dist, "attempt": attempt()}) + "\n"
        fd = os.open(d / SUGGEST_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))  # one write of a whole line (O_APPEND)
        finally:
            os.close(fd)
    bound = _suggest_wait_s()
    deadline = time.monotonic() + bound
    pause = 0.001
    while True:
        a = _read_suggested(d).get(name)
        if isinstance(a, dict) and _same(a.get("distribution"), dist):
            if "error" in a:
                raise SuggestError(f"dlsweep refused {name!r}: {a['error']}")
            if "value" in a:
                value = a["value"]
                _suggested[name] = (dist, value)
                _note_read((name,), {name}, set())  # a study parameter asked for is read
                return value
        if time.monotonic() >= deadline:
            raise SuggestTimeout(
                f"dlsweep did not answer suggest {name!r} within {bound:g} s ({d / SUGGESTED_FILE}); is its "
                f"orchestrator running? (the bound is ${ENV_SUGGEST_WAIT})")
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def suggest_float(name: str, low: float, high: float, *, step: float | None = None, log: bool = False) -> float:
    """A float in [low, high] chosen by the study's sampler (Optuna's trial.suggest_float:
    `log` samples in log space, `step` on the grid low, low+step, ... <= high).

    Under dlsweep the orchestrator answers: the study file's value when it declares `name`
    (after checking the call agrees: `uniform`/`log_uniform` with the same bounds), the
    trial's stored value when it was asked before (resume, retry, another rank), else a draw
    of the study's sampler, stored in the trial's params. Global rank 0 asks (suggest.jsonl),
    every rank gets the same value (suggested.json). The wait is normally milliseconds; its
    bound (120 s, $DLSWEEP_SUGGEST_WAIT_S) covers an orchestrator that sees the file late
    (a shared file system's attribute cache, up to 60 s) and raises SuggestTimeout (exit 1
    uncaught: retried) only when dlsweep is gone. Outside dlsweep: a local random draw ($DLSWEEP_SEED seeds it)."""
    dist = _float_distribution(low, high, step, log)
    return float(_suggest(name, dist))


def suggest_int(name: str, low: int, high: int, step: int = 1, log: bool = False) -> int:
    """An int in [low, high] on the grid low, low+step, ... (Optuna's trial.suggest_int;
    `log` samples in log space and needs step 1). Answered as suggest_float."""
    dist = _int_distribution(low, high, step, log)
    return int(_suggest(name, dist))


def suggest_categorical(name: str, choices):
    """One of `choices` (None, bool, int, float or str; Optuna's trial.suggest_categorical).
    Answered as suggest_float."""
    return _suggest(name, _categorical_distribution(choices))


def suggested() -> dict:
    """The values suggest_* gave in this process, by name (Optuna's trial.params)."""
    return {k: v for k, (_, v) in _suggested.items()}


_previous_excepthook = sys.excepthook


def _excepthook(kind, value, tb):
    _previous_excepthook(kind, value, tb)
    if isinstance(value, SuggestError):  # uncaught: a refusal is deterministic (never retried)
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(EXIT_FAILURE if isinstance(value, SuggestTimeout) else EXIT_BAD_INPUT)


sys.excepthook = _excepthook


def load_study(study_name=None, storage="sweep.db"):
    """A finished or running study's results, read-only, under Optuna's names: the module
    dlsweep_results (python/dlsweep_results.py; `pip install ./python` installs both)."""
    try:
        import dlsweep_results
    except ImportError:
        raise ImportError("load_study() is in dlsweep_results.py: `pip install ./python` from a dlsweep "
                          "checkout, or copy python/dlsweep_results.py next to dlsweep_trial.py") from None
    return dlsweep_results.load_study(study_name=study_name, storage=storage)


def _reset_for_tests() -> None:
    """Forgets cached state (params, open metrics file, preemption flag). Tests only."""
    global _params_cache, _writer, _warned_outside, _start_state, _position_checked
    global _answered_seq, _unanswered_seq, _said_unanswered
    if _writer is not None:
        os.close(_writer.fd)
    _params_cache, _writer, _warned_outside, _start_state = None, None, False, None
    _answered_seq, _unanswered_seq, _said_unanswered = -1, None, False
    _params_read.clear()
    _params_defaulted.clear()
    global _local_rng
    _suggested.clear()
    _local_rng = None
    _position_checked = False
    _preempted.clear()
    _position.clear()
    _handler_state["busy"] = False


OUTCOME_FILE = "outcome.json"  # the program's own word on how the trial ended (protocol::kOutcomeFile)


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


def _start_next_trial() -> None:
    """A process kept imported between trials (dlsweep_optuna --serve in a pilot worker) starts
    the next one as a new process would: cached state forgotten, the clock (wall_s) and the
    record of what the trial starts from taken afresh, default signal dispositions."""
    global _START
    _reset_for_tests()
    _START = time.time()
    for s in (signal.SIGUSR2, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)
    if trial_dir() is not None:
        _start_of(trial_dir())


if trial_dir() is not None:  # what this run starts from, before it saves anything itself
    _start_of(trial_dir())
