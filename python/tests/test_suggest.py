"""Define-by-run in the library: suggest_float/int/categorical (Optuna's signatures and
argument checks), the suggest.jsonl request / suggested.json answer handshake with a stand-in
orchestrator, errors (SuggestError; exit 2 uncaught), the bound on the wait, the local draw
outside dlsweep, and dlsweep_optuna's Trial and runner."""
import json
import math
import os
import subprocess
import sys
import threading
import time

import pytest

import dlsweep_optuna
import dlsweep_trial as dt
from conftest import LIB_DIR, read_records


class FakeOrchestrator:
    """Answers suggest.jsonl as dlsweep does: {name: {"distribution", "value" | "error"}}."""

    def __init__(self, d, answer):
        self.d, self.answer, self.requests = d, answer, []
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        seen, answers = 0, {}
        while not self.stop.is_set():
            p = self.d / "suggest.jsonl"
            lines = p.read_text().splitlines() if p.exists() else []
            for line in lines[seen:]:
                req = json.loads(line)
                self.requests.append(req)
                a = dict(self.answer(req["name"], req["distribution"]))
                a["distribution"] = req["distribution"]
                answers[req["name"]] = a
                tmp = self.d / ".suggested.tmp"
                tmp.write_text(json.dumps(answers))
                os.replace(tmp, self.d / "suggested.json")
            seen = len(lines)
            time.sleep(0.002)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.t.join()


@pytest.mark.parametrize("call, message", [
    (lambda: dt.suggest_float("x", 1.0, 0.5), "low <= high"),
    (lambda: dt.suggest_float("x", 0.0, 1.0, log=True), "low > 0"),
    (lambda: dt.suggest_float("x", 0.1, 1.0, log=True, step=0.1), "`step` is not supported when `log`"),
    (lambda: dt.suggest_float("x", 0.0, 1.0, step=0), "step > 0"),
    (lambda: dt.suggest_int("n", 0, 8, log=True), "low >= 1"),
    (lambda: dt.suggest_int("n", 1, 8, step=2, log=True), "`step` > 1 is not supported"),
    (lambda: dt.suggest_int("n", 1, 8, step=0), "step > 0"),
    (lambda: dt.suggest_int("n", 1.5, 8), "must be an int"),
    (lambda: dt.suggest_categorical("c", []), "one or more"),
    (lambda: dt.suggest_categorical("c", [[1]]), "None, bool, int, float or str"),
    (lambda: dt.suggest_float("", 0, 1), "non-empty str"),
])
def test_optuna_argument_checks(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("`", "`")):
        call()


def test_outside_dlsweep_a_local_draw_in_range_repeated_calls_agree(monkeypatch):
    monkeypatch.setenv("DLSWEEP_SEED", "7")
    x = dt.suggest_float("lr", 1e-5, 1e-1, log=True)
    assert 1e-5 <= x <= 1e-1 and dt.suggest_float("lr", 1e-5, 1e-1, log=True) == x
    n = dt.suggest_int("layers", 1, 9, step=2)
    assert n in (1, 3, 5, 7, 9)
    s = dt.suggest_float("m", 0.5, 0.95, step=0.05)
    assert abs((s - 0.5) / 0.05 - round((s - 0.5) / 0.05)) < 1e-9 and 0.5 <= s <= 0.95 + 1e-12
    assert dt.suggest_categorical("opt", ["Adam", "SGD"]) in ("Adam", "SGD")
    with pytest.raises(dt.SuggestError, match="another distribution"):
        dt.suggest_float("lr", 1e-4, 1e-1, log=True)
    first = dt.suggested()
    dt._reset_for_tests()
    monkeypatch.setenv("DLSWEEP_SEED", "7")
    assert dt.suggest_float("lr", 1e-5, 1e-1, log=True) == first["lr"]  # $DLSWEEP_SEED: reproducible


def test_rank0_asks_and_gets_the_orchestrators_answer(trial):
    answers = {"lr": 0.01, "n_layers": 2, "optimizer": "SGD", "momentum": 0.75}
    with FakeOrchestrator(trial, lambda name, d: {"value": answers[name]}) as o:
        assert dt.suggest_float("lr", 1e-5, 1e-1, log=True) == 0.01
        assert dt.suggest_int("n_layers", 1, 3) == 2
        assert dt.suggest_categorical("optimizer", ["Adam", "SGD"]) == "SGD"
        assert dt.suggest_float("momentum", 0.5, 0.99, step=0.05) == 0.75
        assert dt.suggest_int("n_layers", 1, 3) == 2  # answered in-process: not asked again
    assert [r["name"] for r in o.requests] == ["lr", "n_layers", "optimizer", "momentum"]
    assert o.requests[0]["distribution"] == {"type": "float", "low": 1e-5, "high": 0.1, "log": True, "step": None}
    assert o.requests[1]["distribution"] == {"type": "int", "low": 1, "high": 3, "log": False, "step": 1}
    assert o.requests[3]["distribution"]["high"] == pytest.approx(0.95)  # Optuna's adjustment onto the grid
    assert dt.suggested() == answers


