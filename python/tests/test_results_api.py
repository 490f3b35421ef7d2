"""dlsweep_results (results from Python, Optuna's names) on real studies run by `dlsweep submit`
(local backend, Python trials): every field against `dlsweep results --format json` and the
best trial against `dlsweep best --format json` (a tie included: the lower trial number wins),
a pruned trial's intermediate values, a retried trial's attempts, a read-only copy, the
errors, and the pandas frame. Needs $DLSWEEP_BIN (ctest sets it)."""
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import types

import pytest

from conftest import LIB_DIR, wait_until

import dlsweep_results as dr
import dlsweep_trial

DLSWEEP = os.environ.get("DLSWEEP_BIN")
pytestmark = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")
HANG_BOUND_S = 600

# quality 0.9 tag b fails (exit 1) at epoch 2 of its first attempt and is retried; the median
# pruner prunes the weak ones at epoch 1; 0.9/a and 0.9/b tie on val_acc.
TRIAL = textwrap.dedent('''
    import os, sys
    import dlsweep_trial as dt
    p = dt.params()
    q, tag = p["quality"], p["tag"]
    for epoch in range(1, 7):
        acc = q * (1 - 0.5 ** epoch)
        dt.report(step=epoch * 10, epoch=epoch, samples=epoch * 640, val_acc=acc, cost=q * 10 + epoch)
        if q == 0.9 and tag == "b" and os.environ.get("DLSWEEP_ATTEMPT") == "0" and epoch == 2:
            sys.exit(1)
        if dt.should_stop():
            break
    else:
        dt.final(step=60, epoch=6, samples=3840, val_acc=acc, cost=q * 10 + 6)
''')

STUDY = textwrap.dedent('''
    name: api-demo
    backend: {{kind: local, max_concurrent: 1}}
    trial:
      command: [{python}, "{{study_dir}}/trial.py"]
      env: {{PYTHONPATH: "{lib}"}}
      max_retries: 1
    objective: {{metric: val_acc, mode: max}}
    pruner: {{kind: median, startup_trials: 2}}
    search: {{algorithm: grid}}
    space:
      quality: [0.9, 0.8, 0.2, 0.1]
      tag: [a, b]
    runs_dir: runs
''')

MULTI = textwrap.dedent('''
    name: api-front
    backend: {{kind: local, max_concurrent: 2}}
    trial:
      command: [{python}, "{{study_dir}}/trial.py"]
      env: {{PYTHONPATH: "{lib}"}}
    objective: [{{metric: val_acc, mode: max}}, {{metric: cost, mode: min}}]
    search: {{algorithm: grid}}
    space:
      quality: [0.5, 0.2, 0.8]
      tag: [a, c]
    runs_dir: runs
''')


