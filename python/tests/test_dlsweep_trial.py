"""dlsweep_trial in-process: params, records, numbering across requeues, ranks, control."""
import ast
import json
import math
import sys

import pytest

import dlsweep_trial as dt
from conftest import LIB_DIR, read_records


def test_params_outside_dlsweep_are_the_defaults(capsys):
    assert dt.params({"lr": 0.1}) == {"lr": 0.1}
    assert dt.params() == {}
    dt.report(step=1, loss=1.0)  # no trial dir: nothing written, one warning
    dt.report(step=2, loss=0.5)
    assert capsys.readouterr().err.count("DLSWEEP_TRIAL_DIR is not set") == 1


def test_params_file_overrides_defaults(trial):
    assert dt.params({"lr": 0.1, "epochs": 3}) == {"lr": 0.05, "epochs": 3, "batch_size": 512, "opt": "sgd"}
    assert (dt.trial_id(), dt.attempt(), dt.study(), dt.run_name()) == (3, 0, "demo", "demo-3")


def test_params_missing_or_not_an_object_is_a_clear_error(trial):
    (trial / "params.json").unlink()
    with pytest.raises(dt.ProtocolError, match="params.json: missing"):
        dt.params()
    (trial / "params.json").write_text("[1, 2]")
    with pytest.raises(dt.ProtocolError, match="expected a JSON object, got list"):
        dt.params()
    (trial / "params.json").write_text("{broken")
    with pytest.raises(dt.ProtocolError, match="cannot read it as JSON"):
        dt.params()


def test_report_writes_whole_flushed_lines_in_protocol_form(trial):
    dt.report(step=10, epoch=0.5, samples=5120, val_acc=0.75, val_loss=0.9)
    # flushed: readable before anything is closed
    recs = read_records(trial)
    assert len(recs) == 1
    r = recs[0]
    assert set(r) == {"seq", "kind", "step", "epoch", "samples", "wall_s", "metrics"}
    assert (r["seq"], r["kind"], r["step"], r["epoch"], r["samples"]) == (0, "eval", 10, 0.5, 5120)
    assert r["metrics"] == {"val_acc": 0.75, "val_loss": 0.9}
    assert r["wall_s"] >= 0
    dt.final(step=20, epoch=1.0, samples=10240, val_acc=0.8)
    dt.log("hello", step=20)
    dt.checkpointed("/x/last.pt", step=20)
    recs = read_records(trial)
    assert [r["seq"] for r in recs] == [0, 1, 2, 3]
    assert [r["kind"] for r in recs] == ["eval", "final", "log", "checkpoint"]
    assert recs[2]["text"] == "hello" and recs[3]["text"] == "/x/last.pt"


def test_checkpoint_and_log_records_default_to_where_the_trial_last_reported(trial):
    # before: step 0 / epoch 0 on every checkpoint record saved without an explicit position
    dt.checkpointed("/x/first.pt")  # nothing reported yet: 0
    dt.report(step=940, epoch=4.0, samples=240640, val_acc=0.87)
    dt.checkpointed("/x/epoch4.pt")
    dt.log("saved")
    dt.checkpointed("/x/explicit.pt", step=950)  # what is given wins, the rest follows the report
    recs = read_records(trial)
    assert [(r["kind"], r["step"], r["epoch"], r["samples"]) for r in recs] == [
        ("checkpoint", 0, 0.0, 0), ("eval", 940, 4.0, 240640), ("checkpoint", 940, 4.0, 240640),
        ("log", 940, 4.0, 240640), ("checkpoint", 950, 4.0, 240640)]


def test_a_requeued_run_records_its_checkpoint_at_the_position_on_disk(trial):
    (trial / "metrics.jsonl").write_text(json.dumps(
        {"seq": 0, "kind": "eval", "step": 300, "epoch": 3.0, "samples": 1920, "wall_s": 5.0,
         "metrics": {"val_acc": 0.5}}) + "\n")
    dt.checkpointed("/x/requeued.pt")
    r = read_records(trial)[-1]
    assert (r["kind"], r["step"], r["epoch"], r["samples"]) == ("checkpoint", 300, 3.0, 1920)


