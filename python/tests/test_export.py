"""`dlsweep results --format csv|json` and `dlsweep export [--curves]` read back as data
frames: with pandas when python3-pandas is installed, else with the csv module. One real
study (Python trials through `dlsweep submit`, local backend) feeds every test."""
import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from conftest import LIB_DIR

DLSWEEP = os.environ.get("DLSWEEP_BIN")
pytestmark = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")
HANG_BOUND_S = 600

try:
    import pandas
except ImportError:
    pandas = None

TRIAL = textwrap.dedent('''
    import dlsweep_trial as dt
    p = dt.params()
    w = 4.0
    for step in range(1, 31):
        w -= p["lr"] * 2 * w
        if step % 10 == 0:
            dt.report(step=step, epoch=step / 30, samples=step * p["batch_size"], loss=w * w,
                      odd=float("nan") if step == 20 else step)
    dt.final(step=30, epoch=1.0, samples=30 * p["batch_size"], loss=w * w)
''')

STUDY = textwrap.dedent('''
    name: py-export
    backend: {{kind: local, max_concurrent: 2}}
    trial:
      command: [{python}, "{{study_dir}}/trial.py"]
      env: {{PYTHONPATH: "{lib}"}}
      unread_params: [note]  # a label for the export, never read by the program
    objective: {{metric: loss, mode: min}}
    search: {{algorithm: grid}}
    space:
      lr: [0.05, 0.1, 0.2]
      batch_size: [32, 64]
    fixed: {{note: 'say "hi", then stop'}}
    runs_dir: runs
''')


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    d = tmp_path_factory.mktemp("export")
    (d / "trial.py").write_text(TRIAL)
    (d / "study.yaml").write_text(STUDY.format(python=sys.executable, lib=LIB_DIR))
    db = d / "sweep.db"
    r = subprocess.run([DLSWEEP, "--db", str(db), "submit", str(d / "study.yaml")], cwd=d, capture_output=True,
                       text=True, timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    return d, db


def dlsweep(db, *args, check=True):
    r = subprocess.run([DLSWEEP, "--db", str(db), *args], capture_output=True, text=True, timeout=HANG_BOUND_S)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def read_frame(text):
    """Column name -> list of cells, through pandas if installed (None for empty cells)."""
    if pandas is not None:
        df = pandas.read_csv(io.StringIO(text))
        return {c: [None if pandas.isna(v) else v for v in df[c].tolist()] for c in df.columns}
    rows = list(csv.DictReader(io.StringIO(text)))
    cols = {c: [] for c in (rows[0].keys() if rows else [])}
    for row in rows:
        for c, v in row.items():
            if v == "":
                cols[c].append(None)
            else:
                try:
                    cols[c].append(int(v))
                except ValueError:
                    try:
                        cols[c].append(float(v))
                    except ValueError:
                        cols[c].append(v)
    return cols


def test_results_csv_is_a_data_frame_with_prefixed_params_and_times(sweep):
    _, db = sweep
    f = read_frame(dlsweep(db, "results", "py-export", "--format", "csv").stdout)
    assert list(f)[:5] == ["trial", "state", "attempt", "value", "best_value"]
    assert {"params_lr", "params_batch_size", "params_note"} <= set(f)
    assert not {"lr", "batch_size", "note"} & set(f)
    assert f["trial"] == [0, 1, 2, 3, 4, 5]
    assert f["state"] == ["COMPLETE"] * 6
    assert f["params_lr"] == [0.05, 0.05, 0.1, 0.1, 0.2, 0.2]  # grid: last key fastest
    assert f["params_batch_size"] == [32, 64] * 3
    assert f["params_note"] == ['say "hi", then stop'] * 6  # quoting survives
    for lr, v in zip(f["params_lr"], f["value"]):
        w = 4.0
        for _ in range(30):
            w -= lr * 2 * w
        assert v == pytest.approx(w * w, rel=1e-12)
    for s, e, d in zip(f["started_at"], f["ended_at"], f["duration_s"]):
        assert s is not None and e is not None and e >= s
        assert d == pytest.approx(e - s, abs=1e-6)
    # the same times as the events log says
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    first_running = [x for (x,) in con.execute(
        "SELECT min(e.at) FROM events e JOIN trials t ON t.id = e.trial_id "
        "WHERE e.to_state = 'RUNNING' GROUP BY t.number ORDER BY t.number")]
    assert f["started_at"] == pytest.approx(first_running, abs=1e-6)


def test_results_json_has_the_same_columns_and_keeps_the_params_object(sweep):
    _, db = sweep
    rows = json.loads(dlsweep(db, "results", "py-export", "--format", "json").stdout)
    assert len(rows) == 6
    for r in rows:
        assert r["params_lr"] == r["params"]["lr"] and r["params_batch_size"] == r["params"]["batch_size"]
        assert r["duration_s"] == pytest.approx(r["ended_at"] - r["started_at"])
    if pandas is not None:
        df = pandas.read_json(io.StringIO(dlsweep(db, "results", "py-export", "--format", "json").stdout))
        assert df["params_batch_size"].tolist() == [32, 64] * 3


def test_export_without_curves_equals_results_csv(sweep, tmp_path):
    _, db = sweep
    out = tmp_path / "trials.csv"
    dlsweep(db, "export", "py-export", "-o", str(out))
    assert out.read_text() == dlsweep(db, "results", "py-export", "--format", "csv").stdout
    assert [p.name for p in tmp_path.iterdir()] == ["trials.csv"]  # no temp file left


def test_export_curves_is_the_metrics_table_in_long_form(sweep, tmp_path):
    _, db = sweep
    out = tmp_path / "curves.csv"
    dlsweep(db, "export", "py-export", "--curves", "--format", "csv", "-o", str(out))
    text = out.read_text()
    assert text.splitlines()[0] == "trial,attempt,seq,kind,step,epoch,samples,wall_s,metric,value"
    f = read_frame(text)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    expected = con.execute(
        "SELECT t.number, m.attempt, m.seq, m.kind, m.step, m.epoch, m.samples, m.wall_s, m.name, m.value "
        "FROM metrics m JOIN trials t ON t.id = m.trial_id ORDER BY t.number, m.attempt, m.seq, m.name").fetchall()
    # 6 trials x (3 evals x 2 metrics + 1 final x 1 metric)
    assert len(expected) == 6 * 7
    got = list(zip(*(f[c] for c in ["trial", "attempt", "seq", "kind", "step", "epoch", "samples", "wall_s",
                                    "metric", "value"])))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g[:5] == e[:5] and g[8] == e[8]
        assert g[5] == pytest.approx(e[5]) and g[6] == e[6] and g[7] == pytest.approx(e[7], rel=1e-12)
        assert (g[9] is None and e[9] is None) or g[9] == pytest.approx(e[9], rel=1e-12)
    odd_at_20 = [v for t, s, m, v in zip(f["trial"], f["step"], f["metric"], f["value"]) if m == "odd" and s == 20]
    assert odd_at_20 == [None] * 6  # NaN was recorded as null, exported as an empty cell
    if pandas is not None:  # the documented recipe: one loss curve per batch size
        curves = pandas.read_csv(out)
        loss = curves[(curves.metric == "loss") & (curves.kind == "eval") & (curves.trial == 0)]
        assert loss.step.tolist() == [10, 20, 30]


def test_parquet_is_refused_with_the_reason(sweep, tmp_path):
    _, db = sweep
    r = dlsweep(db, "export", "py-export", "--curves", "--format", "parquet", "-o", str(tmp_path / "c.parquet"),
                check=False)
    assert r.returncode == 2
    assert "Debian 12 packages no C/C++ Parquet library" in r.stderr and "use --format csv" in r.stderr
    assert not any(tmp_path.iterdir())


def test_results_parquet_is_refused_with_the_reason_too(sweep):
    # docs/results.md: "`--format parquet` stops with exit 2 saying so" — `results` said only
    # "--format: parquet not in {table,csv,json}".
    _, db = sweep
    r = dlsweep(db, "results", "py-export", "--format", "parquet", check=False)
    assert r.returncode == 2
    assert "Debian 12 packages no C/C++ Parquet library" in r.stderr and "use --format csv" in r.stderr
    assert r.stdout == ""


def test_export_errors_name_the_problem(sweep, tmp_path):
    _, db = sweep
    r = dlsweep(db, "export", "nope", check=False)
    assert r.returncode == 2 and "no study named 'nope'" in r.stderr
    r = dlsweep(db, "export", "py-export", "-o", str(tmp_path / "missing" / "x.csv"), check=False)
    assert r.returncode == 1 and "cannot create" in r.stderr
    r = dlsweep(db, "export", "py-export", "-o", str(tmp_path), check=False)  # a folder: said so, with a file name
    assert r.returncode == 2 and "is a directory, not a file" in r.stderr and "py-export.csv" in r.stderr
    r = dlsweep(db, "export", "py-export", "--format", "xlsx", check=False)
    assert r.returncode == 2 and "unknown format 'xlsx'" in r.stderr
    r = dlsweep(tmp_path / "nowhere" / "d.db", "export", "py-export", check=False)  # the --db check of every verb
    assert r.returncode == 2 and "does not exist" in r.stderr