def dlsweep(db, *args):
    r = subprocess.run([DLSWEEP, "--db", str(db), *args], cwd=db.parent, capture_output=True, text=True,
                       timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    d = tmp_path_factory.mktemp("results-api")
    (d / "trial.py").write_text(TRIAL)
    (d / "study.yaml").write_text(STUDY.format(python=sys.executable, lib=LIB_DIR))
    (d / "multi.yaml").write_text(MULTI.format(python=sys.executable, lib=LIB_DIR))
    db = d / "sweep.db"
    dlsweep(db, "submit", str(d / "study.yaml"))
    return d, db


@pytest.fixture(scope="module")
def two_studies(sweep):
    d, db = sweep
    dlsweep(db, "submit", str(d / "multi.yaml"))
    return d, db


def test_every_field_agrees_with_dlsweep_results(sweep):
    _d, db = sweep
    study = dr.load_study(study_name="api-demo", storage=str(db))
    assert study.study_name == "api-demo" and study.direction == "maximize" and study.directions == ["maximize"]
    rows = json.loads(dlsweep(db, "results", "api-demo", "--format", "json"))
    assert [t.number for t in study.trials] == sorted(r["trial"] for r in rows)
    by_number = {r["trial"]: r for r in rows}
    for t in study.trials:
        r = by_number[t.number]
        assert t.state == r["state"] and t.state.value == r["state"]
        assert isinstance(t.state, dr.TrialState)
        assert t.params == r["params"]
        assert t.value == r["best_value"] and t.values == [r["best_value"]]
        assert t.last_value == r["value"]
        assert t.attempts == r["attempt"] + 1 and t.attempt == r["attempt"]
        assert t.started_at == pytest.approx(r["started_at"]) and t.ended_at == pytest.approx(r["ended_at"])
        assert t.datetime_start.timestamp() == pytest.approx(r["started_at"])
        assert t.duration.total_seconds() == pytest.approx(r["duration_s"], abs=1e-3)
        assert t.message == r["message"]
        assert (t.steps_to_target, t.time_to_target_s) == (r["steps_to_target"], r["time_to_target_s"])
        if t.state == dr.TrialState.COMPLETE:
            assert t.intermediate_values == {10 * e: t.params["quality"] * (1 - 0.5 ** e) for e in range(1, 7)}
    # the study ran what the test means it to: completes, prunes, a retry
    states = [t.state for t in study.trials]
    assert states.count(dr.TrialState.COMPLETE) == 2 and states.count(dr.TrialState.PRUNED) >= 3


def test_best_trial_is_the_one_dlsweep_best_names_ties_included(sweep):
    _d, db = sweep
    study = dr.load_study("api-demo", str(db))
    best = json.loads(dlsweep(db, "best", "api-demo", "--format", "json"))
    # trials 0 and 1 tie on val_acc: dlsweep best names trial 0, and so does best_trial
    assert study.trials[0].value == study.trials[1].value
    assert study.best_trial.number == best["trial"] == 0
    assert study.best_value == best["best_value"]
    assert study.best_params == best["params"]


def test_a_pruned_trial_keeps_its_intermediate_values(sweep):
    _d, db = sweep
    study = dr.load_study("api-demo", str(db))
    pruned = [t for t in study.trials if t.state == dr.TrialState.PRUNED]
    assert pruned
    for t in pruned:
        assert t.state.is_finished() and t.message.startswith("pruned at epoch 1")
        assert t.intermediate_values == {10: t.params["quality"] * 0.5}
        assert t.value == t.params["quality"] * 0.5


def test_a_retried_trial_counts_its_attempts_and_shows_its_last_curve(sweep):
    _d, db = sweep
    study = dr.load_study("api-demo", str(db))
    t = next(t for t in study.trials if t.params == {"quality": 0.9, "tag": "b"})
    assert t.state == "COMPLETE" and t.attempts == 2
    assert sorted(t.intermediate_values) == [10, 20, 30, 40, 50, 60]
    first = [(att, step) for att, step, _v in t.curve(all_attempts=True) if att == 0]
    assert first == [(0, 10), (0, 20)]
    assert all(att == 1 for att, _s, _v in t.curve())


def test_a_read_only_copy_loads_and_nothing_is_written(sweep, tmp_path):
    _d, db = sweep
    ro = tmp_path / "archive"
    ro.mkdir()
    shutil.copy(db, ro / "sweep.db")
    os.chmod(ro / "sweep.db", 0o444)
    os.chmod(ro, 0o555)
    try:
        before = {p.name: p.stat().st_mtime_ns for p in ro.iterdir()}
        study = dr.load_study(storage=str(ro / "sweep.db"))  # the only study: no name needed
        assert study.study_name == "api-demo" and study.best_trial.number == 0
        assert {p.name: p.stat().st_mtime_ns for p in ro.iterdir()} == before
    finally:
        os.chmod(ro, 0o755)
        os.chmod(ro / "sweep.db", 0o644)


def test_the_immutable_fallback_reads_the_same(sweep, monkeypatch):
    # a reader that would use mode=ro (an orchestrator seems to hold the lock) but cannot open
    # that way (no -wal/-shm can be made) opens immutable
    _d, db = sweep
    monkeypatch.setattr(dr, "_writer_holds_lock", lambda path: True)
    real = dr.sqlite3.connect

    def connect(target, *a, **kw):
        if "immutable=1" not in target:
            raise dr.sqlite3.OperationalError("unable to open database file")
        return real(target, *a, **kw)

    monkeypatch.setattr(dr.sqlite3, "connect", connect)
    assert dr.load_study("api-demo", str(db)).best_trial.number == 0


def test_errors_name_the_file_and_the_studies(two_studies, tmp_path):
    _d, db = two_studies
    with pytest.raises(dr.StudyNotFound) as e:
        dr.load_study("no-such", str(db))
    assert str(db) in str(e.value) and "api-demo, api-front" in str(e.value)
    with pytest.raises(dr.StudyNotFound) as e:
        dr.load_study(storage=str(db))
    assert "which study?" in str(e.value) and "api-demo, api-front" in str(e.value)
    with pytest.raises(FileNotFoundError) as e:
        dr.load_study("api-demo", str(tmp_path / "missing.db"))
    assert "missing.db" in str(e.value)
    assert dr.get_all_study_names(str(db)) == ["api-demo", "api-front"]
    # a file a starting `submit` has created but not yet given its schema: no study yet, not
    # "not a dlsweep database" (the race a live reader hits in its first milliseconds)
    empty = tmp_path / "starting.db"
    dr.sqlite3.connect(str(empty)).close()
    empty.write_bytes(b"")
    with pytest.raises(dr.StudyNotFound, match="no study yet"):
        dr.load_study("live", str(empty))
    assert dr.get_all_study_names(str(empty)) == []
    other = tmp_path / "other.db"
    con = dr.sqlite3.connect(str(other))
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(ValueError, match="not a dlsweep database"):
        dr.load_study("live", str(other))
    # the lazy name in dlsweep_trial and Optuna's sqlite:/// URL
    assert dlsweep_trial.load_study("api-demo", "sqlite:///" + str(db)).best_trial.number == 0


def test_several_objectives_give_the_front_dlsweep_best_prints(two_studies):
    _d, db = two_studies
    study = dr.load_study("api-front", str(db))
    assert study.directions == ["maximize", "minimize"]
    with pytest.raises(RuntimeError, match="best_trials"):
        study.best_trial
    with pytest.raises(RuntimeError, match="directions"):
        study.direction
    best = json.loads(dlsweep(db, "best", "api-front", "--format", "json"))
    assert [t.number for t in study.best_trials] == [p["trial"] for p in best["front"]]
    assert [t.values for t in study.best_trials] == [p["values"] for p in best["front"]]
    rows = {r["trial"]: r for r in json.loads(dlsweep(db, "results", "api-front", "--format", "json"))}
    for t in study.trials:
        assert t.values == [rows[t.number]["objective_val_acc"], rows[t.number]["objective_cost"]]


def test_trials_dataframe_has_optunas_columns(sweep, monkeypatch):
    _d, db = sweep
    study = dr.load_study("api-demo", str(db))
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pandas"):
            study.trials_dataframe()
        # the rows as pandas would get them, through a stand-in
        fake = types.ModuleType("pandas")
        fake.DataFrame = lambda rows: rows
        monkeypatch.setitem(sys.modules, "pandas", fake)
        rows = study.trials_dataframe()
        assert list(rows[0])[:7] == ["number", "value", "datetime_start", "datetime_complete", "duration",
                                     "params_quality", "params_tag"]
        assert [r["state"] for r in rows] == [t.state.value for t in study.trials]
        assert rows[1]["attempts"] == 2
        return
    df = study.trials_dataframe()
    assert list(df.columns)[:7] == ["number", "value", "datetime_start", "datetime_complete", "duration",
                                    "params_quality", "params_tag"]
    assert df["number"].tolist() == [t.number for t in study.trials]
    assert df["state"].tolist() == [t.state.value for t in study.trials]
    assert df.loc[df["value"].idxmax(), "number"] == study.best_trial.number


LIVE_TRIAL = textwrap.dedent('''
    import time
    import dlsweep_trial as dt
    p = dt.params()
    for e in range(1, 4):
        time.sleep(0.4)
        dt.report(step=e, epoch=e, samples=e, val_acc=p["q"] * e)
    dt.final(step=3, epoch=3, samples=3, val_acc=p["q"] * 3)
''')

LIVE = textwrap.dedent('''
    name: live
    backend: {{kind: local, max_concurrent: 1}}
    trial:
      command: [{python}, "{{study_dir}}/trial.py"]
      env: {{PYTHONPATH: "{lib}"}}
    objective: {{metric: val_acc, mode: max}}
    search: {{algorithm: grid}}
    space:
      q: [0.1, 0.2]
    runs_dir: runs
''')


def test_a_running_sweep_reads_through_its_wal(tmp_path):
    (tmp_path / "trial.py").write_text(LIVE_TRIAL)
    (tmp_path / "study.yaml").write_text(LIVE.format(python=sys.executable, lib=LIB_DIR))
    db = tmp_path / "sweep.db"
    proc = subprocess.Popen([DLSWEEP, "--db", str(db), "submit", str(tmp_path / "study.yaml")], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    try:
        def running_with_a_report():
            assert proc.poll() is None, "the sweep ended before trial 0 was seen running with a report"
            if not db.exists():
                return None
            try:
                study = dr.load_study("live", str(db))
            except dr.StudyNotFound:
                return None
            t = study.trials[0] if study.trials else None
            return study if t and t.state == "RUNNING" and t.intermediate_values else None
        seen = wait_until(running_with_a_report, 60, "trial 0 running with a report")
        assert dr._writer_holds_lock(db)
        with pytest.raises(ValueError, match="no best trial yet"):
            seen.best_trial
        assert proc.wait(timeout=HANG_BOUND_S) == 0, proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not dr._writer_holds_lock(db)
    done = dr.load_study("live", str(db))
    assert [t.state for t in done.trials] == ["COMPLETE", "COMPLETE"] and done.best_trial.number == 1
    assert done.trials[1].intermediate_values == {1: 0.2, 2: 0.4, 3: pytest.approx(0.6)}


def test_a_shared_writer_lock_counts_as_a_writer(tmp_path):
    # Several studies' orchestrators hold <db>.lock shared (db/orchestrator_lock): a reader must
    # see any of them as a writer (and not open the file immutable), as it sees an exclusive one.
    db = tmp_path / "sweep.db"
    db.write_bytes(b"")
    assert not dr._writer_holds_lock(db)  # no lock file
    holder_code = ("import fcntl, os, sys\n"
                   "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
                   "fcntl.lockf(fd, fcntl.LOCK_SH if sys.argv[2] == 'sh' else fcntl.LOCK_EX)\n"
                   "print('held', flush=True)\n"
                   "sys.stdin.read()\n")
    for kind in ("sh", "ex"):
        holder = subprocess.Popen([sys.executable, "-c", holder_code, str(db) + ".lock", kind],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "held"
            assert dr._writer_holds_lock(db), kind
        finally:
            holder.stdin.close()
            holder.wait(timeout=HANG_BOUND_S)
        assert not dr._writer_holds_lock(db), kind


def test_the_module_imports_only_the_standard_library_and_pandas_when_asked():
    import ast
    names = set()
    for node in ast.walk(ast.parse((LIB_DIR / "dlsweep_results.py").read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    assert names - set(sys.stdlib_module_names) == {"pandas"}  # only inside trials_dataframe()
