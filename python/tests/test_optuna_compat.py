"""An Optuna objective under dlsweep_optuna behaves as under Optuna (issue 43): TrialPruned is one
class however the runner is started (the documented `python3 -m dlsweep_optuna file.py:objective`
runs the module as __main__), a self-pruned trial exits 0 and says it pruned itself, a trial that
returns after should_prune() advised a stop says it completed (Optuna's pruning is advice), the
deprecated suggest_* forms work with Optuna's FutureWarning, a second report at a step is ignored,
and set_user_attr() reaches load_study().trials[i].user_attrs. The runner is started as a real
subprocess, as dlsweep starts it; the sweeps run through the real `dlsweep submit` where
$DLSWEEP_BIN is set (ctest sets it)."""
import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import warnings

import pytest

import dlsweep_optuna
import dlsweep_results
import dlsweep_trial as dt
from conftest import LIB_DIR, read_records

DLSWEEP = os.environ.get("DLSWEEP_BIN")
needs_dlsweep = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")
HANG_BOUND_S = 600

# The objective of a user who changed `import optuna` alone; `how` picks the spelling of the raise.
SELF_PRUNING = textwrap.dedent('''
    import os
    import dlsweep_optuna as optuna

    def objective(trial):
        trial.report(0.5, 0)
        how = os.environ.get("HOW", "optuna.TrialPruned")
        if how == "optuna.TrialPruned":
            raise optuna.TrialPruned()
        if how == "optuna.exceptions.TrialPruned":
            raise optuna.exceptions.TrialPruned("bad configuration")
        from dlsweep_optuna import TrialPruned
        raise TrialPruned()
''')


def run_module(tmp_path, source, env=None, args=()):
    """`python3 -m dlsweep_optuna obj.py:objective`, the trial's command in the docs."""
    (tmp_path / "obj.py").write_text(source)
    return subprocess.run([sys.executable, "-m", "dlsweep_optuna", f"{tmp_path / 'obj.py'}:objective", *args],
                          env={**os.environ, "PYTHONPATH": str(LIB_DIR), **(env or {})}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=HANG_BOUND_S)


@pytest.mark.parametrize("how", ["optuna.TrialPruned", "optuna.exceptions.TrialPruned", "from dlsweep_optuna"])
def test_trial_pruned_raised_under_python_m_is_the_class_the_runner_catches(tmp_path, trial, how):
    r = run_module(tmp_path, SELF_PRUNING, {"HOW": how})
    assert r.returncode == dt.EXIT_DONE, r.stderr  # was 1 with a traceback: a second TrialPruned class
    assert "Traceback" not in r.stderr, r.stderr
    assert [rec["kind"] for rec in read_records(trial)] == ["eval"]
    # dlsweep did not ask it to stop: the trial says that it pruned itself (not a lost objective).
    outcome = json.loads((trial / dt.OUTCOME_FILE).read_text())
    assert outcome == {"attempt": 0, "state": "PRUNED", "reason": "the objective raised TrialPruned after step 0"}


def test_trial_pruned_by_hand_outside_dlsweep_exits_0(tmp_path):
    r = run_module(tmp_path, SELF_PRUNING)
    assert r.returncode == dt.EXIT_DONE, r.stderr


def test_a_script_that_still_raises_optunas_own_trial_pruned_is_pruned(trial):
    pytest.importorskip("optuna", reason="Optuna is not installed (apt-get install python3-optuna)")
    import optuna

    def objective(t):
        t.report(0.1, 0)
        raise optuna.TrialPruned()
    assert dlsweep_optuna.run(objective) == dt.EXIT_DONE


def test_pruned_on_dlsweeps_decision_writes_no_outcome(trial):
    (trial / "control.json").write_text(json.dumps({"action": "stop", "reason": "pruned"}))

    def objective(t):
        t.report(0.1, 0)
        if t.should_prune():
            raise dlsweep_optuna.TrialPruned()
        return 0.1
    assert dlsweep_optuna.run(objective) == dt.EXIT_DONE
    assert not (trial / dt.OUTCOME_FILE).exists()  # dlsweep's own decision: nothing to add


