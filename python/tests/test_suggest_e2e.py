"""Define-by-run through the real dlsweep (local backend): a study whose space lives only in
the script (Optuna's conditional layers), one mixing study-declared and script-discovered
names, and one whose script contradicts the study file. `results --format json` shows the
discovered params; a retried trial, `resume --add-trials` and a second study with the same
seed get the same values. Needs $DLSWEEP_BIN (ctest sets it)."""
import json
import re
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from conftest import LIB_DIR, wait_until

DLSWEEP = os.environ.get("DLSWEEP_BIN")
pytestmark = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")

# Trial 1 fails its first attempt after asking (a retry must get the same values).
TRIAL = textwrap.dedent('''
    import json, os, sys
    import dlsweep_trial as dt
    n = dt.suggest_int("n_layers", 1, 3)
    units = [dt.suggest_int(f"n_units_l{i}", 4, 128, log=True) for i in range(n)]
    lr = dt.suggest_float("lr", 1e-5, 1e-1, log=True)
    opt = dt.suggest_categorical("optimizer", ["Adam", "RMSprop", "SGD"])
    mom = dt.suggest_float("momentum", 0.5, 0.95, step=0.05) if opt == "SGD" else None
    with open(f"asked.{dt.attempt()}.json", "w") as f:
        json.dump(dt.suggested(), f)
    if dt.trial_id() == 1 and dt.attempt() == 0:
        sys.exit(1)
    acc = 0.5 + sum(units) / 1000 + lr + (mom or 0) / 10
    dt.report(step=1, epoch=1, val_acc=acc)
    dt.final(step=1, epoch=1, val_acc=acc)
''')


OPTIONS = {"tpe": ", startup_trials: 2", "nsga2": ", population_size: 4"}


def study(name, algorithm="tpe", trials=5, space="", script="trial.py"):
    return textwrap.dedent(f'''
        name: {name}
        backend: {{kind: local, max_concurrent: 1}}
        trial:
          command: [{sys.executable}, "{{study_dir}}/{script}"]
          env: {{PYTHONPATH: "{LIB_DIR}"}}
          max_retries: 1
        objective: {{metric: val_acc, mode: max}}
        search: {{algorithm: {algorithm}, trials: {trials}, seed: 5{OPTIONS.get(algorithm, "")}}}
    ''') + (textwrap.indent(textwrap.dedent(space), "") if space else "") + "runs_dir: runs\n"


def dlsweep(tmp_path, *args):
    return subprocess.run([DLSWEEP, "--db", str(tmp_path / "sweep.db"), *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)


def submit(tmp_path, text, trial=TRIAL, script="trial.py"):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / script).write_text(trial)
    (tmp_path / "study.yaml").write_text(text)
    return dlsweep(tmp_path, "submit", str(tmp_path / "study.yaml"))


