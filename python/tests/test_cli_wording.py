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

from conftest import LIB_DIR, wait_until

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


def test_a_bad_database_path_from_the_environment_is_named_so(tmp_path):
    # `DLSWEEP_DB=/some/folder dlsweep status` said "error: --db: ... is a directory" to a
    # user who typed no --db.
    env = dict(os.environ, DLSWEEP_DB=str(tmp_path))
    r = subprocess.run([DLSWEEP, "status"], cwd=tmp_path, capture_output=True, text=True, env=env,
                       timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    assert r.returncode == 2
    assert f"$DLSWEEP_DB: '{tmp_path}' is a directory" in r.stderr
    r = subprocess.run([DLSWEEP, "--db", str(tmp_path), "status"], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and f"--db: '{tmp_path}' is a directory" in r.stderr


def test_submitting_a_study_again_names_the_database_and_the_ways_on(tmp_path):
    # A second `submit` of the same file said only that the runs directory "already holds
    # trial directories of an earlier study", "when this database holds it" — it does.
    (tmp_path / "t.py").write_text(TRIAL)
    (tmp_path / "study.yaml").write_text(STUDY)
    r, _ = dlsweep(tmp_path, "submit", "study.yaml")
    assert r.returncode == 0, r.stderr
    r, text = dlsweep(tmp_path, "submit", "study.yaml")
    assert r.returncode == 2
    assert "a study named 'wording' is already in" in r.stderr
    assert "resume wording" in r.stderr and "submit --replace study.yaml" in r.stderr
    r, _ = dlsweep(tmp_path, "submit", "--replace", "study.yaml")  # the way on it names works
    assert r.returncode == 0, r.stderr
    r, _ = dlsweep(tmp_path, "resume", "wordin")  # a typo: the error names the studies there are
    assert r.returncode == 2
    assert "no study named 'wordin'" in r.stderr and "known studies: wording" in r.stderr


def test_status_says_when_no_orchestrator_drives_a_running_study(tmp_path):
    # After `kill -9` of the orchestrator, status showed the trials RUNNING forever and
    # said nothing: the user waited for a sweep nobody was driving.
    import signal
    (tmp_path / "t.py").write_text("import time\nimport dlsweep_trial as dt\ntime.sleep(1.5)\n"
                                   "dt.report(step=1, epoch=1, samples=8, val_acc=0.9)\n")
    (tmp_path / "study.yaml").write_text(STUDY)
    orch = subprocess.Popen([DLSWEEP, "--db", str(tmp_path / "sweep.db"), "submit", "study.yaml"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        def running():
            r, _ = dlsweep(tmp_path, "status", "wording")
            return r if "RUNNING" in r.stdout else None
        r = wait_until(running, 60, "the study RUNNING in `status`")
        assert "no orchestrator is running" not in r.stderr  # it is
        orch.send_signal(signal.SIGKILL)
        orch.wait(timeout=HANG_BOUND_S)
        r, _ = dlsweep(tmp_path, "status", "wording")
        assert r.returncode == 0
        assert "no orchestrator is running on" in r.stderr and "resume wording` continues it" in r.stderr
        r, _ = dlsweep(tmp_path, "status")
        assert "nothing records the trials of wording" in r.stderr
    finally:
        if orch.poll() is None:
            orch.kill()
            orch.wait()
    r, _ = dlsweep(tmp_path, "resume", "wording")  # stops the orphan, runs the trial again
    assert r.returncode == 0, r.stderr
    r, _ = dlsweep(tmp_path, "status", "wording")
    assert "COMPLETE" in r.stdout and "no orchestrator" not in r.stderr  # FINISHED: nothing to say


def test_a_program_that_cannot_be_started_fails_fast(tmp_path):
    # docs/failures.md, "Fail fast": a wrong path stops the sweep after trial.fail_fast trials. A
    # program that could not be started at all (not executable) ran every trial instead.
    (tmp_path / "t.sh").write_text("#!/bin/sh\necho hi\n")  # not executable
    (tmp_path / "study.yaml").write_text(textwrap.dedent('''\
        name: noexec
        backend: {kind: local, max_concurrent: 1}
        trial: {command: ["{study_dir}/t.sh"], fail_fast: 3}
        objective: {metric: loss, mode: min}
        search: {algorithm: grid}
        space: {x: [1, 2, 3, 4, 5, 6]}
        runs_dir: runs
    '''))
    r, text = dlsweep(tmp_path, "submit", "study.yaml")
    assert r.returncode == 3, text
    assert "stopped early: 3 trials failed the same way" in text
    assert "could not be started" in text
    r, _ = dlsweep(tmp_path, "status", "noexec")
    assert r.stdout.count("FAILED") == 3  # the rest: never run (WAITING) or cancelled by the fail-fast
    assert r.stdout.count("WAITING") + r.stdout.count("cancelled: the sweep failed fast") == 3