def test_other_ranks_wait_for_the_answer_without_asking(trial, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    (trial / "suggested.json").write_text(json.dumps(
        {"n": {"distribution": {"type": "int", "low": 1, "high": 3, "log": False, "step": 1}, "value": 3}}))
    assert dt.suggest_int("n", 1, 3) == 3
    assert not (trial / "suggest.jsonl").exists()


def test_an_answer_for_another_call_is_not_taken_and_an_error_raises(trial, monkeypatch):
    monkeypatch.setenv("DLSWEEP_SUGGEST_WAIT_S", "0.1")
    (trial / "suggested.json").write_text(json.dumps(
        {"n": {"distribution": {"type": "int", "low": 1, "high": 9, "log": False, "step": 1}, "value": 7}}))
    t0 = time.monotonic()
    with pytest.raises(dt.SuggestTimeout, match=r"did not answer suggest 'n' within 0.1 s"):
        dt.suggest_int("n", 1, 3)
    assert time.monotonic() - t0 < 2
    with FakeOrchestrator(trial, lambda name, d: {"error": "the study file declares space.lr: uniform [0, 1] but ..."}):
        with pytest.raises(dt.SuggestError, match="refused 'lr': the study file declares space.lr"):
            dt.suggest_float("lr", 0.0, 2.0)


def test_an_uncaught_suggest_error_exits_2(trial):
    (trial / "suggested.json").write_text(json.dumps(
        {"x": {"distribution": {"type": "float", "low": 0.0, "high": 1.0, "log": False, "step": None},
               "error": "contradiction"}}))
    r = subprocess.run([sys.executable, "-c", "import dlsweep_trial as dt; dt.suggest_float('x', 0, 1)"],
                       env={**os.environ, "PYTHONPATH": str(LIB_DIR)}, capture_output=True, text=True, timeout=60)
    assert r.returncode == dt.EXIT_BAD_INPUT, r.stderr
    assert "SuggestError: dlsweep refused 'x': contradiction" in r.stderr


def objective(trial):
    n = trial.suggest_int("n_layers", 1, 3)
    acc = 0.0
    for epoch in range(3):
        acc = 0.5 + 0.1 * n + 0.01 * epoch
        trial.report(acc, epoch)
        if trial.should_prune():
            raise dlsweep_optuna.TrialPruned()
    trial.set_user_attr("layers_used", n)
    return acc


def test_optuna_trial_records_reports_and_the_return_value(trial):
    with FakeOrchestrator(trial, lambda name, d: {"value": 2}):
        assert dlsweep_optuna.run(objective, "val_acc") == 0
    recs = read_records(trial)
    assert [r["kind"] for r in recs] == ["eval", "eval", "eval", "final"]
    assert [r["step"] for r in recs] == [0, 1, 2, 2]
    assert recs[-1]["metrics"]["val_acc"] == pytest.approx(0.72)
    assert json.loads((trial / "user_attrs.json").read_text()) == {"layers_used": 2}


def test_optuna_trial_pruned_exits_0_and_writes_no_final(trial):
    (trial / "control.json").write_text(json.dumps({"action": "stop", "reason": "pruned"}))
    with FakeOrchestrator(trial, lambda name, d: {"value": 1}):
        assert dlsweep_optuna.run(objective, "val_acc") == 0
    assert [r["kind"] for r in read_records(trial)] == ["eval"]


def test_optuna_runner_nan_is_diverged_and_a_refused_suggest_is_2(trial):
    assert dlsweep_optuna.run(lambda t: math.nan) == dt.EXIT_DIVERGED
    (trial / "suggested.json").write_text(json.dumps(
        {"n": {"distribution": {"type": "int", "low": 1, "high": 3, "log": False, "step": 1}, "error": "no"}}))
    assert dlsweep_optuna.run(lambda t: t.suggest_int("n", 1, 3)) == dt.EXIT_BAD_INPUT


def test_an_unanswered_suggest_exits_1_a_transient_failure(trial, monkeypatch):
    r = subprocess.run([sys.executable, "-c", "import dlsweep_trial as dt; dt.suggest_int('n', 1, 3)"],
                       env={**os.environ, "PYTHONPATH": str(LIB_DIR), "DLSWEEP_SUGGEST_WAIT_S": "0.05"},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == dt.EXIT_FAILURE, r.stderr
    assert "SuggestTimeout: dlsweep did not answer suggest 'n' within 0.05 s" in r.stderr
    monkeypatch.setenv("DLSWEEP_SUGGEST_WAIT_S", "0.05")
    assert dlsweep_optuna.run(lambda t: t.suggest_int("n", 1, 3)) == dt.EXIT_FAILURE
