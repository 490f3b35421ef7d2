"""objective.rank_by (best | final) on real sweeps run by `dlsweep submit` (local backend,
Python trials through dlsweep_trial): two trials whose best and final reports disagree — one
peaks and falls back, one climbs to the end — so `dlsweep best` names a different winner under
each setting; best, best --explain, best --format json and the report say which value ranked
and which checkpoint holds the winning model; dlsweep_results' best_trial and values agree with
`dlsweep best --by value`. Needs $DLSWEEP_BIN (ctest sets it)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import LIB_DIR

import dlsweep_results as dr

DLSWEEP = os.environ.get("DLSWEEP_BIN")
pytestmark = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")
HANG_BOUND_S = 600

# peak: best 0.95 at epoch 2, final 0.70, one checkpoint file overwritten every epoch.
# steady: best = final 0.85, a checkpoint file per epoch.
TRIAL = textwrap.dedent('''
    import os
    import dlsweep_trial as dt
    curve = {"peak": [0.80, 0.95, 0.70], "steady": [0.60, 0.75, 0.85]}[dt.params()["shape"]]
    for epoch, acc in enumerate(curve, 1):
        dt.report(step=epoch * 10, epoch=epoch, samples=epoch * 640, val_acc=acc)
        name = "last.pt" if dt.params()["shape"] == "peak" else f"epoch-{epoch}.pt"
        path = os.path.join(dt.checkpoint_dir(), name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(str(epoch))
        dt.checkpointed(path, step=epoch * 10, epoch=epoch, samples=epoch * 640)
    dt.final(step=30, epoch=3, samples=1920, val_acc=curve[-1])
''')

STUDY = textwrap.dedent('''
    name: {name}
    backend: {{kind: local, max_concurrent: 2}}
    trial:
      command: [{python}, "{{study_dir}}/trial.py"]
      env: {{PYTHONPATH: "{lib}"}}
    objective: {{metric: val_acc, mode: max{rank_by}}}
    search: {{algorithm: grid}}
    space:
      shape: [peak, steady]
    runs_dir: runs
''')


def dlsweep(db, *args, ok=True):
    r = subprocess.run([DLSWEEP, "--db", str(db), *args], cwd=db.parent, capture_output=True, text=True,
                       timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    if ok:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    out = {}
    for name, rank_by in (("by-default", ""), ("by-best", ", rank_by: best"), ("by-final", ", rank_by: final")):
        d = tmp_path_factory.mktemp(name)
        (d / "trial.py").write_text(TRIAL)
        (d / "study.yaml").write_text(STUDY.format(name=name, rank_by=rank_by, python=sys.executable, lib=LIB_DIR))
        db = d / "sweep.db"
        dlsweep(db, "submit", str(d / "study.yaml"))
        out[name] = db
    return out


def best_json(db, name, *extra):
    return json.loads(dlsweep(db, "best", name, "--format", "json", *extra).stdout)


@pytest.mark.parametrize("name", ["by-default", "by-best"])
def test_rank_by_best_names_the_peak_and_says_its_checkpoint_is_gone(sweeps, name):
    db = sweeps[name]
    j = best_json(db, name)
    assert j["trial"] == 0 and j["params"] == {"shape": "peak"}
    assert j["rank_by"] == "best" and j["criterion"] == "best value"
    assert j["ranking_value"] == pytest.approx(0.95) and j["best_value"] == pytest.approx(0.95)
    assert j["value"] == pytest.approx(0.70)
    assert "not the best report's model" in j["model"] and "last.pt" in j["model"]
    text = dlsweep(db, "best", name).stdout
    assert "ranked by best report (objective.rank_by: best, the default)" in text
    assert "highest val_acc: 0.95" in text
    ex = json.loads(dlsweep(db, "best", name, "--explain", "--format", "json").stdout)
    assert ex["winner"]["best_trial"] == 0 and ex["rank_by"] == "best"
    assert "ranked by best report" in dlsweep(db, "best", name, "--explain").stdout
    study = dr.load_study(name, str(db))
    assert study.rank_by == "best"
    assert study.best_trial.number == j["trial"] == 0
    assert study.best_value == pytest.approx(0.95)
    assert [t.value for t in study.trials] == pytest.approx([0.95, 0.85])
    assert [t.last_value for t in study.trials] == pytest.approx([0.70, 0.85])


def test_rank_by_final_names_the_steady_trial_and_its_last_checkpoint(sweeps):
    db = sweeps["by-final"]
    j = best_json(db, "by-final")
    assert j["trial"] == 1 and j["params"] == {"shape": "steady"}
    assert j["rank_by"] == "final" and j["criterion"] == "final value"
    assert j["ranking_value"] == pytest.approx(0.85) and j["value"] == pytest.approx(0.85)
    assert "last checkpoint" in j["model"] and "epoch-3.pt" in j["model"]
    text = dlsweep(db, "best", "by-final").stdout
    assert "best trial of by-final by final value: trial 1" in text
    assert "ranked by final report (objective.rank_by: final)" in text
    assert "highest final val_acc: 0.85" in text
    assert "runner-up: trial 0 (shape=peak) with 0.7" in text
    ex = json.loads(dlsweep(db, "best", "by-final", "--explain", "--format", "json").stdout)
    assert ex["winner"]["best_trial"] == 1 and ex["rank_by"] == "final" and ex["criterion"] == "final value"
    ex_text = dlsweep(db, "best", "by-final", "--explain").stdout
    assert "final val_acc 0.85" in ex_text and "ranked by final report" in ex_text
    # The report's winner is the same (its model embeds the ranking's).
    page = dlsweep(db, "report", "by-final", "-o", "-").stdout
    start = page.index('<script type="application/json" id="dlsweep-model">')
    model = json.loads(page[page.index(">", start) + 1:page.index("</script>", start)])
    assert model["best"]["rank_by"] == "final"
    assert model["best"]["by"]["value"]["trial"] == 1 and model["best"]["by"]["value"]["criterion"] == "final value"
    # The Python API agrees with `dlsweep best --by value`.
    study = dr.load_study("by-final", str(db))
    assert study.rank_by == "final"
    assert study.best_trial.number == best_json(db, "by-final", "--by", "value")["trial"] == 1
    assert study.best_value == pytest.approx(0.85)
    assert [t.value for t in study.trials] == pytest.approx([0.70, 0.85])
    assert [t.best_report for t in study.trials] == pytest.approx([0.95, 0.85])
    assert [t.last_value for t in study.trials] == pytest.approx([0.70, 0.85])
    assert [t.values for t in study.trials] == [[pytest.approx(0.70)], [pytest.approx(0.85)]]
