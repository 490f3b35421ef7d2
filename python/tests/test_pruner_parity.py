"""`pruner: {kind: median}` and `{kind: percentile}` decide as Optuna's MedianPruner and
PercentilePruner (issue 43, item 2): the same recorded noisy curves are replayed, one trial after
another, by an objective under Optuna 3.1 (study.optimize) and under dlsweep (the same objective
with the import changed, `python3 -m dlsweep_optuna`, through the real `dlsweep submit`), and
every trial must be pruned at the same step or not at all. Needs $DLSWEEP_BIN (ctest sets it) and
Optuna (Debian's python3-optuna; skipped with that message without it)."""
import json
import os
import random
import subprocess
import sys
import textwrap

import pytest

from conftest import LIB_DIR

import dlsweep_results

DLSWEEP = os.environ.get("DLSWEEP_BIN")
pytestmark = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")
optuna = pytest.importorskip("optuna", reason="Optuna is not installed: apt-get install python3-optuna "
                                              "(scripts/install-deps.sh installs it) for the pruner parity test")
HANG_BOUND_S = 600

# One objective for both: replays curve number trial.number, pruning when told.
OBJECTIVE = textwrap.dedent('''
    import json, pathlib
    import {module} as optuna

    CURVES = json.loads(pathlib.Path(__file__).with_name("curves.json").read_text())

    def objective(trial):
        trial.suggest_float("x", 0.0, 1.0)          # a parameter, as every study has
        curve = CURVES[trial.number]
        for step, value in enumerate(curve):
            trial.report(value, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return curve[-1]
''')


def noisy_curves(seed, n, steps):
    """Learning curves that rise to a level of their own, with evaluation noise: the kind of
    curves on which comparing with the others' best-so-far and with their value at the step differ."""
    rng = random.Random(seed)
    curves = []
    for _ in range(n):
        level, rate = rng.uniform(0.5, 0.95), rng.uniform(0.3, 1.0)
        curves.append([round(level * (1 - 0.7 ** (rate * (s + 1))) + rng.gauss(0, 0.03), 6) for s in range(steps)])
    return curves


def optuna_decisions(tmp_path, curves, pruner, direction):
    """{trial number: the step it was pruned at, or None} under Optuna itself."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    (tmp_path / "curves.json").write_text(json.dumps(curves))
    namespace = {"__file__": str(tmp_path / "optuna_objective.py")}
    exec(OBJECTIVE.format(module="optuna"), namespace)
    study = optuna.create_study(direction=direction, pruner=pruner, sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(namespace["objective"], n_trials=len(curves))
    pruned = optuna.trial.TrialState.PRUNED
    return {t.number: max(t.intermediate_values) if t.state == pruned else None for t in study.trials}


def dlsweep_decisions(tmp_path, curves, pruner_yaml, mode):
    (tmp_path / "curves.json").write_text(json.dumps(curves))
    (tmp_path / "objective.py").write_text(OBJECTIVE.format(module="dlsweep_optuna"))
    (tmp_path / "study.yaml").write_text(textwrap.dedent(f'''
        name: parity
        backend: {{kind: local, max_concurrent: 1}}
        trial:
          command: [{sys.executable}, -m, dlsweep_optuna, "{{study_dir}}/objective.py:objective", --metric, acc]
          env: {{PYTHONPATH: "{LIB_DIR}"}}
        objective: {{metric: acc, mode: {mode}, rank_by: final}}
        search: {{algorithm: random, trials: {len(curves)}, seed: 0}}
        pruner: {pruner_yaml}
        runs_dir: runs
    '''))
    db = tmp_path / "sweep.db"
    r = subprocess.run([DLSWEEP, "--db", str(db), "submit", str(tmp_path / "study.yaml")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    study = dlsweep_results.load_study("parity", storage=db)
    assert all(t.state in ("COMPLETE", "PRUNED") for t in study.trials), r.stdout + r.stderr
    return {t.number: max(t.intermediate_values) if t.state == "PRUNED" else None for t in study.trials}, r.stdout


@pytest.mark.parametrize("seed", [1, 2])
def test_median_defaults_decide_as_optunas_median_pruner(tmp_path, seed):
    curves = noisy_curves(seed, 14, 8)
    (tmp_path / "optuna").mkdir()
    want = optuna_decisions(tmp_path / "optuna", curves, optuna.pruners.MedianPruner(), "maximize")
    got, log = dlsweep_decisions(tmp_path, curves, "{kind: median, by: step}", "max")
    assert sum(v is not None for v in want.values()) >= 3, "the curves must give the pruner work"
    assert got == want, log


def test_percentile_with_every_option_decides_as_optunas_percentile_pruner(tmp_path):
    curves = [[-v for v in c] for c in noisy_curves(7, 14, 9)]  # a loss: minimise
    (tmp_path / "optuna").mkdir()
    want = optuna_decisions(tmp_path / "optuna", curves,
                            optuna.pruners.PercentilePruner(40.0, n_startup_trials=3, n_warmup_steps=2,
                                                            interval_steps=2, n_min_trials=3), "minimize")
    got, log = dlsweep_decisions(tmp_path, curves, "{kind: percentile, by: step, percentile: 40, startup_trials: 3, "
                                                   "warmup: 2, interval: 2, min_trials: 3}", "min")
    assert sum(v is not None for v in want.values()) >= 3, "the curves must give the pruner work"
    assert got == want, log
