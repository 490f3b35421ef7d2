"""dlsweep_optuna — run an Optuna objective under dlsweep, unchanged but for its import.

    import dlsweep_optuna as optuna          # instead of `import optuna`

    def objective(trial):
        n_layers = trial.suggest_int("n_layers", 1, 3)
        lr = trial.suggest_float("lr", 1e-5, 1e-1, log=True)
        for epoch in range(10):
            acc = train_one_epoch(...)
            trial.report(acc, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return acc

and in the study file, as the trial's command (the runner, `python3 -m dlsweep_optuna`):

    trial:
      command: [python3, -m, dlsweep_optuna, "{study_dir}/my_objective.py:objective", --metric, acc]
    objective: {metric: acc, mode: max, rank_by: final}

The runner imports the objective (`path/to/file.py:name` or `package.module:name`), calls it
with a Trial and records its return value as the trial's final value (metric `--metric`,
default "value"). TrialPruned is one class however the runner is started (`-m` hands over to
the imported module), and Optuna's own optuna.TrialPruned counts too. An objective that prunes
itself (raises TrialPruned without dlsweep's decision) or returns its value after should_prune()
advised a stop (Optuna's pruning is advice) says so in outcome.json of the trial directory
(PRUNED, COMPLETE). Exit status as the trial protocol wants it: 0 done or pruned, 2 a refused
suggest (SuggestError: never retried), 3 a NaN/inf return value, 75 preempted, 1 any other
exception or a suggest dlsweep did not answer (SuggestTimeout; retried per the study's
max_retries).

The Trial is Optuna's define-by-run trial over dlsweep_trial: suggest_* ask the study's sampler
through the orchestrator (dlsweep_trial.suggest_float); report(value, step) writes an eval
record at step (and epoch) `step`; should_prune() answers for the last report (it waits for the
orchestrator's decision, decided.json); set_user_attr() keeps attributes in user_attrs.json of
the trial directory (load_study().trials[i].user_attrs reads them back); set_user_attr("constraint",
(c0, c1, ...)), what Optuna's examples hand to constraints_func, also records metrics constraint_0,
constraint_1, ... for the study file's `constraints:`. suggest_uniform,
suggest_loguniform, suggest_discrete_uniform and suggest_int's positional step/log work with
Optuna's FutureWarning. Outside dlsweep (no DLSWEEP_TRIAL_DIR) suggest_* draw locally and reports
print nothing: `python3 -m dlsweep_optuna file.py:objective` runs one trial by hand.
"""
from __future__ import annotations

if __name__ == "__main__":
    # `python3 -m dlsweep_optuna` runs this file as the module __main__, and the objective's own
    # `import dlsweep_optuna` would load it a second time: two TrialPruned classes, and the one
    # the objective raises would not be the one the runner catches (exit 1, retried). The runner
    # is therefore the module everybody imports; this copy only hands over to it.
    import sys

    import dlsweep_optuna

    sys.exit(dlsweep_optuna.main())

import argparse
import importlib
import importlib.util
import json
import math
import numbers
import os
import pathlib
import sys
import time
import traceback
import warnings

import dlsweep_trial as dt

__all__ = ["Trial", "TrialPruned", "run", "main"]


class TrialPruned(Exception):
    """Raise it from the objective when should_prune() is true (optuna.TrialPruned)."""


class exceptions:  # noqa: N801 — optuna.exceptions.TrialPruned
    TrialPruned = TrialPruned


def _is_trial_pruned(e: BaseException) -> bool:
    """The exception the runner takes for "pruned": this module's TrialPruned, and Optuna's own
    (optuna.TrialPruned, optuna.exceptions.TrialPruned) for a script that still imports it."""
    if isinstance(e, TrialPruned):
        return True
    return any(c.__name__ == "TrialPruned" and c.__module__.split(".")[0] == "optuna" for c in type(e).__mro__)


# Optuna's deprecation warnings, word for word (optuna/_deprecated.py and trial/_trial.py; suggest_int's
# positional step and log: optuna/_convert_positional_args.py).
_DEPRECATED = ("{name} has been deprecated in v3.0.0. This feature will be removed in v6.0.0. "
               "See https://github.com/optuna/optuna/releases/tag/v3.0.0. Use suggest_float{args} instead.")


def _deprecated(name: str, args: str = "") -> None:
    warnings.warn(_DEPRECATED.format(name=name, args=args), FutureWarning, stacklevel=3)