def test_other_exceptions_still_fail_the_trial(tmp_path, trial):
    r = run_module(tmp_path, "def objective(trial):\n    raise RuntimeError('out of memory')\n")
    assert r.returncode == dt.EXIT_FAILURE and "RuntimeError: out of memory" in r.stderr


def test_returning_after_should_prune_is_complete_advisory_pruning(trial):
    (trial / "control.json").write_text(json.dumps({"action": "stop", "reason": "pruned"}))

    def ignores_the_advice(t):
        for step in range(3):
            t.report(0.1 * step, step)
            t.should_prune()  # asked, and ignored: Optuna's pruning is advice
        return 0.25
    assert dlsweep_optuna.run(ignores_the_advice, "acc") == dt.EXIT_DONE
    recs = read_records(trial)
    assert [r["kind"] for r in recs] == ["eval", "eval", "eval", "final"]
    assert recs[-1]["metrics"] == {"acc": 0.25}
    outcome = json.loads((trial / dt.OUTCOME_FILE).read_text())
    assert outcome["state"] == "COMPLETE" and "advice" in outcome["reason"]


def test_a_cancelled_trial_that_returns_writes_no_outcome(trial):
    (trial / "control.json").write_text(json.dumps({"action": "stop", "reason": "cancelled"}))
    assert dlsweep_optuna.run(lambda t: 0.5) == dt.EXIT_DONE
    assert not (trial / dt.OUTCOME_FILE).exists()


@pytest.mark.parametrize("call, expect", [
    (lambda t: t.suggest_uniform("u", 0.0, 1.0),
     "suggest_uniform has been deprecated in v3.0.0. This feature will be removed in v6.0.0. "
     "See https://github.com/optuna/optuna/releases/tag/v3.0.0. Use suggest_float instead."),
    (lambda t: t.suggest_loguniform("u", 1e-3, 1.0),
     "suggest_loguniform has been deprecated in v3.0.0. This feature will be removed in v6.0.0. "
     "See https://github.com/optuna/optuna/releases/tag/v3.0.0. Use suggest_float(..., log=True) instead."),
    (lambda t: t.suggest_discrete_uniform("u", 0.0, 1.0, 0.25),
     "suggest_discrete_uniform has been deprecated in v3.0.0. This feature will be removed in v6.0.0. "
     "See https://github.com/optuna/optuna/releases/tag/v3.0.0. Use suggest_float(..., step=...) instead."),
])
def test_deprecated_suggest_forms_work_with_optunas_future_warning(call, expect):
    t = dlsweep_optuna.Trial()
    with pytest.warns(FutureWarning) as got:
        v = call(t)
    assert [str(w.message) for w in got] == [expect]
    assert got[0].filename == __file__  # pointed at the caller, as Optuna's stacklevel does
    assert t.params == {"u": v}


