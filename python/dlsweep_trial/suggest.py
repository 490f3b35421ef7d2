"""Define-by-run: suggest_float / suggest_int / suggest_categorical (Optuna's signatures).
Rank 0 asks dlsweep in suggest.jsonl, every rank reads the answer from suggested.json; an
uncaught refusal exits 2 (never retried), an unanswered call 1 (retried)."""

from __future__ import annotations

import json
import os
import pathlib
import sys
import time

from . import _state
from .distributions import _categorical_distribution, _float_distribution, _int_distribution, _local_draw
from .environment import attempt, is_writer, trial_dir
from .parameters import _note_read
from .protocol import ENV_SUGGEST_WAIT, EXIT_BAD_INPUT, EXIT_FAILURE, SUGGEST_FILE, SUGGESTED_FILE

_DEFAULT_SUGGEST_WAIT_S = 120.0


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
    if name in _state.suggested:
        prev_dist, value = _state.suggested[name]
        if _same(prev_dist, dist):
            return value  # Optuna: the same call again gives the same value
        raise SuggestError(f"suggest '{name}': called again with another distribution ({dist} after {prev_dist})")
    d = trial_dir()
    if d is None:
        value = _local_draw(dist)
        _state.suggested[name] = (dist, value)
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
                _state.suggested[name] = (dist, value)
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
    return {k: v for k, (_, v) in _state.suggested.items()}


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
