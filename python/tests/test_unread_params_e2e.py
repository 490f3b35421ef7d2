"""Parameters nobody reads (issue: "a misspelt parameter is swept silently"): a study that
sweeps `n_unit_l0` while the script reads `n_units_l0` with a default. The first completed
trial names the unread parameter with a did-you-mean towards the name the script read with a
default, and the sweep stops (exit 2) instead of running every trial on the default; with
the parameter listed under trial.unread_params, or spelt right, the sweep runs to its end.
Needs $DLSWEEP_BIN (ctest sets it)."""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import LIB_DIR

DLSWEEP = os.environ.get("DLSWEEP_BIN")
pytestmark = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")

TRIAL = textwrap.dedent('''
    import dlsweep_trial as dt
    p = dt.params({"n_units_l0": 64, "lr": 0.1})
    acc = 0.5 + p["n_units_l0"] / 1000 + p["lr"]
    dt.report(step=1, epoch=1, val_acc=acc)
    dt.final(step=1, epoch=1, val_acc=acc)
''')


def study(name, dim, extra=""):
    return textwrap.dedent(f'''
        name: {name}
        backend: {{kind: local, max_concurrent: 1}}
        trial:
          command: [{sys.executable}, "{{study_dir}}/trial.py"]
          env: {{PYTHONPATH: "{LIB_DIR}"}}
        {extra}
        objective: {{metric: val_acc, mode: max}}
        search: {{algorithm: grid}}
        space:
          {dim}: [16, 32, 61]
          lr: [0.1]
        runs_dir: runs
    ''')


def submit(tmp_path, text):
    (tmp_path / "trial.py").write_text(TRIAL)
    (tmp_path / "study.yaml").write_text(text)
    return subprocess.run([DLSWEEP, "--db", str(tmp_path / "sweep.db"), "submit", str(tmp_path / "study.yaml")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def test_a_misspelt_parameter_stops_the_sweep_with_did_you_mean(tmp_path):
    r = submit(tmp_path, study("typo", "n_unit_l0"))
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "never read the study parameter 'n_unit_l0' (it read 'n_units_l0' with a default: did you mean that?)" in out
    assert "trial.unread_params" in out
    res = subprocess.run([DLSWEEP, "--db", str(tmp_path / "sweep.db"), "results", "typo"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert res.stdout.count("COMPLETE") == 1  # stopped after the first: the others never ran on the default


def test_unread_params_lets_it_go_unread_and_the_right_name_runs(tmp_path):
    r = submit(tmp_path, study("allowed", "n_unit_l0", "  unread_params: [n_unit_l0]"))
    assert r.returncode == 0, r.stdout + r.stderr
    (tmp_path / "sweep.db").unlink()
    r = submit(tmp_path, study("right", "n_units_l0"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "never read" not in r.stdout + r.stderr
