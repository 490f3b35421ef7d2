"""Pruning answers at once (issue: "a pruned trial trains one more epoch"): trials written
with the guide's loop (docs/python-trials.md: `report(...)`, then `if should_stop(): break`)
under the median pruner, through the real `dlsweep submit`: every PRUNED trial's last reported epoch is the
epoch its prune decision names, never one more. Needs $DLSWEEP_BIN (ctest sets it)."""
import os
import re
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from conftest import LIB_DIR

DLSWEEP = os.environ.get("DLSWEEP_BIN")
pytestmark = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")

TRIAL = textwrap.dedent('''
    import time
    import dlsweep_trial as dt
    p = dt.params()
    for epoch in range(1, 9):
        time.sleep(0.02)                      # an epoch of training
        acc = p["quality"] * (1 - 0.5 ** epoch)
        dt.report(step=epoch * 10, epoch=epoch, samples=epoch * 640, val_acc=acc)
        if dt.should_stop():
            break
    else:
        dt.final(step=80, epoch=8, samples=5120, val_acc=acc)
''')

STUDY = textwrap.dedent('''
    name: prune-at-once
    backend: {{kind: local, max_concurrent: 1}}
    trial:
      command: [{python}, "{{study_dir}}/trial.py"]
      env: {{PYTHONPATH: "{lib}"}}
    objective: {{metric: val_acc, mode: max}}
    pruner: {{kind: median, startup_trials: 2}}
    search: {{algorithm: grid}}
    space:
      quality: [0.9, 0.8, 0.3, 0.2, 0.1, 0.35]
    runs_dir: runs
''')


def test_a_pruned_trial_never_reports_the_epoch_after_its_decision(tmp_path):
    (tmp_path / "trial.py").write_text(TRIAL)
    (tmp_path / "study.yaml").write_text(STUDY.format(python=sys.executable, lib=LIB_DIR))
    db = tmp_path / "sweep.db"
    r = subprocess.run([DLSWEEP, "--db", str(db), "submit", str(tmp_path / "study.yaml")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    pruned = 0
    for tid, number, state in con.execute("SELECT id, number, state FROM trials ORDER BY number").fetchall():
        if state != "PRUNED":
            continue
        pruned += 1
        reasons = " ".join(x or "" for (x,) in con.execute("SELECT reason FROM events WHERE trial_id = ?", (tid,)))
        m = re.search(r"pruned at epoch (\d+)", reasons)
        assert m, reasons
        last = con.execute("SELECT max(epoch) FROM records WHERE trial_id = ? AND kind = 'eval'", (tid,)).fetchone()[0]
        assert last == float(m.group(1)), f"trial {number}: pruned at epoch {m.group(1)}, but reported epoch {last}"
    assert pruned >= 3, r.stdout