class Trial:
    """Optuna's `trial` over the dlsweep trial protocol (see the module's doc)."""

    def __init__(self, metric: str = "value"):
        self._metric = metric
        self._last_step = None
        self._steps: set = set()
        self.user_attrs: dict = {}
        self._constraints: dict = {}  # set_user_attr("constraint", ...) as metrics for the final record

    @property
    def number(self) -> int:
        """The trial's number in the study (0 outside dlsweep)."""
        n = dt.trial_id()
        return 0 if n is None else n

    @property
    def params(self) -> dict:
        """The values suggest_* gave so far, by name."""
        return dt.suggested()

    def suggest_float(self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False) -> float:
        return dt.suggest_float(name, low, high, step=step, log=log)

    def suggest_int(self, name: str, low: int, high: int, *args, step: int = 1, log: bool = False) -> int:
        """Optuna's suggest_int; `step` and `log` given by position work, with Optuna's FutureWarning."""
        if args:
            names = ["step", "log"][:len(args)]
            if len(args) > 2:
                raise TypeError(f"suggest_int() takes 6 positional arguments but {len(args) + 4} were given.")
            warnings.warn(f"suggest_int() got {set(names)} as positional arguments but they were expected to be "
                          "given as keyword arguments.", FutureWarning, stacklevel=2)
            step = args[0]
            if len(args) > 1:
                log = args[1]
        return dt.suggest_int(name, low, high, step=step, log=log)

    def suggest_categorical(self, name: str, choices):
        return dt.suggest_categorical(name, choices)

    # Optuna 3.x keeps these deprecated forms working, with a FutureWarning.
    def suggest_uniform(self, name: str, low: float, high: float) -> float:
        _deprecated("suggest_uniform")
        return self.suggest_float(name, low, high)

    def suggest_loguniform(self, name: str, low: float, high: float) -> float:
        _deprecated("suggest_loguniform", "(..., log=True)")
        return self.suggest_float(name, low, high, log=True)

    def suggest_discrete_uniform(self, name: str, low: float, high: float, q: float) -> float:
        _deprecated("suggest_discrete_uniform", "(..., step=...)")
        return self.suggest_float(name, low, high, step=q)

    def report(self, value: float, step: int) -> None:
        """An intermediate value at `step` (recorded as step and epoch `step`, so a pruner
        `by: step` or `by: epoch` compares trials at the same step). As in Optuna, a second
        report at a step already reported is ignored, with a warning."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise TypeError(f"report: step must be a non-negative int, got {step!r}")
        value = float(value)
        if step in self._steps:
            warnings.warn(f"The reported value is ignored because this `step` {step} is already reported.")
            return
        self._steps.add(step)
        self._last_step = step
        dt.report(step=step, epoch=float(step), **{self._metric: value})

    def should_prune(self) -> bool:
        """True when dlsweep decided to stop this trial on its last report (pruned, or
        cancelled): raise TrialPruned then. Advisory, as in Optuna: an objective that goes on
        and returns normally ends COMPLETE."""
        return dt.should_stop()

    def set_user_attr(self, key: str, value) -> None:
        json.dumps(value)  # must be JSON-serialisable, as in Optuna's storages
        self.user_attrs[key] = value
        if key == "constraint" and _constraint_values(value):
            # Optuna's examples hand their constraints to constraints_func as the user attribute
            # "constraint": recorded with the objective's value in the final record as metrics
            # constraint_0, constraint_1, ..., which the study file's `constraints:` may name.
            self._constraints = {f"constraint_{i}": float(v) for i, v in enumerate(value)}
        d = dt.trial_dir()
        if d is None or not dt.is_writer():
            return
        tmp = d / f".user_attrs.json.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(self.user_attrs, sort_keys=True))
        os.replace(tmp, d / "user_attrs.json")


def _constraint_values(value) -> bool:
    """True when `value` is what Optuna's constraints_func returns: a non-empty sequence of numbers."""
    return (isinstance(value, (list, tuple)) and len(value) > 0 and
            all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value))


