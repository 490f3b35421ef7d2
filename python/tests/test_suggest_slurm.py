"""Define-by-run on a real 2-node Slurm cluster (scripts/slurm-local.sh): a study whose space
lives only in the script, run as Slurm jobs (one of them under srun on 2 ranks): every
suggested value reaches the database and every rank. Needs $DLSWEEP_BIN, root and Debian's
Slurm (skipped otherwise)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

from conftest import LIB_DIR
from local_slurm import slurm_missing

DLSWEEP = os.environ.get("DLSWEEP_BIN")
ROOT = LIB_DIR.parent
pytestmark = pytest.mark.skipif(not DLSWEEP, reason="DLSWEEP_BIN is not set (ctest sets it to the built dlsweep)")

TRIAL = textwrap.dedent('''
    import json, pathlib
    import dlsweep_trial as dt
    n = dt.suggest_int("n_layers", 1, 3)
    units = [dt.suggest_int(f"n_units_l{i}", 4, 128, log=True) for i in range(n)]
    opt = dt.suggest_categorical("optimizer", ["Adam", "SGD"])
    pathlib.Path(f"asked.rank{dt.rank()}.json").write_text(json.dumps(dt.suggested()))
    dt.report(step=1, epoch=1, val_acc=sum(units) / 1000)
    dt.final(step=1, epoch=1, val_acc=sum(units) / 1000)
''')




@pytest.fixture(scope="module")
def cluster():
    why = slurm_missing()
    if why:
        pytest.skip(why)
    d = pathlib.Path(tempfile.mkdtemp(prefix="dlsweep-slurm-suggest-"))  # munged refuses private parents
    script = ROOT / "scripts" / "slurm-local.sh"
    r = subprocess.run([str(script), "start", "--nodes", "2", "--dir", str(d)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    yield d / "slurm.conf"
    subprocess.run([str(script), "stop", "--dir", str(d)], capture_output=True, timeout=120)
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("ranks", [1, 2])
def test_space_only_in_the_script_on_slurm(tmp_path, cluster, ranks):
    # Under /tmp itself, readable by the cluster's job user.
    d = pathlib.Path(tempfile.mkdtemp(prefix="dlsweep-suggest-"))
    os.chmod(d, 0o755)
    try:
        (d / "trial.py").write_text(TRIAL)
        launcher = "\n  launcher: srun\n  ranks: 2" if ranks == 2 else ""
        (d / "study.yaml").write_text(textwrap.dedent(f'''
            name: slurm-dbr
            backend: {{kind: slurm, max_concurrent: 2, slurm_conf: '{cluster}', nodes: {ranks}, time: 5}}
            trial:
              command: [{sys.executable}, "{{study_dir}}/trial.py"]
              env: {{PYTHONPATH: "{LIB_DIR}"}}XX
            objective: {{metric: val_acc, mode: max}}
            search: {{algorithm: tpe, trials: 3, seed: 2}}
            runs_dir: runs
        ''').replace("XX", launcher))
        r = subprocess.run([DLSWEEP, "--db", str(d / "sweep.db"), "submit", str(d / "study.yaml")], cwd=d,
                           capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stdout + r.stderr
        r = subprocess.run([DLSWEEP, "--db", str(d / "sweep.db"), "results", "slurm-dbr", "--format", "json"], cwd=d,
                           capture_output=True, text=True, timeout=120)
        got = json.loads(r.stdout)
        assert len(got) == 3
        for t in got:
            assert t["state"] == "COMPLETE", t
            assert {"n_layers", "optimizer"} <= set(t["params"])
            td = next((d / "runs").glob(f"**/trial-*{t['trial']}"))
            for rank in range(ranks):
                assert json.loads((td / f"asked.rank{rank}.json").read_text()) == t["params"]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_the_optuna_example_on_slurm(cluster):
    pytest.importorskip("torch")
    examples = ROOT / "examples" / "optuna"
    d = pathlib.Path(tempfile.mkdtemp(prefix="dlsweep-optuna-slurm-"))
    os.chmod(d, 0o755)
    try:
        text = (examples / "study.yaml").read_text()
        text = text.replace("{kind: local, max_concurrent: 2, keep_imported: true}",
                            f"{{kind: slurm, max_concurrent: 2, slurm_conf: '{cluster}', time: 5}}")
        text = text.replace("{study_dir}/objective.py", str(examples / "objective.py"))
        text = text.replace('EPOCHS: "10"}', f'EPOCHS: "2", PYTHONPATH: "{LIB_DIR}"}}')
        text = text.replace("trials: 20", "trials: 3").replace("python3", sys.executable)
        assert "kind: slurm" in text and 'EPOCHS: "2"' in text
        (d / "study.yaml").write_text(text + "runs_dir: runs\n")
        r = subprocess.run([DLSWEEP, "--db", str(d / "sweep.db"), "submit", str(d / "study.yaml")], cwd=d,
                           capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stdout + r.stderr
        r = subprocess.run([DLSWEEP, "--db", str(d / "sweep.db"), "results", "optuna-mlp", "--format", "json"],
                           cwd=d, capture_output=True, text=True, timeout=120)
        got = json.loads(r.stdout)
        assert len(got) == 3 and all(t["state"] in ("COMPLETE", "PRUNED") for t in got)
        assert all({"n_layers", "optimizer", "lr"} <= set(t["params"]) for t in got)
    finally:
        shutil.rmtree(d, ignore_errors=True)