def test_metric_values_are_numbers_nan_becomes_null(trial):
    class Scalar:  # stands in for numpy scalars and 0-dim tensors
        def __float__(self):
            return 0.25
    dt.report(step=1, a=float("nan"), b=float("inf"), c=True, d=3, e=Scalar(), wall_s=1.5)
    r = read_records(trial)[0]
    assert r["metrics"] == {"a": None, "b": None, "c": 1, "d": 3, "e": 0.25}
    assert r["wall_s"] == 1.5
    with pytest.raises(TypeError, match="metric 'acc' must be a number"):
        dt.report(step=2, acc="high")
    with pytest.raises(TypeError, match="step must be a whole number"):
        dt.report(step="x", acc=1.0)
    with pytest.raises(TypeError, match="step must be a whole number, got inf"):
        dt.report(step=math.inf, acc=1.0)  # was a bare OverflowError naming no argument
    with pytest.raises(TypeError, match="samples must be a whole number, got -inf"):
        dt.report(step=2, samples=-math.inf, acc=1.0)
    with pytest.raises(TypeError, match="wall_s must be a number"):
        dt.report(step=2, wall_s=10**400, acc=1.0)
    with pytest.raises(ValueError, match="epoch must be finite"):
        dt.report(step=2, epoch=math.nan, acc=1.0)
    assert len(read_records(trial)) == 1  # a refused call writes nothing


def test_seq_and_wall_continue_after_a_requeue_and_a_torn_line_is_cut(trial):
    dt.report(step=1, loss=1.0, wall_s=100.0)
    dt.report(step=2, loss=0.5, wall_s=200.0)
    with open(trial / "metrics.jsonl", "a") as f:
        f.write('{"seq": 2, "kind": "eval", "st')  # killed mid-write
    dt._reset_for_tests()  # a new process: the requeued run of the same attempt
    assert dt.resumed()
    dt.report(step=3, loss=0.25)
    recs = read_records(trial)  # also asserts the file ends with a whole line
    assert [r["seq"] for r in recs] == [0, 1, 2]
    assert recs[2]["wall_s"] >= 200.0  # the clock continues from the last record


def test_seq_follows_the_highest_seq_not_the_line_count(trial):
    (trial / "metrics.jsonl").write_text('{"seq": 7, "kind": "eval", "step": 1, "metrics": {}}\nnot json\n')
    dt.report(step=2, loss=1.0)
    assert read_records_raw(trial)[-1]["seq"] == 8


def read_records_raw(d):
    out = []
    for line in (d / "metrics.jsonl").read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


