"""Population-based training end to end: a tiny PBT study of a Python trial built on
dlsweep_trial, run through the real `dlsweep submit` (local backend). Each member's next
interval is a new trial that finds its parent's checkpoint through dt.latest_checkpoint()
(copied by dlsweep before the job started) and its new params through dt.params(); it stops at
$DLSWEEP_STOP_AT (dt.should_stop()). Then `status` shows the lineage, `best` the winner's
schedule, and `best --write-schedule` a study that replays it and reaches the same value.
Needs $DLSWEEP_BIN (ctest sets it); skipped otherwise."""
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
HANG_BOUND_S = 600  # bounds a hang only

# acc = the sum of the lr of every epoch trained so far (a member's whole run): higher lr is
# better, so PBT's exploit/explore has something to find. A replay study passes `schedule`.
TRIAL = textwrap.dedent('''
    import json
    import dlsweep_trial as dt
    p = dt.params()
    schedule = json.loads(p["schedule"]) if "schedule" in p else None
    ck = dt.latest_checkpoint("state-*.json")
    state = json.loads(ck.read_text()) if ck else {"epoch": 0, "acc": 0.0, "trial": None}
    (dt.trial_dir() / "seen.json").write_text(json.dumps(
        {"checkpoint": ck.name if ck else None, "from_trial": state["trial"], "start_epoch": state["epoch"],
         "lr": p.get("lr")}))
    epoch, acc = state["epoch"], state["acc"]
    while epoch < 6 and not dt.should_stop():
        lr = p["lr"] if schedule is None else [s["params"]["lr"] for s in schedule if s["epoch"] <= epoch][-1]
        epoch += 1
        acc += lr
        dt.report(step=epoch, epoch=epoch, samples=epoch * 10, acc=acc)
    (dt.checkpoint_dir() / f"state-{epoch}.json").write_text(
        json.dumps({"epoch": epoch, "acc": acc, "trial": dt.trial_id()}))
''')

STUDY = textwrap.dedent('''
    name: py-pbt
    backend: {{kind: local, max_concurrent: 4}}
    trial:
      command: [{python}, "{{study_dir}}/trial.py"]
      env: {{PYTHONPATH: "{lib}"}}
    objective: {{metric: acc, mode: max}}
    search:
      algorithm: pbt
      seed: 7
      population: 4
      generations: 3
      quantile: 0.25
      interval: {{by: epoch, every: 2}}
      perturb: {{lr: [0.5, 2.0]}}
    space:
      lr: {{log_uniform: [0.01, 1.0]}}
    runs_dir: runs
''')


def dlsweep(tmp_path, *args):
    return subprocess.run([DLSWEEP, "--db", str(tmp_path / "sweep.db"), *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)


def test_pbt_study_of_a_python_trial(tmp_path):
    (tmp_path / "trial.py").write_text(TRIAL)
    (tmp_path / "study.yaml").write_text(STUDY.format(python=sys.executable, lib=LIB_DIR))
    r = dlsweep(tmp_path, "submit", "study.yaml")
    assert r.returncode == 0, r.stdout + r.stderr

    con = sqlite3.connect(f"file:{tmp_path / 'sweep.db'}?mode=ro", uri=True)
    trials = {n: (state, json.loads(params), d) for n, state, params, d in con.execute(
        "SELECT t.number, t.state, tp.params, t.trial_dir FROM trials t JOIN trial_params tp ON tp.trial_id = t.id")}
    links = {n: json.loads(reason) for n, reason in con.execute(
        "SELECT t.number, e.reason FROM events e JOIN trials t ON t.id = e.trial_id WHERE e.kind = 'pbt'")}
    assert sorted(trials) == list(range(12))
    assert sorted(links) == list(range(12))
    exploits = 0
    for n, (state, params, trial_dir) in trials.items():
        assert state == "COMPLETE", n
        link = links[n]
        assert (link["member"], link["generation"]) == (n % 4, n // 4)
        assert (link["start"], link["end"]) == (2.0 * (n // 4), 2.0 * (n // 4 + 1))
        seen = json.loads(open(os.path.join(trial_dir, "seen.json")).read())
        assert seen["lr"] == params["lr"]  # dt.params() is the trial's params
        assert set(params) == {"lr"}  # the lineage is an event, not a param
        if n < 4:
            assert link["parent"] is None and seen["checkpoint"] is None
            continue
        # The parent's last checkpoint, copied before the job started, is latest_checkpoint().
        assert seen["checkpoint"] == f"state-{2 * (n // 4)}.json"
        assert seen["from_trial"] == link["parent"]
        assert seen["start_epoch"] == 2 * (n // 4)
        if link["exploit"]:
            exploits += 1
            donor = trials[link["exploit"]["from"]][1]["lr"]
            factor = link["exploit"]["factors"]["lr"]
            assert factor in (0.5, 2.0)
            assert params["lr"] == pytest.approx(min(max(donor * factor, 0.01), 1.0))
        else:
            assert link["parent"] == n - 4 and params == trials[n - 4][1]
    assert exploits == 2  # one member (the bottom quantile of 4) per generation after the first

    status = dlsweep(tmp_path, "status", "py-pbt")
    assert status.returncode == 0, status.stderr
    assert "pbt" in status.stdout and "exploit" in status.stdout

    best = dlsweep(tmp_path, "best", "py-pbt", "--format", "json", "--write-schedule", "replay.yaml")
    assert best.returncode == 0, best.stderr
    b = json.loads(best.stdout)
    assert b["trial"] >= 8  # the last generation's
    assert [s["start"] for s in b["schedule"]] == [0.0, 2.0, 4.0]
    assert b["schedule"][-1]["trial"] == b["trial"]
    chain, n = [], b["trial"]
    while n is not None:
        chain.append(n)
        n = links[n]["parent"]
    assert [s["trial"] for s in b["schedule"]] == chain[::-1]
    assert [s["params"]["lr"] for s in b["schedule"]] == [trials[n][1]["lr"] for n in chain[::-1]]
    winner_acc = con.execute("SELECT value FROM trial_objective o JOIN trials t ON t.id = o.trial_id "
                             "WHERE t.number = ? AND t.study_id = (SELECT id FROM studies WHERE name = 'py-pbt')",
                             (b["trial"],)).fetchone()[0]
    text = dlsweep(tmp_path, "best", "py-pbt")
    assert text.returncode == 0 and "schedule" in text.stdout, text.stderr

    # The replay study validates, runs as one fixed trial, and reaches the winner's value.
    dry = dlsweep(tmp_path, "submit", "--dry-run", "replay.yaml")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    replay = dlsweep(tmp_path, "submit", "replay.yaml")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    rows = con.execute("SELECT t.state, o.value, tp.params FROM trials t JOIN trial_objective o ON o.trial_id = t.id "
                       "JOIN trial_params tp ON tp.trial_id = t.id "
                       "WHERE t.study_id = (SELECT id FROM studies WHERE name = 'py-pbt-replay')").fetchall()
    assert len(rows) == 1 and rows[0][0] == "COMPLETE"
    assert json.loads(json.loads(rows[0][2])["schedule"])[0] == {"epoch": 0.0, "params": {"lr": b["schedule"][0]["params"]["lr"]}}
    assert rows[0][1] == pytest.approx(winner_acc, rel=1e-12)