def _load(target: str):
    if ":" not in target:
        raise SystemExit(f"dlsweep_optuna: expected FILE.py:FUNCTION or MODULE:FUNCTION, got {target!r}")
    where, name = target.rsplit(":", 1)
    if where.endswith(".py") or os.sep in where:
        path = pathlib.Path(where)
        sys.path.insert(0, str(path.resolve().parent))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise SystemExit(f"dlsweep_optuna: cannot load {where}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise SystemExit(f"dlsweep_optuna: {where} has no function {name!r}")
    return fn


def _pruned_exit(trial: Trial) -> int:
    """The exit of an objective that raised TrialPruned: 75 when a preemption stopped it
    (resumable), else 0. When dlsweep had not asked it to stop (the objective pruned itself), the
    trial says so in outcome.json: PRUNED, not a run that forgot its objective."""
    reason = dt.stop_reason()
    if reason == "preempted":
        return dt.EXIT_RESUMABLE
    if reason is None:
        at = f" after step {trial._last_step}" if trial._last_step is not None else " before its first report"
        dt._write_outcome("PRUNED", f"the objective raised TrialPruned{at}")
    return dt.EXIT_DONE


def run(objective, metric: str = "value") -> int:
    """Calls objective(Trial) and records its return value; returns the exit status."""
    trial = Trial(metric)
    try:
        value = objective(trial)
    except dt.SuggestError as e:
        traceback.print_exc()
        return dt.EXIT_FAILURE if isinstance(e, dt.SuggestTimeout) else dt.EXIT_BAD_INPUT
    except Exception as e:  # noqa: BLE001 — TrialPruned, whichever module's; anything else goes on up
        if not _is_trial_pruned(e):
            raise
        return _pruned_exit(trial)
    metrics = [metric] if "," not in metric else metric.split(",")
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) != len(metrics) or any(v is None for v in values):
        print(f"dlsweep_optuna: the objective returned {value!r}; expected {len(metrics)} number(s) for "
              f"{', '.join(metrics)}", file=sys.stderr)
        return dt.EXIT_FAILURE
    values = [float(v) for v in values]
    if any(not math.isfinite(v) for v in values):
        print(f"dlsweep_optuna: the objective returned {value!r} (not finite): diverged", file=sys.stderr)
        return dt.EXIT_DIVERGED
    step = trial._last_step if trial._last_step is not None else 0
    dt.final(step=step, epoch=float(step), **{**trial._constraints, **dict(zip(metrics, values))})
    if dt.stop_reason() == "pruned":
        # Optuna's pruning is advice: an objective that did not stop when should_prune() said so
        # and returned its value is COMPLETE there; the trial says so for dlsweep to record.
        dt._write_outcome("COMPLETE", "the objective returned its value after dlsweep's pruner advised a stop "
                                      "(should_prune() is advice, as in Optuna)")
    if dt.trial_dir() is None:
        print(f"{', '.join(f'{m} = {v:g}' for m, v in zip(metrics, values))}; params {json.dumps(trial.params)}")
    return dt.EXIT_DONE


def _run_one(objective, metric: str, job: dict, base_env: dict) -> int:
    """One trial of --serve, as a fresh process would run it: the trial's environment and
    directory, its stdout.log/stderr.log, dlsweep_trial's state reset."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.environ.clear()
    os.environ.update(base_env)
    os.environ.update({str(k): str(v) for k, v in job.get("env", {}).items()})
    os.chdir(job["dir"])
    for fd, name in ((1, job["stdout"]), (2, job["stderr"])):
        f = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(f, fd)
        os.close(f)
    dt._start_next_trial()
    try:
        rc = run(objective, metric)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else dt.EXIT_FAILURE)
    except BaseException:  # noqa: BLE001 — as an uncaught exception ends a fresh process: exit 1
        traceback.print_exc()
        rc = dt.EXIT_FAILURE
    sys.stdout.flush()
    sys.stderr.flush()
    return rc


def serve(objective, metric: str, serve_dir: str) -> int:
    """--serve DIR: stay imported and run trial after trial for a pilot worker (backend.workers
    with keep_imported). The worker writes DIR/job.json ({"seq", "dir", "env", "stdout",
    "stderr"}, atomically) for each trial and waits for DIR/done.json ({"seq", "exit_code"}).
    Ends when DIR/stop appears or the worker (the parent) is gone."""
    d = pathlib.Path(serve_dir)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("DLSWEEP_")}
    parent = os.getppid()
    last = 0
    idle_since = time.monotonic()
    while True:
        if os.getppid() != parent or (d / "stop").exists():
            return 0
        try:
            job = json.loads((d / "job.json").read_text())
        except (OSError, ValueError):
            job = None
        if not isinstance(job, dict) or int(job.get("seq", 0)) <= last:
            # The next trial usually follows the last one's end within milliseconds (one at a
            # time, trials of a few ms cost what the hand-over costs): look often at first, then
            # back off while idle.
            idle = time.monotonic() - idle_since
            time.sleep(0.001 if idle < 0.5 else 0.005 if idle < 5 else 0.02)
            continue
        last = int(job["seq"])
        rc = _run_one(objective, metric, job, base_env)
        tmp = d / f".done.json.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"seq": last, "exit_code": int(rc)}))
        os.replace(tmp, d / "done.json")
        idle_since = time.monotonic()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m dlsweep_optuna",
                                 description="Run an Optuna objective(trial) as a dlsweep trial.")
    ap.add_argument("target", help="FILE.py:FUNCTION or MODULE:FUNCTION")
    ap.add_argument("--metric", default="value",
                    help="the name its return value (and report()) is recorded under: the study's "
                         "objective.metric (comma-separated for several objectives); default: value")
    ap.add_argument("--serve", metavar="DIR", default=None,
                    help="(pilot workers, backend keep_imported) stay imported and run the trials handed "
                         "over in DIR one after another")
    a = ap.parse_args(argv)
    if a.serve is not None:
        return serve(_load(a.target), a.metric, a.serve)
    return run(_load(a.target), a.metric)

