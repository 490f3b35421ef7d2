"""dlsweep_trial in real processes: signals end a run with a checkpoint and exit 75; the
package works copied alone (its directory) and installed with pip."""
import os
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

import dlsweep_trial as dt
from conftest import LIB_DIR, read_records

PY = sys.executable
HANG_BOUND_S = 120  # only bounds a hang; nothing here waits on a clock

# A training loop that announces itself on stdout, then runs until signalled.
TRAIN = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    import dlsweep_trial as dt
    mode = sys.argv[2]
    def save():
        (dt.checkpoint_dir() / f"rank{dt.rank()}.ckpt").write_text("state")
    dt.on_preempt(None if mode == "flag" else save, all_ranks=(mode == "all"))
    step = 0
    print("ready", flush=True)
    while True:
        step += 1
        if step % 1000 == 0:
            dt.report(step=step, loss=1.0 / step)
        if dt.should_stop():
            save()
            print("stopped:", dt.stop_reason(), flush=True)
            sys.exit(dt.EXIT_RESUMABLE)
""")


def run_until_signal(trial, tmp_path, mode, sig, extra_env=None):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    env = dict(os.environ, **(extra_env or {}))
    p = subprocess.Popen([PY, str(script), str(LIB_DIR), mode], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "ready"
        p.send_signal(sig)
        out, _ = p.communicate(timeout=HANG_BOUND_S)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, out


@pytest.mark.parametrize("sig", [signal.SIGUSR2, signal.SIGTERM])
def test_signal_saves_and_exits_resumable(trial, tmp_path, sig):
    rc, _ = run_until_signal(trial, tmp_path, "save", sig)
    assert rc == dt.EXIT_RESUMABLE
    assert (trial / "checkpoints" / "rank0.ckpt").read_text() == "state"
    last = read_records(trial)[-1]
    assert last["kind"] == "log" and f"{signal.Signals(sig).name}: checkpoint saved" in last["text"]
    assert dt.resumed()  # the requeued run finds it


def test_other_ranks_exit_resumable_without_saving(trial, tmp_path):
    rc, _ = run_until_signal(trial, tmp_path, "save", signal.SIGUSR2, {"RANK": "1"})
    assert rc == dt.EXIT_RESUMABLE
    assert not any((trial / "checkpoints").iterdir())
    assert not (trial / "metrics.jsonl").exists()


def test_all_ranks_save_when_asked(trial, tmp_path):
    rc, _ = run_until_signal(trial, tmp_path, "all", signal.SIGUSR2, {"RANK": "1"})
    assert rc == dt.EXIT_RESUMABLE
    assert (trial / "checkpoints" / "rank1.ckpt").exists()


def test_without_save_the_signal_makes_should_stop_true(trial, tmp_path):
    rc, out = run_until_signal(trial, tmp_path, "flag", signal.SIGUSR2)
    assert rc == dt.EXIT_RESUMABLE
    assert "stopped: preempted" in out
    assert (trial / "checkpoints" / "rank0.ckpt").exists()


def test_a_failing_save_exits_1_not_75(trial, tmp_path):
    script = tmp_path / "bad.py"
    script.write_text(textwrap.dedent("""
        import os, signal, sys
        sys.path.insert(0, sys.argv[1])
        import dlsweep_trial as dt
        def save(): raise OSError("disk full")
        dt.on_preempt(save)
        os.kill(os.getpid(), signal.SIGUSR2)
        while True: pass
    """))
    p = subprocess.run([PY, str(script), str(LIB_DIR)], capture_output=True, text=True, timeout=HANG_BOUND_S)
    assert p.returncode == dt.EXIT_FAILURE
    assert "save failed: OSError('disk full')" in p.stderr


def test_usable_as_one_copied_directory(trial, tmp_path):
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copytree(LIB_DIR / "dlsweep_trial", lone / "dlsweep_trial", ignore=shutil.ignore_patterns("__pycache__"))
    (lone / "t.py").write_text("import dlsweep_trial as dt\ndt.report(step=1, acc=dt.params()['lr'])\n")
    # -s -E: no user site, no PYTHONPATH: only the script's own folder provides the package
    subprocess.run([PY, "-s", "-E", str(lone / "t.py")], check=True, timeout=HANG_BOUND_S, env=dict(os.environ))
    assert read_records(trial)[0]["metrics"] == {"acc": 0.05}


def test_pip_installs_it_from_the_repo(tmp_path):
    pytest.importorskip("setuptools")
    src = tmp_path / "src"
    shutil.copytree(LIB_DIR, src, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
    target = tmp_path / "site"
    p = subprocess.run([PY, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
                        "--target", str(target), str(src)], capture_output=True, text=True, timeout=HANG_BOUND_S)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (target / "dlsweep_trial" / "__init__.py").exists()
    out = subprocess.run([PY, "-c", "import dlsweep_trial as d; print(d.__file__, d.EXIT_RESUMABLE)"],
                         cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(target)), capture_output=True,
                         text=True, timeout=HANG_BOUND_S, check=True).stdout
    assert out.startswith(str(target)) and out.split()[-1] == "75"
