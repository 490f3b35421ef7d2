"""Objectives of the shape of four of Optuna's official examples (issue 43, item 7), written here
(examples_shapes/, not copied): a torch classifier with per-epoch reports and pruning
(MedianPruner), a two-objective torch classifier (NSGA-II), a "scikit-learn" classifier whose
cross-validated accuracy is returned once (numpy only: no scikit-learn in CI), and a quadratic
with two constraints. Each runs twice: under `dlsweep submit` with `import optuna` changed to
`import dlsweep_optuna as optuna` and nothing else (the constrained one once more with the one
line that reports its constraints as metrics of its own names), then under Optuna 3.1 itself
with dlsweep's parameters enqueued in dlsweep's order (enqueue_trial), so both tools see the
same parameters in the same order and the comparison is exact: per-trial states and pruned
steps, the values, the Pareto front, the feasibility of each trial and the best feasible trial.
Needs $DLSWEEP_BIN (ctest sets it), Optuna and torch (Debian's python3-optuna, python3-torch;
skipped with that message without)."""
import pathlib
import subprocess
import sys
import textwrap

import pytest

import dlsweep_results
from conftest import LIB_DIR
from test_optuna_compat import DLSWEEP, HANG_BOUND_S, needs_dlsweep

optuna = pytest.importorskip("optuna", reason="Optuna is not installed: apt-get install python3-optuna "
                                              "(scripts/install-deps.sh installs it) for the Optuna examples test")
