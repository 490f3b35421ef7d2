"""The distributions of suggest_float / suggest_int / suggest_categorical: Optuna's argument
checks and adjustments, as the JSON dlsweep's sampler reads (suggest.jsonl), and the local
draw a script run by hand gets."""

from __future__ import annotations

import math
import os

from . import _state


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
    import random
    if _state.local_rng is None:
        seed = os.environ.get("DLSWEEP_SEED")
        _state.local_rng = random.Random(int(seed) if seed and seed.strip().lstrip("-").isdigit() else None)
    r = _state.local_rng
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