def results(tmp_path, name):
    r = dlsweep(tmp_path, "results", name, "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    return {t["trial"]: t for t in json.loads(r.stdout)}


def check_conditional(params):
    n = params["n_layers"]
    assert 1 <= n <= 3
    for i in range(3):
        assert (f"n_units_l{i}" in params) == (i < n), params
        if i < n:
            assert 4 <= params[f"n_units_l{i}"] <= 128
    assert 1e-5 <= params["lr"] <= 1e-1
    assert ("momentum" in params) == (params["optimizer"] == "SGD")


@pytest.mark.parametrize("algorithm", ["tpe", "random", "qmc", "nsga2"])
def test_space_only_in_the_script(tmp_path, algorithm):
    r = submit(tmp_path / "a", study("dbr", algorithm))
    assert r.returncode == 0, r.stdout + r.stderr
    got = results(tmp_path / "a", "dbr")
    assert sorted(got) == [0, 1, 2, 3, 4]
    for n, t in got.items():
        assert t["state"] == "COMPLETE", t
        check_conditional(t["params"])
        assert t["params_n_layers"] == t["params"]["n_layers"]  # flat columns like a declared one
        runs = tmp_path / "a" / "runs"
        asked = json.loads(next(runs.glob(f"**/trial-*{n}/asked.{t['attempt']}.json")).read_text())
        assert asked == t["params"]  # what the program got is what the database holds
    assert got[1]["attempt"] == 1  # retried: its second attempt got the same values
    t1 = next((tmp_path / "a" / "runs").glob("**/trial-*1"))
    assert json.loads((t1 / "asked.0.json").read_text()) == json.loads((t1 / "asked.1.json").read_text())
    assert len({json.dumps(t["params"], sort_keys=True) for t in got.values()}) == 5

    # --add-trials: the first five keep their values; the same study run fresh with seven
    # trials draws the same seven (a pure function of seed, number, name, history).
    r = dlsweep(tmp_path / "a", "resume", "dbr", "--add-trials", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    grown = results(tmp_path / "a", "dbr")
    assert sorted(grown) == list(range(7))
    assert all(grown[n]["params"] == got[n]["params"] for n in got)
    r = submit(tmp_path / "b", study("dbr", algorithm, trials=7))
    assert r.returncode == 0, r.stdout + r.stderr
    fresh = results(tmp_path / "b", "dbr")
    assert {n: t["params"] for n, t in fresh.items()} == {n: t["params"] for n, t in grown.items()}


MIXED_TRIAL = textwrap.dedent('''
    import json
    import dlsweep_trial as dt
    p = json.load(open("params.json"))  # not dt.params(): suggest_* alone counts as reading a study parameter
    lr = dt.suggest_float("lr", 1e-5, 1e-1, log=True)          # declared by the study
    opt = dt.suggest_categorical("optimizer", ["SGD", "Adam"])  # declared (another order)
    n = dt.suggest_int("n_layers", 1, 3)                        # discovered
    assert lr == p["lr"] and opt == p["optimizer"], (lr, p)
    dt.report(step=1, epoch=1, val_acc=lr * n)
    dt.final(step=1, epoch=1, val_acc=lr * n)
''')

MIXED_SPACE = '''
space:
  lr: {log_uniform: [1.0e-5, 0.1]}
  optimizer: [Adam, SGD]
'''


def test_study_declared_and_script_discovered_names_mix(tmp_path):
    r = submit(tmp_path, study("mixed", "random", 4, MIXED_SPACE), MIXED_TRIAL)
    assert r.returncode == 0, r.stdout + r.stderr
    got = results(tmp_path, "mixed")
    assert len(got) == 4
    for t in got.values():
        assert t["state"] == "COMPLETE", t
        assert set(t["params"]) == {"lr", "optimizer", "n_layers"}
        assert t["value"] == pytest.approx(t["params"]["lr"] * t["params"]["n_layers"])


def test_a_call_contradicting_the_study_file_names_both_and_is_not_retried(tmp_path):
    space = '''
space:
  lr: {log_uniform: [1.0e-4, 0.1]}
  optimizer: [Adam, SGD]
'''
    r = submit(tmp_path, study("contra", "random", 2, space), MIXED_TRIAL)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert ("the study file declares space.lr: log_uniform [0.0001, 0.1] but the program calls "
            "suggest_float('lr', 1e-05, 0.1, log=True)") in out
    got = results(tmp_path, "contra")
    assert all(t["state"] == "FAILED" and t["attempt"] == 0 for t in got.values()), got  # exit 2: never retried


def test_a_later_different_distribution_for_a_discovered_name_is_an_error(tmp_path):
    trial = textwrap.dedent('''
        import dlsweep_trial as dt
        hi = 8 if dt.trial_id() == 0 else 16
        n = dt.suggest_int("width", 1, hi)
        dt.report(step=1, epoch=1, val_acc=n)
        dt.final(step=1, epoch=1, val_acc=n)
    ''')
    r = submit(tmp_path, study("redef", "random", 2), trial)
    out = r.stdout + r.stderr
    assert ("the program calls suggest_int('width', 1, 16) but an earlier trial of this study called "
            "suggest_int('width', 1, 8) for the same name") in out
    got = results(tmp_path, "redef")
    assert got[0]["state"] == "COMPLETE" and got[1]["state"] == "FAILED"


EXAMPLES = LIB_DIR.parent / "examples" / "optuna"


def test_the_optuna_example_runs_through_dlsweep_submit(tmp_path):
    pytest.importorskip("torch")
    text = (EXAMPLES / "study.yaml").read_text()
    text = text.replace('{study_dir}/objective.py', str(EXAMPLES / "objective.py"))
    text = text.replace('EPOCHS: "10"}', f'EPOCHS: "3", PYTHONPATH: "{LIB_DIR}"}}')
    text = text.replace("trials: 20", "trials: 4").replace("python3", sys.executable)
    assert str(EXAMPLES / "objective.py") in text and 'EPOCHS: "3"' in text
    (tmp_path / "study.yaml").write_text(text + "runs_dir: runs\n")
    r = dlsweep(tmp_path, "submit", str(tmp_path / "study.yaml"))
    assert r.returncode == 0, r.stdout + r.stderr
    got = results(tmp_path, "optuna-mlp")
    assert len(got) == 4
    for t in got.values():
        assert t["state"] in ("COMPLETE", "PRUNED"), t
        p = t["params"]
        assert {"n_layers", "optimizer", "lr"} <= set(p)
        assert all((f"n_units_l{i}" in p) == (f"dropout_l{i}" in p) == (i < p["n_layers"]) for i in range(3)), p
    assert any(t["state"] == "COMPLETE" for t in got.values())
    r = dlsweep(tmp_path, "best", "optuna-mlp")
    assert r.returncode == 0 and "n_layers" in r.stdout, r.stdout + r.stderr


def test_the_coming_from_optuna_page_runs_as_written(tmp_path):
    page = (LIB_DIR.parent / "docs" / "coming-from-optuna.md").read_text()
    blocks = re.findall(r"```(\w+)\n(.*?)```", page, re.S)
    objective = next(code for lang, code in blocks if lang == "python")
    study_yaml = next(code for lang, code in blocks if lang == "yaml")
    # The page's study file is the example's (run by the test above), comments aside.
    strip = lambda t: [l for l in t.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    assert strip(study_yaml) == strip((EXAMPLES / "study.yaml").read_text())
    # Its objective, unchanged, through the runner and a real sweep.
    (tmp_path / "objective.py").write_text(objective)
    (tmp_path / "study.yaml").write_text(textwrap.dedent(f'''
        name: page
        backend: {{kind: local, max_concurrent: 2}}
        trial:
          command: [{sys.executable}, -m, dlsweep_optuna, "{{study_dir}}/objective.py:objective", --metric, accuracy]
          env: {{PYTHONPATH: "{LIB_DIR}"}}
        objective: {{metric: accuracy, mode: max, rank_by: final}}
        search: {{algorithm: tpe, trials: 4, seed: 0}}
        runs_dir: runs
    '''))
    r = dlsweep(tmp_path, "submit", str(tmp_path / "study.yaml"))
    assert r.returncode == 0, r.stdout + r.stderr
    got = results(tmp_path, "page")
    assert all(t["state"] == "COMPLETE" and "n_layers" in t["params"] for t in got.values()) and len(got) == 4


KILLED_TRIAL = textwrap.dedent('''
    import json, os, pathlib, time
    import dlsweep_trial as dt
    n = dt.suggest_int("n_layers", 1, 3)
    units = [dt.suggest_int(f"n_units_l{i}", 4, 128, log=True) for i in range(n)]
    lr = dt.suggest_float("lr", 1e-5, 1e-1, log=True)
    pathlib.Path(f"asked.{os.getpid()}.json").write_text(json.dumps(dt.suggested()))
    marker = pathlib.Path("first-run")
    if os.environ.get("HANG_FIRST") == "1" and dt.trial_id() == 0 and not marker.exists():
        marker.write_text("")
        time.sleep(600)  # the orchestrator is killed meanwhile
    acc = 0.5 + sum(units) / 1000 + lr
    dt.report(step=1, epoch=1, val_acc=acc)
    dt.final(step=1, epoch=1, val_acc=acc)
''')


def test_after_kill_9_of_the_orchestrator_resume_gives_the_same_values(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    text = study("killed", "tpe", 4).replace("env: {", "env: {HANG_FIRST: \"1\", ")
    assert 'HANG_FIRST: "1"' in text
    a.mkdir()
    (a / "trial.py").write_text(KILLED_TRIAL)
    (a / "study.yaml").write_text(text)
    orch = subprocess.Popen([DLSWEEP, "--db", str(a / "sweep.db"), "submit", str(a / "study.yaml")], cwd=a,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        def started():
            assert orch.poll() is None, "the orchestrator ended before trial 0 started"
            return list((a / "runs").glob("**/first-run"))
        wait_until(started, 120, "trial 0 to start")
        orch.send_signal(signal.SIGKILL)
        orch.wait(timeout=60)
    finally:
        if orch.poll() is None:
            orch.kill()
            orch.wait()
    r = dlsweep(a, "resume", "killed")  # stops the orphan, runs trial 0 again
    assert r.returncode == 0, r.stdout + r.stderr
    got = results(a, "killed")
    assert sorted(got) == [0, 1, 2, 3] and all(t["state"] == "COMPLETE" for t in got.values()), got
    t0 = next(p.parent for p in (a / "runs").glob("**/first-run"))
    asked = [json.loads(p.read_text()) for p in t0.glob("asked.*.json")]
    assert len(asked) == 2 and asked[0] == asked[1] == got[0]["params"]  # nothing redrawn
    # An uninterrupted sweep draws the same values for every trial.
    r = submit(b, study("killed", "tpe", 4), KILLED_TRIAL)
    assert r.returncode == 0, r.stdout + r.stderr
    assert {n: t["params"] for n, t in results(b, "killed").items()} == {n: t["params"] for n, t in got.items()}


RANKS_TRIAL = textwrap.dedent('''
    import json, os, pathlib
    import dlsweep_trial as dt
    n = dt.suggest_int("n_layers", 1, 3)
    lr = dt.suggest_float("lr", 1e-5, 1e-1, log=True)
    pathlib.Path(f"asked.rank{dt.rank()}.json").write_text(json.dumps(dt.suggested()))
    dt.report(step=1, epoch=1, val_acc=lr * n)
    dt.final(step=1, epoch=1, val_acc=lr * n)
''')


@pytest.mark.parametrize("launcher", ["torchrun", "mpirun"])
def test_under_a_launcher_rank_0_asks_and_every_rank_gets_the_same_value(tmp_path, launcher):
    import shutil
    if shutil.which(launcher) is None:
        pytest.skip(f"{launcher} is not installed")
    text = study("ranks", "random", 2).replace("  max_retries: 1", f"  max_retries: 1\n  launcher: {launcher}\n  ranks: 2")
    assert "ranks: 2" in text
    r = submit(tmp_path, text, RANKS_TRIAL)
    assert r.returncode == 0, r.stdout + r.stderr
    got = results(tmp_path, "ranks")
    for n, t in got.items():
        assert t["state"] == "COMPLETE", t
        d = next((tmp_path / "runs").glob(f"**/trial-*{n}"))
        assert json.loads((d / "asked.rank0.json").read_text()) == t["params"]
        assert json.loads((d / "asked.rank1.json").read_text()) == json.loads((d / "asked.rank0.json").read_text())
        assert [json.loads(l)["name"] for l in (d / "suggest.jsonl").read_text().splitlines()] == ["n_layers", "lr"]


def test_enqueue_sets_a_discovered_parameter(tmp_path):
    r = submit(tmp_path, study("enq", "random", 2), TRIAL)
    assert r.returncode == 0, r.stdout + r.stderr
    r = dlsweep(tmp_path, "enqueue", "enq", "--set", "n_layers=3", "--set", "optimizer=SGD", "--set", "momentum=0.85")
    assert r.returncode == 0, r.stdout + r.stderr
    r = dlsweep(tmp_path, "enqueue", "enq", "--set", "n_layer=3")
    assert r.returncode == 2 and "unknown parameter 'n_layer'" in r.stderr and "n_layers" in r.stderr, r.stderr
    r = dlsweep(tmp_path, "enqueue", "enq", "--set", "n_layers=4")
    assert r.returncode == 2 and "n_layers" in r.stderr, r.stderr  # outside the program's call 1..3
    r = dlsweep(tmp_path, "resume", "enq", "--add-trials", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    got = results(tmp_path, "enq")
    t = got[2]
    assert t["state"] == "COMPLETE", t
    assert t["params"]["n_layers"] == 3 and t["params"]["optimizer"] == "SGD" and t["params"]["momentum"] == 0.85
    check_conditional(t["params"])
    d = next((tmp_path / "runs").glob("**/trial-*2"))
    assert json.loads((d / f"asked.{t['attempt']}.json").read_text()) == t["params"]  # what the program got
