"""Shared fixtures: the library is imported from python/ (the package users copy), with a
clean environment per test: no rank variables, no trial dir unless a test makes one."""
import json
import os
import pathlib
import sys
import time

import pytest

LIB_DIR = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(LIB_DIR))

import dlsweep_trial  # noqa: E402

CLEARED = ("DLSWEEP_TRIAL_DIR", "DLSWEEP_TRIAL_ID", "DLSWEEP_ATTEMPT", "DLSWEEP_STUDY",
           "DLSWEEP_RUN_NAME", "DLSWEEP_STOP_AT", "SLURM_RESTART_COUNT", "DLSWEEP_DECISION_WAIT_S",
           "DLSWEEP_DECIDES") + dlsweep_trial.RANK_VARIABLES


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    dlsweep_trial._reset_for_tests()
    yield
    dlsweep_trial._reset_for_tests()


@pytest.fixture
def trial(tmp_path, monkeypatch):
    """A trial directory as dlsweep prepares it: params.json and checkpoints/."""
    d = tmp_path / "trial-3"
    (d / "checkpoints").mkdir(parents=True)
    (d / "params.json").write_text(json.dumps({"lr": 0.05, "batch_size": 512, "opt": "sgd"}))
    monkeypatch.setenv("DLSWEEP_TRIAL_DIR", str(d))
    monkeypatch.setenv("DLSWEEP_TRIAL_ID", "3")
    monkeypatch.setenv("DLSWEEP_ATTEMPT", "0")
    monkeypatch.setenv("DLSWEEP_STUDY", "demo")
    # No orchestrator answers here: should_stop() after a report() waits no longer than this.
    monkeypatch.setenv("DLSWEEP_DECISION_WAIT_S", "0.02")
    monkeypatch.setenv("DLSWEEP_DECIDES", "1")
    return d


def wait_until(pred, timeout_s, what, first_s=0.02, most_s=0.25):
    """The tests' one way to wait: calls pred() until it returns something truthy (returned),
    looking quickly first and then less often (first_s doubling up to most_s), for at most
    timeout_s; then fails naming `what`. pred may raise AssertionError to stop at once."""
    deadline = time.monotonic() + timeout_s
    pause = first_s
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout_s} s: {what}")
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(pause * 2, most_s)


def read_records(d):
    text = (d / "metrics.jsonl").read_text()
    assert text == "" or text.endswith("\n"), "every line must be whole"
    return [json.loads(line) for line in text.splitlines()]
