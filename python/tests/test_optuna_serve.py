"""dlsweep_optuna --serve: the runner a pilot worker keeps imported (backend keep_imported).
Driven here as the worker drives it: job.json in, done.json out."""
import json
import os
import pathlib
import subprocess
import sys

from conftest import LIB_DIR, wait_until

OBJECTIVE = '''
import os
import dlsweep_optuna as optuna
CALLS = 0          # module state: kept between trials only if the module stays imported

def objective(trial):
    global CALLS
    CALLS += 1
    print(f"trial in {os.getcwd()} call {CALLS}")
    if os.environ.get("BOOM"):
        raise RuntimeError("boom")
    return float(CALLS)
'''


def _wait(path: pathlib.Path, pred, timeout=60.0):
    def look():
        try:
            v = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return (v,) if pred(v) else None  # a tuple: a falsy value that satisfies pred still counts
    return wait_until(look, timeout, f"{path} to satisfy the condition")[0]


def _job(serve: pathlib.Path, seq: int, d: pathlib.Path, env: dict) -> None:
    d.mkdir(parents=True, exist_ok=True)
    tmp = serve / ".job.tmp"
    tmp.write_text(json.dumps({"seq": seq, "dir": str(d), "env": {"DLSWEEP_TRIAL_DIR": str(d), **env},
                               "stdout": str(d / "stdout.log"), "stderr": str(d / "stderr.log")}))
    os.replace(tmp, serve / "job.json")


def test_serve_runs_trials_one_after_another_in_one_process(tmp_path):
    (tmp_path / "obj.py").write_text(OBJECTIVE)
    serve = tmp_path / "serve"
    serve.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLSWEEP_")}
    env["PYTHONPATH"] = str(LIB_DIR)
    p = subprocess.Popen([sys.executable, "-m", "dlsweep_optuna", f"{tmp_path / 'obj.py'}:objective",
                          "--metric", "acc", "--serve", str(serve)], env=env, cwd=tmp_path)
    try:
        trials = [tmp_path / f"trial-{i}" for i in range(3)]
        _job(serve, 1, trials[0], {})
        assert _wait(serve / "done.json", lambda v: v["seq"] == 1)["exit_code"] == 0
        # A failing trial ends with exit 1 as a fresh process would, and the server goes on.
        _job(serve, 2, trials[1], {"BOOM": "1"})
        assert _wait(serve / "done.json", lambda v: v["seq"] == 2)["exit_code"] == 1
        _job(serve, 3, trials[2], {})
        assert _wait(serve / "done.json", lambda v: v["seq"] == 3)["exit_code"] == 0
        # One import: the module's counter went on (the third call returned 3) — and each
        # trial wrote its own records and logs in its own directory.
        finals = [json.loads(line) for line in (trials[2] / "metrics.jsonl").read_text().splitlines()]
        assert finals[-1]["kind"] == "final" and finals[-1]["metrics"] == {"acc": 3.0}
        first = [json.loads(line) for line in (trials[0] / "metrics.jsonl").read_text().splitlines()]
        assert first[-1]["metrics"] == {"acc": 1.0}
        assert not (trials[1] / "metrics.jsonl").exists() or "final" not in (trials[1] / "metrics.jsonl").read_text()
        assert "RuntimeError: boom" in (trials[1] / "stderr.log").read_text()
        assert f"trial in {trials[2]} call 3" in (trials[2] / "stdout.log").read_text()
        assert "BOOM" not in (trials[2] / "stdout.log").read_text()
        (serve / "stop").write_text("")
        assert p.wait(timeout=30) == 0
    finally:
        if p.poll() is None:
            p.kill()