SHAPES = pathlib.Path(__file__).resolve().parent / "examples_shapes"
# Optuna 3.1 warns that constraints_func is experimental.
pytestmark = [needs_dlsweep, pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")]


def ported(shape, extra=None):
    """The shape's source with its import changed alone (and `extra` = (after, line) inserted)."""
    source = (SHAPES / shape).read_text()
    assert "\nimport optuna\n" in source
    source = source.replace("\nimport optuna\n", "\nimport dlsweep_optuna as optuna\n", 1)
    if extra:
        after, line = extra
        assert after in source
        source = source.replace(after, after + line, 1)
    return source


def dlsweep_sweep(tmp_path, shape, metric, study, extra=None):
    """`dlsweep submit` of the ported shape, one trial at a time; the stored study."""
    (tmp_path / "objective.py").write_text(ported(shape, extra))
    (tmp_path / "study.yaml").write_text(textwrap.dedent(f'''
        name: shape
        backend: {{kind: local, max_concurrent: 1}}
        trial:
          command: [{sys.executable}, -m, dlsweep_optuna, "{{study_dir}}/objective.py:objective", --metric, "{metric}"]
          env: {{PYTHONPATH: "{LIB_DIR}", OMP_NUM_THREADS: "1"}}
        runs_dir: runs
    ''') + textwrap.dedent(study))
    db = tmp_path / "sweep.db"
    r = subprocess.run([DLSWEEP, "--db", str(db), "submit", str(tmp_path / "study.yaml")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    return dlsweep_results.load_study("shape", storage=db), r.stdout + r.stderr


def optuna_study(shape, trials, **create):
    """Optuna itself on the shape as written, the dlsweep trials' parameters enqueued in order."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    namespace = {"__file__": str(SHAPES / shape), "__name__": "shape"}
    exec(compile((SHAPES / shape).read_text(), str(SHAPES / shape), "exec"), namespace)
    study = optuna.create_study(**create)
    for t in trials:
        study.enqueue_trial(dict(t.params))
    study.optimize(namespace["objective"], n_trials=len(trials))
    return study


def states(trials):
    return [t.state.name if t.state.name != "FAIL" else "FAILED" for t in trials]


def test_torch_classifier_with_median_pruning_prunes_the_trials_optuna_prunes(tmp_path):
    got, log = dlsweep_sweep(tmp_path, "torch_pruning.py", "acc", '''
        objective: {metric: acc, mode: max, rank_by: final}
        search: {algorithm: tpe, trials: 8, seed: 0}
        pruner: {kind: median, by: step, startup_trials: 2, warmup: 1}
    ''')
    want = optuna_study("torch_pruning.py", got.trials, direction="maximize",
                        sampler=optuna.samplers.TPESampler(seed=0),
                        pruner=optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=1))
    assert [t.number for t in got.trials] == list(range(8)), log
    assert [t.params for t in want.trials] == [t.params for t in got.trials]
    assert states(got.trials) == states(want.trials), log
    assert states(want.trials).count("PRUNED") >= 1, "the curves must give the pruner work"
    for g, w in zip(got.trials, want.trials):  # pruned at the same step, on the same curve
        assert g.intermediate_values == pytest.approx(w.intermediate_values), g.number
    assert got.best_trial.number == want.best_trial.number
    assert got.best_trial.value == pytest.approx(want.best_value)


def test_two_objective_torch_classifier_gives_optunas_values_and_front(tmp_path):
    got, log = dlsweep_sweep(tmp_path, "torch_two_objectives.py", "acc,weights", '''
        objective: [{metric: acc, mode: max, rank_by: final}, {metric: weights, mode: min, rank_by: final}]
        search: {algorithm: nsga2, trials: 4, seed: 0, population_size: 4}
    ''')
    want = optuna_study("torch_two_objectives.py", got.trials, directions=["maximize", "minimize"],
                        sampler=optuna.samplers.NSGAIISampler(seed=0, population_size=4))
    assert states(got.trials) == states(want.trials) == ["COMPLETE"] * 4, log
    for g, w in zip(got.trials, want.trials):
        assert len(g.values) == len(w.values) == 2
        assert g.values == pytest.approx(w.values), g.number
    assert sorted(t.number for t in got.best_trials) == sorted(t.number for t in want.best_trials)


def test_cross_validated_classifier_returned_once_gives_optunas_values(tmp_path):
    got, log = dlsweep_sweep(tmp_path, "linear_classifier_cv.py", "cv_acc", '''
        objective: {metric: cv_acc, mode: max, rank_by: final}
        search: {algorithm: tpe, trials: 8, seed: 1}
    ''')
    want = optuna_study("linear_classifier_cv.py", got.trials, direction="maximize",
                        sampler=optuna.samplers.TPESampler(seed=1))
    assert states(got.trials) == states(want.trials) == ["COMPLETE"] * 8, log
    assert {t.params["classifier"] for t in got.trials} == {"ridge", "logistic"}, "both branches"
    assert [t.value for t in got.trials] == pytest.approx([t.value for t in want.trials])
    assert got.best_trial.number == want.best_trial.number


def test_constrained_quadratic_is_feasible_where_optunas_is(tmp_path):
    got, log = dlsweep_sweep(tmp_path, "quadratic_constraint.py", "value", '''
        objective: {metric: value, mode: min, rank_by: final}
        constraints: [{metric: c0, max: 0}, {metric: c1, max: 0}]
        search: {algorithm: tpe, trials: 10, seed: 0}
    ''', extra=('trial.set_user_attr("constraint", (c0, c1))\n',
                '    __import__("dlsweep_trial").report(step=0, c0=c0, c1=c1)\n'))
    want = optuna_study("quadratic_constraint.py", got.trials, direction="minimize",
                        sampler=optuna.samplers.TPESampler(
                            seed=0, constraints_func=lambda t: t.user_attrs["constraint"]))
    assert states(got.trials) == states(want.trials) == ["COMPLETE"] * 10, log
    want_feasible = [all(c <= 0 for c in t.user_attrs["constraint"]) for t in want.trials]
    assert [t.violation == 0 for t in got.trials] == want_feasible
    assert 1 <= sum(want_feasible) < 10, "feasible and infeasible trials both"
    assert [t.value for t in got.trials] == pytest.approx([t.value for t in want.trials])
    # Optuna 3.1's best_trial ignores constraints: the best feasible trial, by hand.
    feasible = [t for t, ok in zip(want.trials, want_feasible) if ok]
    assert got.best_trial.number == min(feasible, key=lambda t: t.value).number


def test_constrained_quadratic_with_the_import_changed_alone(tmp_path):
    """set_user_attr("constraint", (c0, c1)), what Optuna's constraints_func reads, records metrics
    constraint_0 and constraint_1, which the study file's `constraints:` names: the shape runs
    with its import changed and nothing else, each trial as feasible as under Optuna (issue 43)."""
    got, log = dlsweep_sweep(tmp_path, "quadratic_constraint.py", "value", '''
        objective: {metric: value, mode: min, rank_by: final}
        constraints: [{metric: constraint_0, max: 0}, {metric: constraint_1, max: 0}]
        search: {algorithm: tpe, trials: 10, seed: 0}
    ''')
    want = optuna_study("quadratic_constraint.py", got.trials, direction="minimize",
                        sampler=optuna.samplers.TPESampler(
                            seed=0, constraints_func=lambda t: t.user_attrs["constraint"]))
    assert states(got.trials) == states(want.trials) == ["COMPLETE"] * 10, log
    want_feasible = [all(c <= 0 for c in t.user_attrs["constraint"]) for t in want.trials]
    assert [t.violation == 0 for t in got.trials] == want_feasible
    assert 1 <= sum(want_feasible) < 10, "feasible and infeasible trials both"
    assert [t.user_attrs["constraint"] for t in got.trials] == [list(t.user_attrs["constraint"]) for t in want.trials]
