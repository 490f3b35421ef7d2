"""What the real `dlsweep` prints about a one-trial study counts in English ("1 trial", not
"1 trials" or "1 trial(s)"), and `best` shows params to 4 significant digits in text and
whole in JSON. Needs $DLSWEEP_BIN (ctest sets it); skipped otherwise."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import LIB_DIR

DLSWEEP = os.environ.get("DLSWEEP_BIN")
pytestmark = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")
HANG_BOUND_S = 300  # bounds a hang only
LR = 0.021039895028383833

STUDY = textwrap.dedent(f'''\
    name: wording
    backend: {{kind: local, max_concurrent: 1}}
    trial:
      command: [{sys.executable}, "{{study_dir}}/t.py"]
      env: {{PYTHONPATH: "{LIB_DIR}"}}
    objective: {{metric: val_acc, mode: max, target: 0.5}}
    search: {{algorithm: grid}}
    space: {{base_lr: [{LR!r}]}}
    runs_dir: runs
''')
TRIAL = "import dlsweep_trial as dt\ndt.report(step=1, epoch=1, samples=8, val_acc=0.5 + dt.params()['base_lr'])\n"
BAD = re.compile(r"\b1 (trials|stray jobs|records|processes)\b|\(s\)|\(es\)|of 1 complete trials")


def dlsweep(tmp_path, *args):
    r = subprocess.run([DLSWEEP, "--db", str(tmp_path / "sweep.db"), *args], cwd=tmp_path, capture_output=True,
                       text=True, timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    return r, r.stdout + r.stderr


def test_one_trial_is_one_trial_and_best_params_are_short_in_text(tmp_path):
    (tmp_path / "t.py").write_text(TRIAL)
    (tmp_path / "study.yaml").write_text(STUDY)
    r, out = dlsweep(tmp_path, "submit", "study.yaml", "--dry-run")
    assert r.returncode == 0, out
    assert "dry run of wording: 1 trial;" in out
    r, out = dlsweep(tmp_path, "submit", "study.yaml")
    assert r.returncode == 0, out
    texts = [out]  # "study wording: 1 trial, 1 at a time on backend local"
    r, out = dlsweep(tmp_path, "best", "wording")
    assert r.returncode == 0, out
    texts.append(out)
    assert "1 of 1 complete trial reached the target" in out
    assert "(base_lr=0.02104)" in out and "params: base_lr=0.02104\n" in out
    assert "0.0210398950" not in out
    r, out = dlsweep(tmp_path, "best", "wording", "--format", "json")
    assert json.loads(out)["params"] == {"base_lr": LR}  # whole in JSON
    r, out = dlsweep(tmp_path, "report", "wording", "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0 and "(1 trial, " in out, out
    texts.append(out)
    r, out = dlsweep(tmp_path, "resume", "wording")
    assert r.returncode == 0, out
    assert "resuming study wording: 1 trial known, 0 new metric records read" in out
    assert "0 failed trials retried; 0 stray jobs cancelled" in out
    texts.append(out)
    r, out = dlsweep(tmp_path, "cancel", "wording", "--trial", "0")
    assert "cancelled 0 trials of wording" in out, out
    texts.append(out)
    for text in texts:
        assert not BAD.search(text), text
