"""The guide's examples are correct as written: every Python snippet of the user guide's page
docs/python-trials.md ("Your own Python script as a trial") and of python/README.md is run as
the trial program of a real `dlsweep submit` study (local backend), unchanged. Each is marked
in the Markdown source by `<!-- test: snippet NAME -->` on the line before its fence; an
unmarked snippet there fails the test. What a snippet calls "your code" (build, train_one_epoch) is defined by a
prelude of this test, prepended to it: a tiny real torch model, deterministic, that also
stages what the snippet must survive — a preemption (SIGUSR2 at an epoch boundary of the
first attempt), a rerun whose `resumed()` is true with no checkpoint to load (a Slurm
requeue: SLURM_RESTART_COUNT=1 in every run), and a pruned trial (a threshold pruner; the
trial goes on training until dlsweep's stop request arrives, so the prune is certain).
Needs $DLSWEEP_BIN (ctest sets it); the torch snippets need torch."""
import os
import pathlib
import re
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from conftest import LIB_DIR

DLSWEEP = os.environ.get("DLSWEEP_BIN")
ROOT = LIB_DIR.parent
HANG_BOUND_S = 600  # bounds a hang only
MARK = re.compile(r"^<!-- test: snippet ([\w-]+) -->$")

needs_dlsweep = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")


def snippets(lines, where):
    """{name: code} of the marked ```python fences in `lines`; an unmarked one is an error."""
    out = {}
    for i, line in enumerate(lines):
        if line.strip() != "```python":
            continue
        m = MARK.match(lines[i - 1].strip()) if i > 0 else None
        assert m, f"{where}: the Python snippet at line {i + 1} has no `<!-- test: snippet NAME -->` mark"
        end = lines.index("```", i + 1)
        assert m.group(1) not in out, f"{where}: snippet name {m.group(1)} twice"
        out[m.group(1)] = "\n".join(lines[i + 1:end]) + "\n"
    return out


def all_snippets():
    page = (ROOT / "docs" / "python-trials.md").read_text().splitlines()
    assert page[0] == "# Your own Python script as a trial", "docs/python-trials.md: its title moved"
    found = snippets(page, "docs/python-trials.md")
    for name, code in snippets((LIB_DIR / "README.md").read_text().splitlines(), "python/README.md").items():
        assert name not in found, name
        found[name] = code
    return found


# "Your code" for the three-line snippet: epoch e of a run whose accuracy rises with lr.
PRELUDE_PLAIN = textwrap.dedent('''\
    # --- the test's stand-in for your code -----------------------------------------
    def train_one_epoch(p, epoch):
        steps = 10 * epoch
        acc = 1 - 0.5 / (1 + p["lr"] * epoch)
        return steps, steps * p["batch_size"], acc, 1 - acc
    # --- the snippet, as the guide has it ----------------------------------------------
''')

# "Your code" for the snippets with a checkpoint: a real torch model fitting y = 2x, and the
# events of its `case` param: "preempted" sends itself SIGUSR2 (as Slurm's --signal=B:USR2
# would) at the start of epoch 2 of its first attempt; "pruned" reports a low accuracy and
# trains on until dlsweep asks it to stop.
PRELUDE_TORCH = textwrap.dedent('''\
    # --- the test's stand-in for your code -----------------------------------------
    import os as _os, signal as _signal, time as _time
    import torch as _torch
    import dlsweep_trial as _dt
    _P = _dt.params()
    _X = _torch.linspace(-1, 1, 64).reshape(-1, 1)
    _Y = 2 * _X
    def build(p):
        _torch.manual_seed(0)
        model = _torch.nn.Linear(1, 1)
        return model, _torch.optim.SGD(model.parameters(), lr=p["lr"], momentum=0.9)
    def train_one_epoch(model, opt, epoch):
        if _P["case"] == "preempted" and _dt.attempt() == 0 and epoch == 2:
            _os.kill(_os.getpid(), _signal.SIGUSR2)  # on_preempt's save runs here, then exit 75
        if _P["case"] == "pruned" and epoch >= 1:  # the first report was below the threshold
            bound = _time.monotonic() + 300
            while not (_dt.trial_dir() / "control.json").exists():
                assert _time.monotonic() < bound, "dlsweep never asked the pruned trial to stop"
                _time.sleep(0.05)
        for _ in range(8):
            opt.zero_grad()
            loss = _torch.nn.functional.mse_loss(model(_X), _Y)
            loss.backward()
            opt.step()
        with _torch.no_grad():
            loss = _torch.nn.functional.mse_loss(model(_X), _Y).item()
        acc = 0.1 if _P["case"] == "pruned" else 0.6 + 0.4 / (1 + loss)
        return 8 * (epoch + 1), 8 * (epoch + 1) * len(_X), acc
    # --- the snippet, as the guide has it ----------------------------------------------
''')

PRELUDES = {"readme-three-lines": PRELUDE_PLAIN, "readme-resume": PRELUDE_TORCH, "python-readme": PRELUDE_TORCH}


def test_every_snippet_is_marked_and_has_a_harness():
    found = all_snippets()
    assert set(found) == set(PRELUDES), "a snippet without a harness here, or a harness without its snippet"
    for name, code in found.items():
        compile(code, name, "exec")  # at least valid Python


def study_yaml(name, space, fixed, extra=""):
    return textwrap.dedent(f'''\
        name: {name}
        backend: {{kind: local, max_concurrent: 3}}
        trial:
          command: [{sys.executable}, "{{study_dir}}/trial.py"]
          # Every run looks like a requeued Slurm job (resumed() is true) whether or not an
          # earlier run saved: a snippet must load only a checkpoint that exists.
          env: {{PYTHONPATH: "{LIB_DIR}", OMP_NUM_THREADS: "1", SLURM_RESTART_COUNT: "1"}}
          max_retries: 1
        objective: {{metric: val_acc, mode: max}}
        search: {{algorithm: grid}}
        space: {space}
        fixed: {fixed}
        runs_dir: runs
        {extra}
    ''')


