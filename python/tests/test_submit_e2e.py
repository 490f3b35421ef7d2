"""A Python trial built on dlsweep_trial, run through the real `dlsweep submit` (local
backend): the database holds what the library wrote, and a preempted first run (SIGUSR2 ->
save -> exit 75) is retried and resumes from its checkpoint. Needs $DLSWEEP_BIN (ctest
sets it); skipped otherwise."""
import os
import pathlib
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from conftest import LIB_DIR

DLSWEEP = os.environ.get("DLSWEEP_BIN")
pytestmark = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")
HANG_BOUND_S = 600  # bounds a hang only

TRIAL = textwrap.dedent('''
    import json, os, signal, sys
    import dlsweep_trial as dt
    p = dt.params({"lr": 0.1, "steps": 40})
    ck = dt.checkpoint_dir() / "state.json"
    def save():
        ck.write_text(json.dumps({"step": step, "w": w}))
        dt.checkpointed(ck, step=step)
    dt.on_preempt(save)
    step, w = 0, 5.0
    if dt.resumed():
        s = json.loads(ck.read_text())
        step, w = s["step"], s["w"]
        dt.log(f"resumed at step {step}", step=step)
    while step < p["steps"]:
        step += 1
        w -= p["lr"] * 2 * w
        if step % 10 == 0:
            dt.report(step=step, epoch=step / p["steps"], samples=step * 32, loss=w * w)
        if p["preempt_at"] == step and not dt.resumed():
            os.kill(os.getpid(), signal.SIGUSR2)  # as Slurm's --signal=B:USR2 would
    dt.final(step=step, epoch=1.0, samples=step * 32, loss=w * w)
''')

STUDY = textwrap.dedent('''
    name: py-trial-e2e
    backend: {{kind: local, max_concurrent: 2}}
    trial:
      command: [{python}, "{{study_dir}}/trial.py"]
      env: {{PYTHONPATH: "{lib}"}}
      max_retries: 1
    objective: {{metric: loss, mode: min, target: 0.01}}
    search: {{algorithm: grid}}
    space:
      lr: [0.05, 0.2]
      preempt_at: [0, 25]
    fixed: {{steps: 40}}
    runs_dir: runs
''')


def expected_losses(lr, steps):
    w, out = 5.0, {}
    for step in range(1, steps + 1):
        w -= lr * 2 * w
        if step % 10 == 0:
            out[step] = w * w
    return out


def test_python_trials_through_dlsweep_submit(tmp_path):
    (tmp_path / "trial.py").write_text(TRIAL)
    (tmp_path / "study.yaml").write_text(STUDY.format(python=sys.executable, lib=LIB_DIR))
    db = tmp_path / "sweep.db"
    r = subprocess.run([DLSWEEP, "--db", str(db), "submit", str(tmp_path / "study.yaml")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout + r.stderr

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    trials = con.execute(
        "SELECT t.id, t.number, t.state, t.attempt, json_extract(tp.params, '$.lr'), "
        "json_extract(tp.params, '$.preempt_at') FROM trials t JOIN trial_params tp ON tp.trial_id = t.id "
        "ORDER BY t.number").fetchall()
    assert len(trials) == 4
    for tid, number, state, attempt, lr, preempt_at in trials:
        assert state == "COMPLETE", (number, state)
        # a preempted run exits 75 on its own: retried once, as attempt 1, from the checkpoint
        assert attempt == (1 if preempt_at else 0), number
        recs = con.execute("SELECT attempt, seq, kind, step, samples, text FROM records WHERE trial_id = ? "
                           "ORDER BY attempt, seq", (tid,)).fetchall()
        for a in {rec[0] for rec in recs}:  # seq numbers every line of an attempt from 0
            assert [rec[1] for rec in recs if rec[0] == a] == list(range(sum(1 for x in recs if x[0] == a)))
        curve = {step: v for step, v in con.execute(
            "SELECT step, value FROM metrics WHERE trial_id = ? AND name = 'loss' AND kind = 'eval' "
            "ORDER BY attempt, seq", (tid,))}
        assert curve == pytest.approx(expected_losses(lr, 40), rel=1e-12)  # resumed runs continue exactly
        if preempt_at:
            first = [rec for rec in recs if rec[0] == 0]
            assert [k for _, _, k, *_ in first][-2:] == ["checkpoint", "log"]
            assert "SIGUSR2: checkpoint saved, exiting 75" in first[-1][5]
            assert any(k == "log" and t == "resumed at step 25" for a, _, k, _, _, t in recs if a == 1)
            reasons = [x for (x,) in con.execute("SELECT reason FROM events WHERE trial_id = ? ORDER BY id", (tid,))]
            assert "stopped unasked (exit 75)" in reasons  # the library's resumable exit status
        value = con.execute("SELECT value FROM trial_objective WHERE trial_id = ?", (tid,)).fetchone()[0]
        assert value == pytest.approx(expected_losses(lr, 40)[40], rel=1e-12)