def test_deprecated_forms_ask_dlsweep_the_distribution_suggest_float_would(trial):
    asked = []
    for name, call in [("a", lambda t: t.suggest_uniform("a", 0.0, 2.0)),
                       ("b", lambda t: t.suggest_loguniform("b", 1e-3, 1.0)),
                       ("c", lambda t: t.suggest_discrete_uniform("c", 0.0, 1.0, 0.25))]:
        want = {"a": dt._float_distribution(0.0, 2.0, None, False), "b": dt._float_distribution(1e-3, 1.0, None, True),
                "c": dt._float_distribution(0.0, 1.0, 0.25, False)}[name]
        (trial / "suggested.json").write_text(json.dumps({name: {"distribution": want, "value": 0.5}}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            assert call(dlsweep_optuna.Trial()) == 0.5
        asked.append(json.loads((trial / "suggest.jsonl").read_text().splitlines()[-1])["distribution"])
    assert asked[1]["log"] is True and asked[2]["step"] == 0.25


def test_suggest_int_with_step_by_position_works_with_optunas_future_warning():
    t = dlsweep_optuna.Trial()
    with pytest.warns(FutureWarning, match=r"suggest_int\(\) got \{'step'\} as positional arguments but they were "
                                           r"expected to be given as keyword arguments\."):
        v = t.suggest_int("n", 0, 10, 5)
    assert v in (0, 5, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the keyword form: no warning
        assert t.suggest_int("m", 0, 10, step=5) in (0, 5, 10)
    with pytest.warns(FutureWarning):
        assert t.suggest_int("k", 1, 8, 1, True) in range(1, 9)


def test_a_second_report_at_a_step_is_ignored_with_optunas_warning(trial):
    t = dlsweep_optuna.Trial("acc")
    t.report(0.5, 3)
    with pytest.warns(UserWarning, match="The reported value is ignored because this `step` 3 is already reported."):
        t.report(0.9, 3)
    assert [r["metrics"]["acc"] for r in read_records(trial)] == [0.5]


# ---- through `dlsweep submit`

SWEPT = textwrap.dedent('''
    import dlsweep_optuna as optuna

    def objective(trial):
        x = trial.suggest_float("x", 0.0, 1.0)
        trial.set_user_attr("doubled", 2 * x)
        trial.set_user_attr("tag", "t%d" % trial.number)
        for step in range(3):
            trial.report(x * (step + 1), step)
        if trial.number == 1:
            raise optuna.TrialPruned()   # pruned by its own rule: no pruner in the study
        return x
''')


def sweep(tmp_path, source, trials, pruner=""):
    (tmp_path / "objective.py").write_text(source)
    (tmp_path / "study.yaml").write_text(textwrap.dedent(f'''
        name: compat
        backend: {{kind: local, max_concurrent: 1}}
        trial:
          command: [{sys.executable}, -m, dlsweep_optuna, "{{study_dir}}/objective.py:objective", --metric, acc]
          env: {{PYTHONPATH: "{LIB_DIR}"}}
          max_retries: 2
        objective: {{metric: acc, mode: max, rank_by: final}}
        search: {{algorithm: random, trials: {trials}, seed: 3}}
        runs_dir: runs
    ''') + pruner)
    db = tmp_path / "sweep.db"
    r = subprocess.run([DLSWEEP, "--db", str(db), "submit", str(tmp_path / "study.yaml")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    return r, db


@needs_dlsweep
def test_a_self_pruned_trial_is_never_retried_and_user_attrs_reach_load_study(tmp_path):
    r, db = sweep(tmp_path, SWEPT, 3)
    study = dlsweep_results.load_study("compat", storage=db)
    by_number = {t.number: t for t in study.trials}
    assert by_number[1].attempts == 1, r.stdout + r.stderr  # was 3: exit 1 twice retried
    for n in (0, 2):
        t = by_number[n]
        assert t.state == "COMPLETE"
        assert t.user_attrs == {"doubled": pytest.approx(2 * t.params["x"]), "tag": f"t{n}"}  # was {}
    df = None
    try:
        df = study.trials_dataframe()
    except ImportError:
        pass
    if df is not None:
        assert list(df["user_attrs_tag"]) == ["t0", "t1", "t2"]
    # The CLI's data frames carry them too: `results --format csv` and `export`.
    for verb in (["results", "compat", "--format", "csv"], ["export", "compat"]):
        out = subprocess.run([DLSWEEP, "--db", str(db)] + verb, capture_output=True, text=True, check=True).stdout
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [row["user_attrs_tag"] for row in rows] == ["t0", "t1", "t2"], (verb, out)
        assert float(rows[0]["user_attrs_doubled"]) == pytest.approx(2 * by_number[0].params["x"])


@needs_dlsweep
def test_a_self_pruned_trial_ends_pruned(tmp_path):
    r, db = sweep(tmp_path, SWEPT, 2)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    states = dict(con.execute("SELECT number, state FROM trials").fetchall())
    assert states == {0: "COMPLETE", 1: "PRUNED"}, r.stdout + r.stderr


@needs_dlsweep
def test_dlsweeps_prune_raised_as_trial_pruned_under_python_m_is_pruned_once(tmp_path):
    source = textwrap.dedent('''
        import dlsweep_optuna as optuna

        def objective(trial):
            x = trial.suggest_float("x", 0.0, 1.0)
            for step in range(4):
                trial.report(x, step)
                if trial.should_prune():
                    raise optuna.TrialPruned()
            return x
    ''')
    r, db = sweep(tmp_path, source, 3, "pruner: {kind: threshold, lower: 2.0}\n")  # every report is below 2
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = con.execute("SELECT number, state, attempt, exit_code FROM trials ORDER BY number").fetchall()
    assert rows == [(n, "PRUNED", 0, 0) for n in range(3)], r.stdout + r.stderr  # exit 0: no traceback


@needs_dlsweep
def test_a_trial_that_ignores_should_prune_and_returns_is_complete(tmp_path):
    source = textwrap.dedent('''
        def objective(trial):
            x = trial.suggest_float("x", 0.0, 1.0)
            for step in range(3):
                trial.report(x, step)
                trial.should_prune()     # asked, not obeyed
            return x
    ''')
    r, db = sweep(tmp_path, source, 2, "pruner: {kind: threshold, lower: 2.0}\n")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    assert [s for (s,) in con.execute("SELECT state FROM trials ORDER BY number")] == ["COMPLETE"] * 2, r.stdout


@needs_dlsweep
def test_best_trial_of_tied_values_is_the_first_to_finish_as_in_optuna(tmp_path):
    # Trial 0 and trial 1 tie; trial 0 returns only once the sweep has recorded trial 1 COMPLETE,
    # so trial 1 finished first. Optuna's best_trial keeps the first of equal values to complete.
    source = textwrap.dedent('''
        import os, sqlite3, time

        def objective(trial):
            trial.suggest_float("x", 0.0, 1.0)
            if trial.number == 0:
                db = os.environ["SWEEP_DB"]
                while True:  # a hang bound is the test's timeout
                    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                    done = con.execute("SELECT count(*) FROM trials WHERE number = 1 AND state = 'COMPLETE'").fetchone()[0]
                    con.close()
                    if done:
                        break
                    time.sleep(0.02)
            return 0.5
    ''')
    (tmp_path / "objective.py").write_text(source)
    db = tmp_path / "sweep.db"
    (tmp_path / "study.yaml").write_text(textwrap.dedent(f'''
        name: ties
        backend: {{kind: local, max_concurrent: 2}}
        trial:
          command: [{sys.executable}, -m, dlsweep_optuna, "{{study_dir}}/objective.py:objective", --metric, acc]
          env: {{PYTHONPATH: "{LIB_DIR}", SWEEP_DB: "{db}"}}
        objective: {{metric: acc, mode: max, rank_by: final}}
        search: {{algorithm: random, trials: 2, seed: 3}}
        runs_dir: runs
    '''))
    r = subprocess.run([DLSWEEP, "--db", str(db), "submit", str(tmp_path / "study.yaml")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    study = dlsweep_results.load_study("ties", storage=db)
    assert [t.value for t in study.trials] == [0.5, 0.5]
    assert study.trials[1].datetime_complete <= study.trials[0].datetime_complete
    assert study.best_trial.number == 1  # was 0: trial order
    # One rule everywhere: `best` (text and JSON) and the progress line name the same trial.
    best = json.loads(subprocess.run([DLSWEEP, "--db", str(db), "best", "ties", "--format", "json"],
                                     capture_output=True, text=True, check=True).stdout)
    assert best["trial"] == 1, best
    assert "best acc 0.5 (trial 1)" in r.stdout + r.stderr, r.stdout + r.stderr
