"""checkpoints/: the trial's checkpoint directory, which outlives requeues and retries, the
checkpoint to resume from, and whether there is anything to resume."""

from __future__ import annotations

import pathlib
import re

from . import _state
from .environment import _env_int, trial_dir
from .protocol import CHECKPOINT_DIR, METRICS_FILE

_UNFINISHED_SUFFIXES = (".tmp", ".partial", ".incomplete")


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
    if _state.writer is not None:
        return _state.writer.had_records
    try:
        with open(d / METRICS_FILE, "rb") as f:
            return any(line.strip() for line in f)
    except OSError:
        return False