def submit(tmp_path, name, space, fixed, extra=""):
    code = all_snippets()[name]
    (tmp_path / "trial.py").write_text(PRELUDES[name] + code)
    (tmp_path / "study.yaml").write_text(study_yaml(f"snippet-{name}", space, fixed, extra))
    db = tmp_path / "sweep.db"
    r = subprocess.run([DLSWEEP, "--db", str(db), "submit", str(tmp_path / "study.yaml")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=HANG_BOUND_S, stdin=subprocess.DEVNULL)
    return r, sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def trials_by_case(con):
    rows = con.execute("SELECT t.id, t.state, t.attempt, t.trial_dir, json_extract(tp.params, '$.case') "
                       "FROM trials t JOIN trial_params tp ON tp.trial_id = t.id ORDER BY t.number").fetchall()
    return {case: (tid, state, attempt, d) for tid, state, attempt, d, case in rows}


def curve(con, tid):
    """(attempt, epoch, step, samples, wall_s, val_acc) of each eval, in order."""
    return con.execute("SELECT attempt, epoch, step, samples, wall_s, value FROM metrics WHERE trial_id = ? AND "
                       "name = 'val_acc' AND kind = 'eval' ORDER BY attempt, seq", (tid,)).fetchall()


def why(r, trial_dir=None):
    out = r.stdout + r.stderr
    if trial_dir:
        for f in ("stderr.log", "stdout.log"):
            p = pathlib.Path(trial_dir) / f
            if p.exists():
                out += f"\n--- {p}:\n" + p.read_text()[-3000:]
    return out


@needs_dlsweep
def test_three_line_snippet_runs_as_written(tmp_path):
    r, con = submit(tmp_path, "readme-three-lines", "{lr: [0.1, 0.4]}", "{batch_size: 32, epochs: 3}")
    assert r.returncode == 0, why(r)
    rows = con.execute("SELECT id, state, json_extract(tp.params, '$.lr') FROM trials t "
                       "JOIN trial_params tp ON tp.trial_id = t.id").fetchall()
    assert len(rows) == 2
    for tid, state, lr in rows:
        assert state == "COMPLETE"
        c = curve(con, tid)
        assert [(e, s, n) for _, e, s, n, _, _ in c] == [(e, 10 * e, 320 * e) for e in (1, 2, 3)]
        assert [v for *_, v in c] == pytest.approx([1 - 0.5 / (1 + lr * e) for e in (1, 2, 3)])


@needs_dlsweep
@pytest.mark.parametrize("name", ["readme-resume", "python-readme"])
def test_checkpoint_snippet_survives_preemption_and_a_rerun_with_nothing_saved(tmp_path, name):
    pytest.importorskip("torch")
    r, con = submit(tmp_path, name, "{case: [plain, preempted]}", "{lr: 0.05, epochs: 4}")
    assert r.returncode == 0, why(r)
    t = trials_by_case(con)
    plain, pre = t["plain"], t["preempted"]
    assert plain[1] == "COMPLETE" and plain[2] == 0, why(r, plain[3])  # resumed() true, nothing to load: no crash
    assert pre[1] == "COMPLETE" and pre[2] == 1, why(r, pre[3])  # exit 75 -> retried from its save
    c_plain, c_pre = curve(con, plain[0]), curve(con, pre[0])
    assert [(a, e) for a, e, *_ in c_pre] == [(0, 1.0), (0, 2.0), (1, 3.0), (1, 4.0)]
    # the resumed run continues the model the preempted one saved: the same curve
    assert [(e, s, n) for _, e, s, n, _, _ in c_pre] == [(e, s, n) for _, e, s, n, _, _ in c_plain]
    assert [v for *_, v in c_pre] == pytest.approx([v for *_, v in c_plain], rel=1e-6)
    # and its clock goes on: attempt 1's first report comes after attempt 0's last record
    last0 = con.execute("SELECT max(wall_s) FROM records WHERE trial_id = ? AND attempt = 0", (pre[0],)).fetchone()[0]
    walls = [w for *_, w, _ in c_pre]
    assert walls == sorted(walls) and walls[2] >= last0, walls
    kinds = [k for (k,) in con.execute("SELECT kind FROM records WHERE trial_id = ? AND attempt = 0 ORDER BY seq",
                                       (pre[0],))]
    assert kinds == ["eval", "eval", "log"]  # epochs 1, 2, then the save on SIGUSR2


@needs_dlsweep
def test_pruned_snippet_trial_ends_pruned(tmp_path):
    # The snippet's `if dt.should_stop(): break` ends the script with exit 0: a trial asked to
    # stop ends in the state of the ask (PRUNED) whatever its exit status.
    pytest.importorskip("torch")
    r, con = submit(tmp_path, "readme-resume", "{case: [plain, pruned]}", "{lr: 0.05, epochs: 4}",
                    "pruner: {kind: threshold, lower: 0.5}")
    t = trials_by_case(con)
    assert t["plain"][1] == "COMPLETE", why(r, t["plain"][3])
    assert t["pruned"][1] == "PRUNED", why(r, t["pruned"][3])
    c = curve(con, t["pruned"][0])
    assert 1 <= len(c) < 4 and c[0][-1] == pytest.approx(0.1)  # it stopped early
    assert r.returncode == 0, why(r)