@pytest.mark.parametrize("env", [
    {"RANK": "1"}, {"SLURM_PROCID": "3"}, {"OMPI_COMM_WORLD_RANK": "2"}, {"PMI_RANK": "5"},
    {"PMIX_RANK": "1"}, {"RANK": "1", "SLURM_PROCID": "0"},
])
def test_only_global_rank_0_writes(trial, monkeypatch, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert not dt.is_writer()
    dt.report(step=1, loss=1.0)
    dt.final(step=1, loss=1.0)
    dt.log("x")
    assert not (trial / "metrics.jsonl").exists()
    assert dt.params()["lr"] == 0.05  # every rank reads its params


def test_torchrun_rank_0_under_srun_on_a_second_node_writes(trial, monkeypatch):
    monkeypatch.setenv("RANK", "0")          # torchrun's global rank
    monkeypatch.setenv("SLURM_PROCID", "1")  # the srun task that started torchrun on node 2
    assert dt.rank() == 0
    dt.report(step=1, loss=1.0)
    assert len(read_records(trial)) == 1


def test_initialised_torch_distributed_decides_the_rank(trial, monkeypatch):
    class FakeDist:
        def is_available(self): return True
        def is_initialized(self): return True
        def get_rank(self): return 1
    monkeypatch.setitem(sys.modules, "torch.distributed", FakeDist())
    monkeypatch.setenv("RANK", "0")
    assert dt.rank() == 1 and not dt.is_writer()


def test_should_stop_reads_control_json(trial):
    assert not dt.should_stop() and dt.stop_reason() is None
    (trial / "control.json").write_text('{"action": "stop", "reason": "pruned"}')
    assert dt.should_stop() and dt.stop_reason() == "pruned"
    (trial / "control.json").write_text('{"action": "continue"}')
    assert not dt.should_stop()


def test_stop_at_parses_the_interval_end(monkeypatch):
    assert dt.stop_at() is None
    monkeypatch.setenv("DLSWEEP_STOP_AT", "")
    assert dt.stop_at() is None
    for value, want in [("epoch:4", ("epoch", 4.0)), ("step:1200", ("step", 1200.0)),
                        ("samples:65536", ("samples", 65536.0)), ("epoch:2.5", ("epoch", 2.5))]:
        monkeypatch.setenv("DLSWEEP_STOP_AT", value)
        assert dt.stop_at() == want
    for bad in ["epoch", "hours:3", "epoch:x", "step:-1", "epoch:nan", ":4"]:
        monkeypatch.setenv("DLSWEEP_STOP_AT", bad)
        with pytest.raises(dt.ProtocolError, match="DLSWEEP_STOP_AT.*epoch, step, samples"):
            dt.stop_at()


@pytest.mark.parametrize("axis,value,positions", [
    ("epoch", "2", [(10, 1.0, 640), (20, 2.0, 1280)]),
    ("step", "20", [(10, 1.0, 640), (20, 2.0, 1280)]),
    ("samples", "1280", [(10, 1.0, 640), (21, 2.1, 1344)]),    # past it counts too
    ("epoch", "0.3", [(1, 0.1, 64), (3, 0.1 + 0.1 + 0.1, 192)]),  # 0.30000000000000004 and rounding
])
def test_should_stop_at_the_interval_end(trial, monkeypatch, axis, value, positions):
    monkeypatch.setenv("DLSWEEP_STOP_AT", f"{axis}:{value}")
    assert not dt.should_stop() and dt.stop_reason() is None  # nothing reported yet
    (step, epoch, samples), (step2, epoch2, samples2) = positions
    dt.report(step=step, epoch=epoch, samples=samples, val_acc=0.5)
    assert not dt.should_stop() and dt.stop_reason() is None
    dt.report(step=step2, epoch=epoch2, samples=samples2, val_acc=0.6)
    assert dt.should_stop() and dt.stop_reason() == "interval end"


def test_interval_end_on_every_rank_and_after_final(trial, monkeypatch):
    monkeypatch.setenv("DLSWEEP_STOP_AT", "step:100")
    monkeypatch.setenv("RANK", "1")  # writes nothing, but knows where it is
    dt.report(step=100, epoch=1.0, samples=6400, val_acc=0.5)
    assert not (trial / "metrics.jsonl").exists()
    assert dt.should_stop() and dt.stop_reason() == "interval end"
    dt._reset_for_tests()
    monkeypatch.setenv("RANK", "0")
    dt.final(step=100, epoch=1.0, samples=6400, val_acc=0.5)
    assert dt.should_stop()


def test_a_run_requeued_past_its_interval_end_stops_at_once(trial, monkeypatch):
    # The attempt's records already reach the interval's end (a requeue after a node failure,
    # or after the orchestrator died): should_stop() is true before it reports anything.
    monkeypatch.setenv("DLSWEEP_STOP_AT", "epoch:2")
    dt.report(step=10, epoch=1.0, samples=640, val_acc=0.5)
    dt.report(step=20, epoch=2.0, samples=1280, val_acc=0.6)
    dt._reset_for_tests()  # the program starts again
    assert dt.should_stop() and dt.stop_reason() == "interval end"
    # One whose records stop short of it goes on training.
    (trial / "metrics.jsonl").write_text(
        json.dumps({"seq": 0, "kind": "eval", "step": 10, "epoch": 1.0, "samples": 640, "wall_s": 1.0,
                    "metrics": {"val_acc": 0.5}}) + "\n")
    dt._reset_for_tests()
    assert not dt.should_stop()
    dt.report(step=20, epoch=2.0, samples=1280, val_acc=0.6)
    assert dt.should_stop()


def test_a_stop_dlsweep_asked_for_comes_before_the_interval_end(trial, monkeypatch):
    monkeypatch.setenv("DLSWEEP_STOP_AT", "epoch:1")
    dt.report(step=10, epoch=1.0, samples=640, val_acc=0.5)
    (trial / "control.json").write_text('{"action": "stop", "reason": "pruned"}')
    assert dt.should_stop() and dt.stop_reason() == "pruned"
    (trial / "control.json").unlink()
    assert dt.stop_reason() == "interval end"
    monkeypatch.delenv("DLSWEEP_STOP_AT")  # no interval: positions alone never stop a run
    assert not dt.should_stop() and dt.stop_reason() is None


def test_checkpoint_dir_and_resumed(trial, tmp_path, monkeypatch):
    assert dt.checkpoint_dir() == trial / "checkpoints"
    assert not dt.resumed()
    (dt.checkpoint_dir() / "last.pt").write_bytes(b"x")
    assert dt.resumed()
    (trial / "checkpoints" / "last.pt").unlink()
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    assert dt.resumed()
    monkeypatch.delenv("DLSWEEP_TRIAL_DIR")
    monkeypatch.chdir(tmp_path)
    assert not dt.resumed()
    assert dt.checkpoint_dir() == tmp_path / "checkpoints" and dt.checkpoint_dir().is_dir()


def test_exit_codes_match_common_exit_codes_hpp():
    hpp = (LIB_DIR.parent / "common" / "exit_codes.hpp").read_text()
    for name, value in [("done", dt.EXIT_DONE), ("failure", dt.EXIT_FAILURE), ("bad_input", dt.EXIT_BAD_INPUT),
                        ("diverged", dt.EXIT_DIVERGED), ("stopped", dt.EXIT_RESUMABLE)]:
        assert f"inline constexpr int {name} = {value};" in hpp, name


def test_protocol_names_match_common_protocol_hpp():
    hpp = (LIB_DIR.parent / "common" / "protocol.hpp").read_text()
    for const in (dt.ENV_TRIAL_DIR, dt.ENV_TRIAL_ID, dt.ENV_ATTEMPT, dt.ENV_STUDY, dt.PARAMS_FILE,
                  dt.METRICS_FILE, dt.CONTROL_FILE, dt.CHECKPOINT_DIR):
        assert f'"{const}"' in hpp, const


def test_the_library_imports_only_the_standard_library():
    names = set()
    for module in sorted((LIB_DIR / "dlsweep_trial").glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names.add(node.module.split(".")[0])
    # dlsweep_results: its sibling (load_study() imports it when called), standard library only too
    allowed = set(sys.stdlib_module_names) | {"dlsweep_results"}
    assert names and names <= allowed, names - allowed


def test_final_makes_a_late_time_limit_warning_harmless(trial):
    # Found on the 2-node Slurm test: the warning arrived while a finished torch worker shut
    # down (Python had reset its handler to the default) and the trial failed with exit 140.
    import signal
    before = signal.getsignal(signal.SIGUSR2)
    try:
        dt.on_preempt(None)
        assert (trial / dt.PREEMPT_HANDLER_FILE).exists(), "asked for the warning"
        dt.final(step=3, loss=0.5)
        assert signal.getsignal(signal.SIGUSR2) == signal.SIG_IGN
        assert read_records(trial)[-1]["kind"] == "final"
    finally:
        signal.signal(signal.SIGUSR2, before)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_latest_checkpoint_is_the_newest_finished_save(trial, tmp_path, monkeypatch):
    import os
    ck = trial / "checkpoints"
    assert dt.latest_checkpoint() is None  # a first run: nothing to load
    for name in ("epoch-9.pt", "epoch-10.pt"):
        (ck / name).write_bytes(b"x")
        os.utime(ck / name, ns=(10**18, 10**18))  # the same mtime: numbers decide, read as numbers
    assert dt.latest_checkpoint() == ck / "epoch-10.pt"
    os.utime(ck / "epoch-9.pt", ns=(2 * 10**18, 2 * 10**18))
    assert dt.latest_checkpoint() == ck / "epoch-9.pt"  # newer wins over the name
    for unfinished in ("last.pt.tmp", ".last.pt", "x.partial"):  # a save killed midway
        (ck / unfinished).write_bytes(b"half")
        os.utime(ck / unfinished, ns=(3 * 10**18, 3 * 10**18))
    assert dt.latest_checkpoint() == ck / "epoch-9.pt"
    (ck / "step-500").mkdir()  # a sharded checkpoint: a directory
    os.utime(ck / "step-500", ns=(4 * 10**18, 4 * 10**18))
    assert dt.latest_checkpoint() == ck / "step-500"
    assert dt.latest_checkpoint("*.pt") == ck / "epoch-9.pt"
    assert dt.latest_checkpoint("*.safetensors") is None
    monkeypatch.delenv("DLSWEEP_TRIAL_DIR")  # by hand: start from scratch, like resumed()
    monkeypatch.chdir(trial)
    assert dt.latest_checkpoint() is None


def test_resumed_by_records_alone_has_no_checkpoint_to_load(trial):
    # The README once said `if dt.resumed(): torch.load(ckpt)`: a run killed after its first
    # report but before its first save is resumed() with nothing to load.
    dt.report(step=1, val_acc=0.5)
    dt._reset_for_tests()  # the requeued run of the same attempt
    assert dt.resumed()
    assert dt.latest_checkpoint() is None
    (trial / "checkpoints" / "last.pt.tmp").write_bytes(b"half")  # its save was cut short
    assert dt.latest_checkpoint() is None
    (trial / "checkpoints" / "last.pt").write_bytes(b"x")
    assert dt.latest_checkpoint() == trial / "checkpoints" / "last.pt"


def _rotated(trial, n, walls):
    recs = [{"seq": i, "kind": "eval", "step": i + 1, "epoch": i + 1.0, "samples": 0, "wall_s": w,
             "metrics": {"val_acc": 0.5}} for i, w in enumerate(walls)]
    (trial / f"metrics.attempt-{n}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_wall_continues_on_a_retry_that_resumes_from_a_checkpoint(trial, monkeypatch):
    # Attempt 0 reported epochs 1..3 (3rd at 5.4 s), saved, and failed; dlsweep renamed its
    # metrics.jsonl and started attempt 1, which loads the checkpoint: its epoch 4 must not
    # come at 2.7 s.
    _rotated(trial, 0, [1.8, 3.6, 5.4])
    with open(trial / "metrics.attempt-0.jsonl", "a") as f:
        f.write('{"seq": 3, "kind": "eval", "wall_s": 99')  # torn: no record
    (trial / "checkpoints" / "last.pt").write_bytes(b"x")
    monkeypatch.setenv("DLSWEEP_ATTEMPT", "1")
    dt.report(step=4, epoch=4.0, val_acc=0.6)
    w = read_records(trial)[0]["wall_s"]
    assert 5.4 <= w < 5.4 + 60
    dt.report(step=5, epoch=5.0, val_acc=0.6, wall_s=1.0)  # a wall_s given is taken as it is
    assert read_records(trial)[1]["wall_s"] == 1.0


def test_wall_continues_from_the_latest_attempt_that_recorded(trial, monkeypatch):
    _rotated(trial, 0, [10.0, 20.0])
    _rotated(trial, 1, [4.0, 7.0])  # attempt 1 started over (no checkpoint then): its own clock
    (trial / "metrics.attempt-2.jsonl").write_text("")  # attempt 2 died before any record
    (trial / "checkpoints" / "last.pt").write_bytes(b"x")
    monkeypatch.setenv("DLSWEEP_ATTEMPT", "3")
    # The clock counts from the module's import: start it now, so that what this asserts (7.0,
    # attempt 1's last, not attempt 0's 20.0) does not depend on how long the tests before took.
    import time
    monkeypatch.setattr(dt._state, "start_time", time.time())
    dt.report(step=1, val_acc=0.6)
    assert 7.0 <= read_records(trial)[0]["wall_s"] < 10.0


def test_a_retry_without_a_checkpoint_starts_the_clock_at_zero(trial, monkeypatch):
    _rotated(trial, 0, [100.0, 200.0])
    monkeypatch.setenv("DLSWEEP_ATTEMPT", "1")
    dt.report(step=1, val_acc=0.6)
    assert read_records(trial)[0]["wall_s"] < 100.0  # it starts over: so does its clock


def test_a_checkpoint_this_run_saved_itself_does_not_move_the_clock(trial, tmp_path):
    # What counts is what the run found when it started (the import), not a save of its own
    # made before its first report.
    import os
    import subprocess
    _rotated(trial, 0, [100.0, 200.0])
    script = tmp_path / "t.py"
    script.write_text("import dlsweep_trial as dt\n"
                      "(dt.checkpoint_dir() / 'last.pt').write_bytes(b'x')\n"
                      "dt.report(step=1, val_acc=0.5)\n")
    env = dict(os.environ, DLSWEEP_ATTEMPT="1", PYTHONPATH=str(LIB_DIR))
    subprocess.run([sys.executable, str(script)], check=True, env=env, timeout=120)
    assert read_records(trial)[0]["wall_s"] < 100.0


def _answer_later(trial, seq, delay, stop=False, attempt=0):
    """Plays the orchestrator: after `delay` s, decides on records up to `seq` (a stop goes
    into control.json first, as dlsweep writes it)."""
    import threading
    import time

    def go():
        time.sleep(delay)
        if stop:
            (trial / "control.json").write_text(json.dumps({"action": "stop", "reason": "pruned"}))
        tmp = trial / "decided.json.tmp"
        tmp.write_text(json.dumps({"attempt": attempt, "seq": seq}))
        tmp.replace(trial / "decided.json")

    t = threading.Thread(target=go)
    t.start()
    return t


def test_should_stop_after_report_answers_for_that_report(trial, monkeypatch):
    monkeypatch.setenv("DLSWEEP_DECISION_WAIT_S", "5")
    dt.report(step=1, epoch=1, val_acc=0.4)
    t = _answer_later(trial, 0, 0.2, stop=True)  # the pruner's decision arrives 0.2 s later
    assert dt.should_stop() and dt.stop_reason() == "pruned"  # waited for it: no epoch 2
    t.join()


def test_should_stop_waits_only_until_the_decision_and_not_again(trial, monkeypatch):
    import time
    monkeypatch.setenv("DLSWEEP_DECISION_WAIT_S", "5")
    dt.report(step=1, epoch=1, val_acc=0.4)
    t = _answer_later(trial, 0, 0.05)
    t0 = time.monotonic()
    assert not dt.should_stop()
    assert time.monotonic() - t0 < 2  # the answer, not the bound
    t.join()
    t0 = time.monotonic()
    for _ in range(100):
        assert not dt.should_stop()  # answered: no more waiting until the next report
    assert time.monotonic() - t0 < 0.5
    # A decision for another attempt is no answer for this one.
    dt.report(step=2, epoch=2, val_acc=0.5)
    t = _answer_later(trial, 1, 0.0, attempt=7)
    t.join()
    monkeypatch.setenv("DLSWEEP_DECISION_WAIT_S", "0.1")
    t0 = time.monotonic()
    assert not dt.should_stop()
    assert time.monotonic() - t0 >= 0.09


def test_should_stop_without_an_orchestrator_is_bounded_and_said_once(trial, monkeypatch, capsys):
    import time
    monkeypatch.setenv("DLSWEEP_DECISION_WAIT_S", "1")
    dt.report(step=1, epoch=1, val_acc=0.4)
    t0 = time.monotonic()
    assert not dt.should_stop()
    assert time.monotonic() - t0 >= 0.95  # waited for the whole bound
    dt.report(step=2, epoch=2, val_acc=0.5)
    t0 = time.monotonic()
    assert not dt.should_stop()
    assert time.monotonic() - t0 < 0.5  # unanswered before: only a short wait (0.05 s) now
    err = capsys.readouterr().err
    assert err.count("dlsweep did not answer") == 1


def test_should_stop_never_waits_when_dlsweep_decides_nothing(trial, monkeypatch):
    import time
    monkeypatch.setenv("DLSWEEP_DECISION_WAIT_S", "5")
    monkeypatch.setenv("DLSWEEP_DECIDES", "0")  # no pruner, no target stop, no PBT
    dt.report(step=1, epoch=1, val_acc=0.4)
    t0 = time.monotonic()
    assert not dt.should_stop()
    assert time.monotonic() - t0 < 0.5


def test_params_notes_which_keys_the_program_read(trial):
    p = dt.params({"n_units_l0": 64, "epochs": 3})
    assert p["lr"] == 0.05 and p.get("opt") == "sgd" and p["n_units_l0"] == 64
    rec = json.loads((trial / "params_read.json").read_text())
    assert rec == {"read": ["lr", "opt"], "defaulted": ["n_units_l0"]}  # batch_size: never read
    assert "batch_size" in p  # a presence test is a read
    assert json.loads((trial / "params_read.json").read_text())["read"] == ["batch_size", "lr", "opt"]


def test_params_read_keeps_what_an_earlier_run_of_the_trial_read(trial):
    # A requeued or resumed trial runs its program again; the second run reads only some keys
    # (the rest come from its checkpoint). The record is the union, never the last run's alone.
    dt.params()["lr"]
    assert json.loads((trial / "params_read.json").read_text())["read"] == ["lr"]
    dt._state.reset()  # the next run of the same trial: a fresh process
    dt.params({"warm": 1})["opt"]
    dt.params({"warm": 1}).get("warm")
    rec = json.loads((trial / "params_read.json").read_text())
    assert rec == {"read": ["lr", "opt"], "defaulted": ["warm"]}


def test_params_read_replaces_a_damaged_record(trial):
    (trial / "params_read.json").write_text("{not json")
    dt.params()["opt"]
    assert json.loads((trial / "params_read.json").read_text()) == {"read": ["opt"], "defaulted": []}


def test_params_read_whole_counts_every_key(trial):
    p = dt.params()
    json.dumps(p)  # a program that passes its params on whole reads them all
    assert json.loads((trial / "params_read.json").read_text())["read"] == ["batch_size", "lr", "opt"]
